"""The `ntdd` command and its subcommands: export, sync, init, faults, ….

Also the `jupyter nbconvert --to ntdd` exporter, which guards its writes as
`ntdd export` does.

May import: the shared modules, ntdd.notebook, ntdd.format, ntdd.pipeline,
ntdd.faults. Never ntdd.plugin: the pytest side does not know the commands,
and the commands run pytest only as a subprocess.
"""
