"""The notebook file: found, read and written back, cell by cell.

Reading `.ipynb` and jupytext text notebooks into a `Notebook`, writing new
cell sources back without changing another byte, the `# TEST` line's grammar,
where each cell's lines sit in the file, and atomic file writes. What a cell's
code means as Python is `ntdd.cells`'.

May import: ntdd.cells and the shared modules (ntdd._version, ntdd.errors, ntdd.values,
ntdd.parameters, ntdd.config, ntdd.defaults). Never pytest, jinja2 or torch.
"""
