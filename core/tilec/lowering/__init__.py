"""gir -> LLVM IR with `llvmlite.ir`, parameterised by the backend's `TargetInfo`.

Importing this package imports every lowering module, so that their `@lowers(OpClass)`
registrations (in `context.LOWERINGS`) are in place before `lower_module` runs. Ops that have no
lowering of their own are listed, with the reason, in `NOT_LOWERED`.
"""

from tilec.lowering import (  # noqa: F401  (imported for their registrations)
    atomics,
    control_flow,
    debug,
    dot,
    elementwise,
    float8,
    inline_asm,
    layout_ops,
    math_ops,
    memory,
    reduce,
    scan,
    shared_memory,
)
from tilec.lowering.context import LoweringError
from tilec.lowering.lower import LoweredKernel, lower_module
from tilec.lowering.not_lowered import NOT_LOWERED
from tilec.lowering.target import TargetInfo

__all__ = ["NOT_LOWERED", "LoweredKernel", "LoweringError", "TargetInfo", "lower_module"]
