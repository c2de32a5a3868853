"""The runtime: `@jit` kernels (`jit`), launching (`launcher`), specialization, the compile cache
and `tilec.compile` (`compiler`; not imported here: it needs `tilec.__version__`)."""

from tilec.runtime.jit import JITFunction, jit

__all__ = ["JITFunction", "jit"]
