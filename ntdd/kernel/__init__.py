"""The test-driven loop inside Jupyter: `%load_ext ntdd`.

With the extension loaded, running a `# TEST` cell runs it as the pytest test
that `ntdd export` would write for it, against the kernel's live namespace;
`%ntdd` runs the saved notebook under `pytest --ntdd` in a new process, and
`%ntdd --live` runs every test cell run so far again, as one pytest session.

- `extension` is the IPython side: the input transformer, the magics, what
  a cell shows and when it errors. It is the only module here that imports
  IPython.
- `cells` renders one cell through ntdd's own pipeline (`plan`, `render`)
  and defines its test in the kernel; `regions` holds the test regions run
  so far as one virtual module, and is the kernel's `__ntdd__`, what a
  rendered test region calls.
- `run` runs the tests with `pytest.main` in the kernel's process.
- `saved` finds the notebook's file and runs it under `pytest --ntdd` in a
  child process, as CI does.

Nothing here imports torch, and nothing writes the notebook file.

May import: the shared modules, ntdd.cells, ntdd.notebook, ntdd.format, ntdd.pipeline,
ntdd.runtime, pytest, IPython. Never ntdd.plugin or ntdd.commands.
"""
