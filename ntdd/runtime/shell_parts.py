"""The parts of a kernel's shell that IPython's own code reads from `get_ipython()`.

IPython's traceback formatters (`ultratb.VerboseTB().text(...)`, which
execnb and nbdev call on a caught error) ask the running shell for its
`hooks` (`synchronize_with_editor`) and `compile`; its debugger for
`debugger_cls` and `colors`; `?` and `oinspect` for the `inspector`;
library code for `InteractiveTB` and `get_exception_only()`. Each is made
by IPython's own classes, as `InteractiveShell` makes it, with a kernel's
defaults, when first asked for: most notebooks never import IPython.

Not `config`: IPython's `Magics` take a shell that has one for their
traitlets parent, which must then be a `Configurable`.
"""

from __future__ import annotations

import functools
from typing import Any


class IPythonParts:
    """What IPython's formatting, display and inspection code reads from a kernel's shell."""

    colors: str
    display_page = False  # a kernel's defaults, which IPython's code reads
    xmode = "Context"
    object_info_string_level = 0
    pdb = False
    call_pdb = False
    custom_exceptions: tuple[type[BaseException], ...] = ()

    @functools.cached_property
    def user_ns_hidden(self) -> dict[str, Any]:
        return {}

    @functools.cached_property
    def hooks(self) -> Any:
        """IPython's default hooks (`synchronize_with_editor`, `editor`, …), set by
        `InteractiveShell.init_hooks` itself, so `set_hook` adds to them as in a kernel."""
        from IPython.core.interactiveshell import InteractiveShell

        InteractiveShell.init_hooks(self)  # type: ignore[arg-type]
        return self.__dict__["hooks"]

    def set_hook(self, *args: Any, **kwargs: Any) -> None:
        from IPython.core.interactiveshell import InteractiveShell

        self.hooks  # noqa: B018 - its defaults first, and `strdispatchers`
        InteractiveShell.set_hook(self, *args, **kwargs)  # type: ignore[arg-type]

    @functools.cached_property
    def debugger_cls(self) -> type:
        from IPython.core.debugger import InterruptiblePdb

        return InterruptiblePdb

    @functools.cached_property
    def InteractiveTB(self) -> Any:
        """IPython's traceback formatter for a cell's error, as `init_traceback_handlers`
        makes it."""
        from IPython.core import ultratb

        return ultratb.AutoFormattedTB(mode=self.xmode, theme_name=self.colors, tb_offset=1)

    @functools.cached_property
    def SyntaxTB(self) -> Any:
        from IPython.core import ultratb

        return ultratb.SyntaxTB(theme_name=self.colors)

    @property
    def inspector_class(self) -> type:
        from IPython.core.oinspect import Inspector

        return Inspector

    @functools.cached_property
    def inspector(self) -> Any:
        """IPython's object inspector (`?`, `oinspect`), as the shell makes it."""
        return self.inspector_class(
            theme_name=self.colors, str_detail_level=self.object_info_string_level
        )

    def get_exception_only(self, exc_tuple: Any = None) -> str:
        """The error being handled (or the last one), as its last line shows it."""
        from IPython.core.interactiveshell import InteractiveShell

        return str(InteractiveShell.get_exception_only(self, exc_tuple))  # type: ignore[arg-type]

    def _get_exc_info(self, exc_tuple: Any = None) -> Any:
        from IPython.core.interactiveshell import InteractiveShell

        return InteractiveShell._get_exc_info(self, exc_tuple)  # type: ignore[arg-type]
