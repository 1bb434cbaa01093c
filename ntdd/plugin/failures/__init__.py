"""A failure as the notebook shows it: the report's wrapper, which puts ntdd's record on
each report (`hooks`), the notebook's line a failure points at (`places`), and its
traceback, the notebook's frames only (`tracebacks`)."""
