"""What the workflow's jobs install, so that a runner has what the notebooks need.

The repository's own dependency files when it has them; else the notebooks'
imports at the versions installed where `ntdd init` runs (`pins`). ntdd
itself comes from where the ntdd running `ntdd init` came from (`origin`),
or from `--ntdd-from`. On a hosted runner the torch family comes from
PyTorch's CPU index, first and alone (`--index-url`, so that no other
package comes from there and no CUDA build from PyPI can win), and what is
installed after it finds it satisfied; the GPU job installs PyPI's builds,
which carry CUDA. `plan_installs` is pure, and says each decision in a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ntdd.repository.dependencies import Declared
from ntdd.repository.origin import Origin
from ntdd.repository.pins import Pins

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@dataclass(frozen=True)
class Installs:
    """The pip (or micromamba) installs of both jobs; nothing is looked up while rendering."""

    ntdd: str = "ntdd[nbval,jupytext,nbconvert]"  # the CPU job's requirement for ntdd
    ntdd_gpu: str = "ntdd[jupytext]"
    torch: tuple[str, ...] = ()  # the torch family, from PyTorch's CPU index on the CPU job
    requirements: str | None = None  # a requirements.txt: `pip install -r`
    package: bool = False  # the repository itself: `pip install -e .`
    packages: tuple[str, ...] = ()  # the notebooks' imports, pinned: none of the files above
    conda: str | None = None  # an environment.yml, built by micromamba
    conda_adds: tuple[str, ...] = ()  # python and pip, where the environment file lacks them
    cache_key: str | None = None  # the file whose hash keys pip's cache; none: no cache


def plan_installs(
    declared: Declared,
    pins: Pins,
    ntdd: Origin,
    extras: Sequence[str],
    python: str,
    here: str,
    workflow: str,
) -> tuple[Installs, list[str]]:
    """The installs, and the notes that say why; *python* is the job's Python, *here*
    the one `ntdd init` runs in, *workflow* the workflow's path in the repository."""
    requirement = ntdd.requirement("ntdd", extras)
    gpu = ntdd.requirement("ntdd", ["jupytext"])
    notes = [ntdd.note]
    if declared.conda:
        adds = tuple(n for n in ("python", "pip") if n not in declared.conda_names)
        adds = tuple(f"python={python}" if n == "python" else n for n in adds)
        notes.append(_conda_note(declared))
        return Installs(requirement, gpu, package=bool(declared.package), conda=declared.conda,
                        conda_adds=adds), notes  # fmt: skip
    if declared.any:
        torch = declared.torch or pins.torch
        items = [declared.requirements] if declared.requirements else []
        items += ["the repository itself (pip install -e .)"] if declared.package else []
        notes.append(f"installs {', '.join(items)} and ntdd")
        installs = Installs(
            requirement,
            gpu,
            torch=torch,
            requirements=declared.requirements,
            package=bool(declared.package),
            cache_key=declared.requirements or declared.package,
        )
        return installs, [*notes, *_torch_note(torch, declared.torch)]
    notes += _pins_notes(pins, python, here)
    installs = Installs(
        requirement,
        gpu,
        torch=pins.torch,
        packages=pins.requirements,
        cache_key=workflow if pins.requirements or pins.torch else None,
    )
    return installs, [*notes, *_torch_note(pins.torch, ())]


def _conda_note(declared: Declared) -> str:
    also = " and the repository itself (pip install -e .)" if declared.package else ""
    beside = (
        f"; {declared.requirements} is not installed beside it (its pip: section may name it)"
        if declared.requirements
        else ""
    )
    return (
        f"builds {declared.conda} with micromamba, then installs ntdd{also} into it "
        f"(conda-forge's torch is its CPU build on a runner without a GPU){beside}"
    )


def _pins_notes(pins: Pins, python: str, here: str) -> list[str]:
    every = (*pins.torch, *pins.requirements)
    if not every:
        return [
            "installs ntdd: no requirements.txt, pyproject.toml or environment.yml, and the "
            "notebooks import nothing beyond the standard library and the repository"
        ]
    notes = [
        "no requirements.txt, pyproject.toml or environment.yml, so the workflow installs "
        f"the notebooks' imports at the versions installed here: {', '.join(every)}"
        + ("" if python == here else f" (this is Python {here}; the job runs Python {python})")
    ]
    notes += list(pins.warnings)
    notes += [
        f"warning: {notebook} imports {module}, which no distribution installed here "
        "provides, so the workflow does not install it (install it and run `ntdd init` "
        "again, or name it in a requirements.txt)"
        for module, notebook in pins.unresolved
    ]
    return notes


def _torch_note(torch: tuple[str, ...], declared: tuple[str, ...]) -> list[str]:
    if not torch:
        return []
    source = "as the requirements name it" if declared else "the notebooks import it"
    return [
        f"installs {' '.join(torch)} ({source}) from PyTorch's CPU index first: PyPI's "
        "Linux wheels carry CUDA, gigabytes a hosted runner has no GPU for; a GPU job "
        "installs PyPI's"
    ]
