"""The kernel language, imported by users as `import tilec.language as tl`.

The functions here are markers: the frontend recognizes them by their `__tilec_builtin__` name
and emits tile IR for them. Calling one from ordinary Python raises `RuntimeError`.
docs/triton-names.md lists the names of Triton's `tl` that tilec lacks, and why.

Where tilec differs from Triton (every argument is honoured or rejected with a located error,
never dropped):

- `tl.dot` on f32 inputs takes Triton's `input_precision` ("tf32", the default unless
  `TILEC_F32_DEFAULT` or `allow_tf32=False` says otherwise, "tf32x3", "ieee", "bf16x3",
  "bf16x6"), with Triton's numerics: tf32 inputs are what the tensor cores read of the f32 bits
  (truncated toward zero to 10 mantissa bits, on every backend, the interpreter and the FMA
  fallback included); bf16x3 and bf16x6 are dots of the inputs' bf16 parts.
  The result's dtype is Triton's whatever `out_dtype` says (int8 inputs: the i32 sums; f32
  and bf16: f32; f64: f64); an f16 `out_dtype` of f16 inputs rounds the f32 result once.
- `tl.load`/`tl.store` take Triton's `cache_modifier` and `eviction_policy` values and
  `volatile` and emit them (NVIDIA: PTX cache operators, L1/L2 eviction priorities,
  `ld.volatile`; AMD: the nontemporal and volatile bits), `boundary_check` and `padding_option`
  only with block pointers (as Triton);
  `x.to(..., fp_downcast_rounding=)` only "rtne".
- The float8 dtypes convert as Triton's Hopper conversions do (`tilec.ir.float8`) on every backend
  and arch (Triton refuses `float8e4nv` below sm_89); `tl.dot` of float8 inputs computes in f16
  with f32 accumulation, but on sm_90a, where e4m3/e5m2 inputs multiply on wgmma as Triton's do,
  with Hopper's reduced-precision float8 accumulation (`max_num_imprecise_acc` as Triton has it).
- `tl.range` takes every hint of Triton 3.6: `num_stages`, `loop_unroll_factor`,
  `disable_licm` and `flatten` (GPU backends fuse the nest where Triton does) are honoured,
  `disallow_acc_multi_buffer` holds either way, and `warp_specialize` (a scheduling hint that
  leaves results unchanged) has an effect only on sm_90a, where it gives the loop producer warps
  (`TILEC_NVIDIA_WARP_SPECIALIZE`, on by default; `0` turns it off).
"""

from __future__ import annotations

import abc
import enum
import importlib
from collections.abc import Callable
from typing import Any

import attrs

from tilec.errors import KernelCallError
from tilec.ir.type_names import BY_SIGNATURE
from tilec.ir.types import (
    FloatType,
    IntegerType,
    PointerType,
    Type,
    f8e4m3b15,
    f8e4m3fn,
    f8e4m3fnuz,
    f8e5m2,
    f8e5m2fnuz,
)
from tilec.language.docs import DOCS
from tilec.language.dtype_queries import DtypeQueries


@attrs.frozen(init=False)
class dtype(DtypeQueries):
    """A kernel element type such as `tl.float32`; `ir_type` is its tile IR type. As in Triton,
    `tl.dtype("fp16")` names a type by Triton's spelling (its lists `SINT_TYPES`, `UINT_TYPES`,
    `FP_TYPES`, `STANDARD_FP_TYPES`, `OTHER_TYPES`) and is that type (`== tl.float16`); Triton's
    queries (`fp_mantissa_width`, `is_int8()`, ...) come from `DtypeQueries`."""

    name: str
    ir_type: Type

    def __init__(self, name: str, ir_type: Type | None = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "ir_type", ir_type)
        if ir_type is not None or name == "void":
            return
        known = _BY_TRITON_NAME.get(self.name) or globals().get(self.name)
        if not isinstance(known, dtype) or known.ir_type is None:
            names = self.SINT_TYPES + self.UINT_TYPES + self.FP_TYPES + self.OTHER_TYPES
            raise ValueError(f"tl.dtype({self.name!r}): not a type name; expected one of {names}")
        object.__setattr__(self, "name", known.name)
        object.__setattr__(self, "ir_type", known.ir_type)

    def __repr__(self) -> str:
        return f"tl.{self.name}"

    def __str__(self) -> str:
        """Triton's name of the type, as `str(tl.float32)` gives it there: `fp32`, `int8`."""
        return self.triton_name

    @property
    def triton_name(self) -> str:
        return _TRITON_SPELLING.get(self.name, self.name)

    @property
    def scalar(self) -> dtype:
        return self


