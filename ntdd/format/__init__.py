"""The generated module's format, owned here in both directions.

Its text (header, regions, wrapped test bodies) written and read back, the
test names in it, where a notebook's module lives, and which notebook cell a
line of the module came from.

May import: the shared modules, ntdd.cells, ntdd.notebook. Never pytest, jinja2 or torch.
"""
