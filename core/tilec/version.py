"""The tilec version: part of every compile cache key (kept apart so the frontend can read it
without importing the runtime)."""

__version__ = "0.1.0"
