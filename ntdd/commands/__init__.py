"""The `ntdd` command and its subcommands: export, sync, init, faults, ….

`cli` is the command line (its options, and `main`); `module_commands`
(export, sync) and `project_commands` (faults, list, init) do what each
subcommand asks and print what it did; `console` holds the exit codes and
the one-line error. The work itself is in `export`, `sync`, `drift`,
`survey`, `workflow` and `pick`. Also the `jupyter nbconvert --to ntdd`
exporter, which guards its writes as `ntdd export` does.

May import: the shared modules, ntdd.cells, ntdd.notebook, ntdd.format, ntdd.pipeline,
ntdd.repository, ntdd.faults. Never ntdd.plugin: the pytest side does not know the commands,
and the commands run pytest only as a subprocess.
"""
