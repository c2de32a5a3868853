"""tilec: a plugin-based, multi-backend tile-level GPU kernel compiler framework."""

__version__ = "0.1.0"
