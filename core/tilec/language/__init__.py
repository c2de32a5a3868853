"""The kernel language, imported by users as `import tilec.language as tl`.

The functions here are markers: the frontend recognizes them by their `__tilec_builtin__` name
and emits tile IR for them. Calling one from ordinary Python raises `RuntimeError`.

Where tilec differs from Triton (every argument is honoured or rejected with a located error,
never dropped):

- `tl.dot` on f32 inputs takes Triton's `input_precision` ("tf32", the default unless
  `TILEC_F32_DEFAULT` or `allow_tf32=False` says otherwise, "tf32x3", "ieee"), but rounds tf32
  inputs to nearest (`cvt.rna.tf32.f32`, as cuBLAS does) where Triton's mma truncates them.
  `out_dtype` rounds the f32 (i32) result once, after the dot.
- `tl.load`/`tl.store` accept `cache_modifier`, `eviction_policy`, `volatile`, `boundary_check`
  and `padding_option` only at their defaults; `x.to(..., fp_downcast_rounding=)` only "rtne".
- `tl.range` accepts its hints at the values that describe what tilec does (`num_stages=1`,
  `loop_unroll_factor=1`, `flatten`/`warp_specialize`/`disable_licm` False,
  `disallow_acc_multi_buffer` either way) and rejects other values by name.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import attrs

from tilec.ir.types import FloatType, IntegerType, PointerType, Type


@attrs.frozen
class dtype:
    """A kernel element type such as `tl.float32`; `ir_type` is its tile IR type."""

    name: str
    ir_type: Type

    def __repr__(self) -> str:
        return f"tl.{self.name}"


int1 = dtype("int1", IntegerType(1))
int8 = dtype("int8", IntegerType(8))
int16 = dtype("int16", IntegerType(16))
int32 = dtype("int32", IntegerType(32))
int64 = dtype("int64", IntegerType(64))
uint8 = dtype("uint8", IntegerType(8, unsigned=True))
uint16 = dtype("uint16", IntegerType(16, unsigned=True))
uint32 = dtype("uint32", IntegerType(32, unsigned=True))
uint64 = dtype("uint64", IntegerType(64, unsigned=True))
float16 = dtype("float16", FloatType("f16"))
bfloat16 = dtype("bfloat16", FloatType("bf16"))
float32 = dtype("float32", FloatType("f32"))
float64 = dtype("float64", FloatType("f64"))

DTYPES = (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64)
DTYPES += (float16, bfloat16, float32, float64)


def dtype_of(ir_type: Type) -> dtype | None:
    """The `tl` dtype whose IR type is `ir_type` (None for pointers and unknown types)."""
    if isinstance(ir_type, PointerType):
        return None
    return next((d for d in DTYPES if d.ir_type == ir_type), None)


class constexpr:
    """Annotation for a kernel parameter whose value is known at compile time."""

    def __init__(self, value: Any = None):
        self.value = value

    def __repr__(self) -> str:
        return f"constexpr({self.value!r})"


class PropagateNan(enum.IntEnum):
    """How `tl.maximum`, `tl.minimum` and `tl.clamp` treat NaN operands (Triton's values).

    NONE (the default): a NaN operand is ignored, the other operand is the result.
    ALL: a NaN operand makes the result NaN.
    """

    NONE = 0
    ALL = 0xFFFF


def _builtin(name: str) -> Callable[..., Any]:
    def outside_kernel(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"tl.{name} can only be called inside a @tilec.jit kernel, which the tilec "
            "frontend compiles; it has no meaning in ordinary Python"
        )

    outside_kernel.__name__ = name
    outside_kernel.__qualname__ = name
    outside_kernel.__tilec_builtin__ = name  # type: ignore[attr-defined]
    return outside_kernel


BUILTIN_NAMES = [
    "program_id",
    "num_programs",
    "arange",
    "zeros",
    "full",
    "load",
    "store",
    "where",
    "minimum",
    "maximum",
    "exp",
    "exp2",
    "log",
    "log2",
    "sqrt",
    "rsqrt",
    "abs",
    "sin",
    "cos",
    "sigmoid",
    "fma",
    "erf",
    "sum",
    "xor_sum",
    "max",
    "min",
    "dot",
    "trans",
    "reshape",
    "broadcast_to",
    "expand_dims",
    "atomic_add",
    "clamp",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "reduce",
    "associative_scan",
    "atomic_max",
    "atomic_min",
    "atomic_xchg",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_cas",
    "static_range",
    "range",
    "multiple_of",
    "max_contiguous",
    "static_assert",
    "device_print",
    "debug_barrier",
]

program_id = _builtin("program_id")
num_programs = _builtin("num_programs")
arange = _builtin("arange")
zeros = _builtin("zeros")
full = _builtin("full")
load = _builtin("load")
store = _builtin("store")
where = _builtin("where")
minimum = _builtin("minimum")
maximum = _builtin("maximum")
exp = _builtin("exp")
exp2 = _builtin("exp2")
log = _builtin("log")
log2 = _builtin("log2")
sqrt = _builtin("sqrt")
rsqrt = _builtin("rsqrt")
abs = _builtin("abs")
sin = _builtin("sin")
cos = _builtin("cos")
sigmoid = _builtin("sigmoid")
fma = _builtin("fma")
erf = _builtin("erf")
sum = _builtin("sum")
xor_sum = _builtin("xor_sum")
max = _builtin("max")
min = _builtin("min")
dot = _builtin("dot")
trans = _builtin("trans")
reshape = _builtin("reshape")
broadcast_to = _builtin("broadcast_to")
expand_dims = _builtin("expand_dims")
atomic_add = _builtin("atomic_add")
clamp = _builtin("clamp")
argmax = _builtin("argmax")
argmin = _builtin("argmin")
cumsum = _builtin("cumsum")
cumprod = _builtin("cumprod")
reduce = _builtin("reduce")
associative_scan = _builtin("associative_scan")
atomic_max = _builtin("atomic_max")
atomic_min = _builtin("atomic_min")
atomic_xchg = _builtin("atomic_xchg")
atomic_and = _builtin("atomic_and")
atomic_or = _builtin("atomic_or")
atomic_xor = _builtin("atomic_xor")
atomic_cas = _builtin("atomic_cas")
static_range = _builtin("static_range")
range = _builtin("range")
multiple_of = _builtin("multiple_of")
max_contiguous = _builtin("max_contiguous")
static_assert = _builtin("static_assert")
device_print = _builtin("device_print")
debug_barrier = _builtin("debug_barrier")


def cdiv(a: int, b: int) -> int:
    """Ceiling division; works in Python (for grids) and inside kernels."""
    return -(-a // b)


cdiv.__tilec_builtin__ = "cdiv"  # type: ignore[attr-defined]