void = dtype("void", None)  # type: ignore[arg-type]
"""Triton's type of no value (`tl.void`): what builtins without a result return; in tilec such
calls give None, and `tl.void` is there for code that names it (`dtype.is_void()`)."""
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
float8e4nv = dtype("float8e4nv", f8e4m3fn)
float8e5 = dtype("float8e5", f8e5m2)
float8e4b8 = dtype("float8e4b8", f8e4m3fnuz)
float8e5b16 = dtype("float8e5b16", f8e5m2fnuz)
float8e4b15 = dtype("float8e4b15", f8e4m3b15)

_BY_TRITON_NAME: dict[str, dtype] = {
    "fp16": float16, "bf16": bfloat16, "fp32": float32, "fp64": float64,
    "fp8e4nv": float8e4nv, "fp8e5": float8e5, "fp8e4b8": float8e4b8, "fp8e5b16": float8e5b16,
    "fp8e4b15": float8e4b15,
}  # fmt: skip
"""Triton's spellings of the float types (`tl.dtype("fp16")`); the others are tilec's names."""
_TRITON_SPELLING = {t.name: name for name, t in _BY_TRITON_NAME.items()}
DTYPES += (float8e4nv, float8e5, float8e4b8, float8e5b16, float8e4b15)
"""The 8-bit floats (`tilec.ir.float8`): loaded, stored and converted with `x.to(...)`; as in
Triton, arithmetic needs them converted to a wider float first (`tl.dot` does that itself)."""


@attrs.frozen(init=False, repr=False)
class pointer_type(dtype):
    """`tl.pointer_type(tl.float16)`: the dtype of a pointer to `element_ty` elements, for
    pointer casts (`ptr.to(tl.pointer_type(tl.int8))`) and `ptr.dtype.element_ty`."""

    element_ty: dtype

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        if not isinstance(element_ty, dtype) or isinstance(element_ty, pointer_type):
            raise TypeError(f"tl.pointer_type needs a scalar tl dtype, got {element_ty!r}")
        if address_space != 1 or const:
            raise ValueError(
                "tl.pointer_type supports global pointers only (address_space=1, const=False)"
            )
        name = f"pointer<{element_ty.name}>"
        self.__attrs_init__(name, PointerType(element_ty.ir_type), element_ty)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"tl.pointer_type({self.element_ty!r})"

    def __str__(self) -> str:
        return f"pointer<{self.element_ty}>"


