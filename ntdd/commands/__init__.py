"""The `ntdd` command and its subcommands: export, sync, init, faults, ….

`cli` is the command line (its options, and `main`); `export` (with
`--check`), `sync`, `init`, `list`, `faults` and `mark` each do what one
subcommand asks and print what it did; `console` holds the exit codes and
the one-line error, `summary_file` the Markdown appended to `--report` and
`--summary`. What `init` and `list` know of a repository is
`ntdd.repository`'s; the work of export, `--check` and sync (a notebook and
its module on disk) is `ntdd.modules`', and that of mark `ntdd.marking`'s.
Also the `jupyter nbconvert --to ntdd` exporter, which guards its writes as
`ntdd export` does.

May import: the shared modules, ntdd.notebook, ntdd.format, ntdd.pipeline (the nbconvert
exporter renders as export does), ntdd.modules, ntdd.marking, ntdd.repository, ntdd.faults.
Never ntdd.plugin: the pytest side does not know the commands, and the commands run pytest
only as a subprocess.
"""
