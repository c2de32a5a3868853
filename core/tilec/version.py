"""tilec's version, in a module of its own so that any part of tilec can read it without
importing the `tilec` package's public API (and the runtime it pulls in)."""

__version__ = "0.1.0"
