"""The notebook file: found, read and written back, cell by cell.

Reading `.ipynb` and jupytext text notebooks into a `Notebook`, writing new
cell sources back without changing another byte, the `# TEST` line's grammar,
a cell's code as Python (IPython syntax, magics), and atomic file writes.

May import: the shared modules (ntdd._version, ntdd.errors, ntdd.values,
ntdd.parameters, ntdd.config, ntdd.defaults). Never pytest, jinja2 or torch.
"""