@attrs.frozen(init=False, repr=False)
class block_type(dtype):
    """`x.type` of a tensor `x`: its element type (`scalar`, `element_ty`) and `shape`; the
    dtype queries (`is_floating()`, `primitive_bitwidth`) answer for the element, as Triton's."""

    element_ty: dtype
    shape: tuple[int, ...]

    def __init__(self, element_ty: dtype, shape: Any):
        if not isinstance(element_ty, dtype) or isinstance(element_ty, block_type):
            raise TypeError(f"tl.block_type needs a scalar tl dtype, got {element_ty!r}")
        dims = tuple(int(d) for d in shape)
        self.__attrs_init__(element_ty.name, element_ty.ir_type, element_ty, dims)  # type: ignore[attr-defined]

    @property
    def scalar(self) -> dtype:
        return self.element_ty

    @property
    def numel(self) -> int:
        count = 1
        for d in self.shape:
            count *= d
        return count

    def is_block(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"tl.block_type({self.element_ty!r}, {list(self.shape)})"

    def __str__(self) -> str:
        return f"<{tuple(self.shape)}, {self.element_ty}>"


pointer_type.__tilec_builtin__ = "pointer_type"  # type: ignore[attr-defined]
pi32_t = pointer_type(int32)


def dtype_of(ir_type: Type) -> dtype | None:
    """The `tl` dtype whose IR type is `ir_type` (a `pointer_type` for pointers; None for
    unknown types)."""
    if isinstance(ir_type, PointerType):
        element = dtype_of(ir_type.pointee)
        return pointer_type(element) if element is not None else None
    return next((d for d in DTYPES if d.ir_type == ir_type), None)


def str_to_ty(name: str, c: Any = None) -> dtype:
    """Triton's `tl.str_to_ty`: the dtype of a signature spelling, `"fp32"`, `"i8"`, `"u1"`-style
    names as in `tilec.compile`'s signatures, or `"*fp16"` for a pointer. `c` (Triton's IR
    context) is not used."""
    if name.startswith("*"):
        element = name[1:]
        if element.startswith("k"):
            raise ValueError(f"tl.str_to_ty({name!r}): tilec has no const pointer types")
        return pointer_type(str_to_ty(element))
    scalar = BY_SIGNATURE.get(name)
    found = dtype_of(scalar.ir_type) if scalar is not None else None
    if found is None:
        raise ValueError(
            f"tl.str_to_ty({name!r}): not a signature type; expected one of {sorted(BY_SIGNATURE)}"
        )
    return found


TRITON_MAX_TENSOR_NUMEL = 1 << 20
"""The most elements a block may have (Triton's limit, which tilec enforces as well)."""


class tensor(abc.ABC):  # noqa: B024 - a marker: the frontend registers its tensor values
    """What `isinstance(x, tl.tensor)` tests inside a kernel: every runtime value is one."""


class tensor_descriptor(abc.ABC):  # noqa: B024 - a marker: the frontend's descriptors derive
    """What `isinstance(d, tl.tensor_descriptor)` tests inside a kernel: a descriptor made by
    `tl.make_tensor_descriptor` or a parameter given a host-side `tilec.TensorDescriptor`."""


class constexpr:
    """Annotation for a kernel parameter whose value is known at compile time."""

    def __init__(self, value: Any = None):
        self.value = value

    def __repr__(self) -> str:
        return f"constexpr({self.value!r})"


class constexpr_type:
    """Triton's frontend type of a compile-time value (`constexpr_type[4]`): equal when the
    values are."""

    def __init__(self, value: Any):
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value}]"

    def mangle(self) -> str:
        return repr(self)


class const:
    """Triton's annotation of a pointer parameter to constant data (`X: tl.const`): the kernel
    only reads through it; a store or atomic through it is refused, as in Triton."""


class tuple(abc.ABC):  # noqa: B024 - a marker: isinstance holds for Python tuples
    """Triton's tuple: `tl.tuple([a, b])` in a kernel is the tuple `(a, b)`, and
    `isinstance(t, tl.tuple)` holds for every tuple value."""

    def __new__(cls, args: Any = (), type: Any = None) -> Any:
        return _builtin_tuple(args)


_builtin_tuple = __builtins__["tuple"] if isinstance(__builtins__, dict) else __builtins__.tuple
tuple.register(_builtin_tuple)


class slice:
    """Triton's slice value: `tl.slice(start, stop, step)` indexes tuples (`t[tl.slice(1, 3,
    None)]` is `t[1:3]`) and, with all three None, tensors (`x[tl.slice(None, None, None)]`)."""

    def __init__(self, start: Any, stop: Any, step: Any):
        self.start, self.stop, self.step = start, stop, step

    def __repr__(self) -> str:
        return f"tl.slice({self.start!r}, {self.stop!r}, {self.step!r})"


class condition:
    """`while tl.condition(c, disable_licm=False):`, Triton's while-loop condition with its hint:
    `disable_licm=True` keeps tilec's loop-invariant code motion out of that loop."""

    def __init__(self, arg1: Any, disable_licm: Any = False):
        self.condition = arg1
        self.disable_licm = disable_licm


slice.__tilec_builtin__ = "slice"  # type: ignore[attr-defined]
tuple.__tilec_builtin__ = "tuple"  # type: ignore[attr-defined]
condition.__tilec_builtin__ = "condition"  # type: ignore[attr-defined]


class PropagateNan(enum.IntEnum):
    """How `tl.maximum`, `tl.minimum` and `tl.clamp` treat NaN operands (Triton's values).

    NONE (the default): a NaN operand is ignored, the other operand is the result.
    ALL: a NaN operand makes the result NaN.
    """

    NONE = 0
    ALL = 0xFFFF


