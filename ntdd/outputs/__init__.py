"""Saved outputs checked against a run's fresh ones, as nbval checks them, without a kernel.

Which cells are checked (`rules`: nbval's markers and tags, its lax and
strict modes), how outputs are made comparable (`cleaning`: nbval's sanitize
files, and normalisers for what makes outputs brittle), and how two cells'
outputs compare (`compare`: nbval's rules, with figures compared by what
they show, `images`). Pure functions of outputs in nbformat's shapes; the
pytest items that use them are `ntdd.plugin.results.output_checks`.

May import: the shared modules, ntdd.notebook. Never pytest.
"""
