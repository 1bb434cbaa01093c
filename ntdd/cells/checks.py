"""Which cells are already checks: every statement an `assert` or a testing call.

Notebooks check their results before anyone marks a test: a cell of
`assert` statements, `np.testing.assert_allclose(...)`, fastcore's
`test_eq(a, b)`. `ntdd mark` proposes the `# TEST` line for such cells, and
for nothing else: a cell that also assigns, prints or calls anything else is
setup that happens to check something, and making it a test would change
what it is.

A check is one of these statements, and only these:

- `assert …`;
- a call of a function of `np.testing`, `numpy.testing`, `torch.testing`,
  `pd.testing` or `pandas.testing` (`np.testing.assert_allclose(a, b)`);
- a call of fastcore's (nbdev's) `test_eq`, `test_eq_type`, `test_ne`,
  `test_close`, `test_is`, `test_fail`, `test_shuffled`, `test_stdout`,
  `test_warns`.
"""

from __future__ import annotations

import ast

TESTING_MODULES = frozenset(
    {"np.testing", "numpy.testing", "torch.testing", "pd.testing", "pandas.testing"}
)
TEST_FUNCTIONS = frozenset(
    {
        "test_eq",
        "test_eq_type",
        "test_ne",
        "test_close",
        "test_is",
        "test_fail",
        "test_shuffled",
        "test_stdout",
        "test_warns",
    }
)


def is_check(tree: ast.Module) -> bool:
    """Whether *tree*, a cell's code, has statements and each of them is a check."""
    return bool(tree.body) and all(_check(statement) for statement in tree.body)


def _check(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Assert):
        return True
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return False
    function = statement.value.func
    if isinstance(function, ast.Name):
        return function.id in TEST_FUNCTIONS
    return isinstance(function, ast.Attribute) and _dotted(function.value) in TESTING_MODULES


def _dotted(node: ast.expr) -> str:
    """`np.testing` for the expression `np.testing`; "" for anything but names and attributes."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value)
        return f"{owner}.{node.attr}" if owner else ""
    return ""