def _builtin(name: str) -> Callable[..., Any]:
    def outside_kernel(*args: Any, **kwargs: Any) -> Any:
        raise KernelCallError(
            f"tl.{name} can only be called inside a @tilec.jit kernel, which the tilec "
            "frontend compiles; it has no meaning in ordinary Python"
        )

    outside_kernel.__name__ = name
    outside_kernel.__qualname__ = name
    outside_kernel.__tilec_builtin__ = name  # type: ignore[attr-defined]
    outside_kernel.__doc__ = DOCS.get(name)
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
# Added for Triton compatibility (see docs/triton-names.md); each composes existing ops.
BUILTIN_NAMES += [
    "cast",
    "floor",
    "ceil",
    "tanh",
    "flip",
    "cat",
    "broadcast",
    "permute",
    "join",
    "split",
    "interleave",
    "ravel",
    "view",
    "zeros_like",
    "static_print",
    "device_assert",
    "umulhi",
    "fdiv",
    "div_rn",
    "sqrt_rn",
    "add",
    "sub",
    "mul",
    "softmax",
    "swizzle2d",
    "reduce_or",
    "assume",
    "max_constancy",
    "gather",
    "sort",
    "topk",
    "histogram",
    "philox",
    "philox_impl",
    "randint",
    "randint4x",
    "rand",
    "rand4x",
    "randn",
    "randn4x",
    "uint_to_uniform_float",
    "pair_uniform_to_normal",
    "pointer_type",
    "bitonic_merge",
    "make_tensor_descriptor",
    "load_tensor_descriptor",
    "store_tensor_descriptor",
    "make_block_ptr",
    "advance",
    "dot_scaled",
    "inline_asm_elementwise",
    "map_elementwise",
    "slice",
    "tuple",
    "condition",
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
bitonic_merge = _builtin("bitonic_merge")
cast = _builtin("cast")
floor = _builtin("floor")
ceil = _builtin("ceil")
tanh = _builtin("tanh")
flip = _builtin("flip")
cat = _builtin("cat")
broadcast = _builtin("broadcast")
permute = _builtin("permute")
join = _builtin("join")
split = _builtin("split")
interleave = _builtin("interleave")
ravel = _builtin("ravel")
view = _builtin("view")
zeros_like = _builtin("zeros_like")
static_print = _builtin("static_print")
device_assert = _builtin("device_assert")
umulhi = _builtin("umulhi")
fdiv = _builtin("fdiv")
div_rn = _builtin("div_rn")
sqrt_rn = _builtin("sqrt_rn")
add = _builtin("add")
sub = _builtin("sub")
mul = _builtin("mul")
softmax = _builtin("softmax")
swizzle2d = _builtin("swizzle2d")
reduce_or = _builtin("reduce_or")
assume = _builtin("assume")
max_constancy = _builtin("max_constancy")
gather = _builtin("gather")
sort = _builtin("sort")
topk = _builtin("topk")
histogram = _builtin("histogram")
philox = _builtin("philox")
philox_impl = _builtin("philox_impl")
randint = _builtin("randint")
randint4x = _builtin("randint4x")
rand = _builtin("rand")
rand4x = _builtin("rand4x")
randn = _builtin("randn")
randn4x = _builtin("randn4x")
uint_to_uniform_float = _builtin("uint_to_uniform_float")
pair_uniform_to_normal = _builtin("pair_uniform_to_normal")
make_tensor_descriptor = _builtin("make_tensor_descriptor")
load_tensor_descriptor = _builtin("load_tensor_descriptor")
store_tensor_descriptor = _builtin("store_tensor_descriptor")
make_block_ptr = _builtin("make_block_ptr")
advance = _builtin("advance")
dot_scaled = _builtin("dot_scaled")
inline_asm_elementwise = _builtin("inline_asm_elementwise")
map_elementwise = _builtin("map_elementwise")


def cdiv(a: int, b: int) -> int:
    """Ceiling division; works in Python (for grids) and inside kernels."""
    return -(-a // b)


cdiv.__tilec_builtin__ = "cdiv"  # type: ignore[attr-defined]


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= `n` (1 for n <= 1), as `triton.next_power_of_2`."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


# in a kernel, of constexprs, evaluated at compile time (Triton calls it there as Python)
next_power_of_2.__tilec_constexpr_function__ = True  # type: ignore[attr-defined]


SUBMODULES = ("extra", "math", "random", "target_info")
"""`tl.math`, `tl.random`, `tl.extra` (`tl.extra.libdevice`) and `tl.target_info`: imported on
first use, since they are made of the names above."""


def __getattr__(name: str) -> Any:
    if name in SUBMODULES:
        return importlib.import_module(f"tilec.language.{name}")
    raise AttributeError(f"module 'tilec.language' has no attribute {name!r}")
