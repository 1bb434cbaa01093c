"""`ntdd mark`'s work: a `# TEST` line for each cell that is already a check.

A repository adopts ntdd in one command: the cells whose every statement is
a check (`ntdd.cells.checks`) get `# TEST` as their first line, where the
grammar reads it (below any `#|` directives). Nothing else changes: no
cell's code, no other byte of the file (`ntdd.notebook.write`), so the cell
keeps what it does and the state it sees, and becomes a test.

- `cells`: which cells take the line, which are left alone and why (a cell
  magic must stay a cell's first line), and the line added to a source.
- `proposal`: what marking one file would do, read back before it is shown,
  and its diff.
- `files`: a notebook in its files: a jupytext pair's get the same lines,
  written atomically, or neither does.

`ntdd mark --smoke` adopts smoke mode the same way, with `@full_run` on the
`# TEST` lines of the tests that need the full run:

- `smoke`: one notebook's full run and smoke run, its marks, the check after.
- `smoke_runs`: a run of the user's own pytest in a child process, its CPU,
  and `ntdd faults --json` likewise; `verdicts`: each test's verdict, read
  from the JUnit XML the run wrote.
- `adoption`: which tests need `@full_run`, and those that no mark cures.
- `full_run`: the mark added to a file's `# TEST` lines, read back first.
- `lost_faults`: the faults smoke mode loses, overall and test by test.

Nothing here parses a command line or prints: `ntdd.commands.mark` calls
these and says what they did.

May import: the shared modules, ntdd.cells, ntdd.notebook, ntdd.pipeline (whether a marked
cell is a test that runs). Never ntdd.commands, which imports this, nor pytest, which
`smoke_runs` runs as a child process.
"""
