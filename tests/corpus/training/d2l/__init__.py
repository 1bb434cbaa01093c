"""d2l 1.0.3, trimmed: see torch.py."""

__version__ = "1.0.3"
