"""A cell's code, read as Python: IPython syntax, the names it binds, what it means wrapped.

The code analysis every stage asks of a cell: its IPython syntax transformed
and compiled as a kernel does (`cell_code`), the names it binds and reads
(`cell_names`), whether it keeps its meaning as a test's body (`wrapping`),
which magics run under test (`magics`), and whether it is already a check
(`checks`). Pure functions of a cell's text; the file it came from is
`ntdd.notebook`'s.

May import: the shared modules (ntdd._version, ntdd.errors, ntdd.values,
ntdd.parameters, ntdd.config, ntdd.defaults). Never pytest, jinja2 or torch.
"""
