"""The runtime: `@jit` kernel objects (launching, specialization and caching come later)."""

from tilec.runtime.jit import JITFunction, jit

__all__ = ["JITFunction", "jit"]
