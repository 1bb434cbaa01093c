"""What `ntdd init` and `ntdd list` know of a repository.

- `git`: what git says of a work tree: its top folder, the files it tracks or
  would add, which of them Git LFS stores, the commit checked out and its
  remote. Every git command ntdd runs is here; outside a work tree, or
  without git, each answers None (or nothing).
- `origin`: where an installed distribution came from (an index, a URL, a
  checkout, a file in the repository), as a requirement a runner can install.
- `requirements`: pip requirements as text: a file's lines, a requirement's
  name, the torch family.
- `dependencies`: the files in which a repository says what to install
  (requirements.txt, pyproject.toml or setup.py, environment.yml).
- `notebook_imports`: what a notebook's code cells import, and what its
  `%pip install` lines name.
- `pins`: those imports as distributions a runner installs, at the versions
  installed where `ntdd init` runs.
- `local_code`: the repository's code the notebooks run (the package the
  workflow installs, the modules they import from beside them): a change to
  it tests every notebook.
- `named_files`: the files a notebook's code names (`"../data/train.csv"`):
  a change to one tests the notebooks that name it.
- `survey`: what `ntdd init` finds, as one `Survey`: where the notebooks are,
  which have tests, whether their modules are committed, what they need
  installed, what they run and read outside their folder.
- `installs`: what the workflow's jobs install: the repository's dependency
  files, else the pins; ntdd from where it came; torch from PyTorch's CPU index.
- `workflow`: `ntdd init`'s decisions (`plan`): the survey and the options
  asked for as `WorkflowOptions`, with notes that say why.
- `workflow_file`: those options rendered as the workflow's YAML, and written.
- `pick`: the notebooks `ntdd list` names for the workflow to test: all of
  them, or those a change can break; and those pytest cannot be handed.
- `nbdev`: what `ntdd init` tells an nbdev project about its
  `#| eval: false` cells.

Nothing here parses a command line or prints: the subcommands in
`ntdd.commands` call these and say what they found.

May import: the shared modules, ntdd.settings (`[tool.ntdd]`), ntdd.cells, ntdd.notebook,
ntdd.format, ntdd.pipeline.
Never ntdd.commands, which imports this, nor pytest.
"""
