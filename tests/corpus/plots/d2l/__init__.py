"""d2l 1.0.3, trimmed to its plotting helpers: see torch.py."""

__version__ = "1.0.3"
