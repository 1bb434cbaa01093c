"""A notebook's generated module as a file beside it: written, checked and synced.

`ntdd export`, `ntdd export --check` and `ntdd sync` work here, on a notebook
and its module on disk. The module's text is `ntdd.format`'s, and rendering
it `ntdd.pipeline`'s; this package decides which module a notebook has and
where it goes, whether it is current, which side changed, and what may be
written over.

- `given`: the notebook and the module each path given names, once each,
  and where modules go (`-o`, else `[tool.ntdd]`'s output, template and
  parameters).
- `existing`: the module already on disk, read as text, and the guards that
  never write over a file ntdd did not write, or over edits not yet synced.
- `export`: a notebook's module written atomically, and only when it would
  change; the folders that mirror the notebooks' made packages.
- `drift`: how a notebook and its module drifted apart since the export,
  cell by cell; what `--check` says of a module.
- `sync`: the side that changed carried to the other, exactly or not at all.

Nothing here parses a command line or prints: the subcommands in
`ntdd.commands`, and the nbconvert exporter, call these and say what they did.

May import: the shared modules, ntdd.settings (`[tool.ntdd]`), ntdd.notebook, ntdd.format,
ntdd.pipeline. Never ntdd.commands, which imports this, nor pytest.
"""
