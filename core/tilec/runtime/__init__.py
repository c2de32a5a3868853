"""The runtime: `@jit` kernels (`jit`), launching (`launcher`), specialization, the compile cache
and `tilec.compile` (`compiler`). The kernel's source, parameters and cache key are the frontend's
(`tilec.frontend.kernel`); the runtime adds launching."""

from tilec.runtime import driver  # `tilec.runtime.driver.active`, as Triton's
from tilec.runtime.jit import JITFunction, jit

__all__ = ["JITFunction", "driver", "jit"]
