"""TMA tensor maps: the 128-byte `CUtensorMap` of a host-side `TensorDescriptor` (sm_90+).

A kernel that reads a host descriptor through TMA (`cp.async.bulk.tensor`, docs/tma.md) takes
the descriptor's tensor map as a 128-byte grid-constant parameter. At launch the map is encoded
by the driver's `cuTensorMapEncodeTiled` from the descriptor's base address, shape, strides, the
box the kernel copies (its block shape, the innermost dimension cut to the swizzle's width) and
the swizzle of the shared buffer the kernel reads:

- dimensions, strides and box innermost first (cuda.h's order, the reverse of Triton's);
- `globalStrides` the rank - 1 outer strides in bytes (the innermost is the element);
- element strides 1, no interleave, L2 promotion 128B and the out-of-bounds fill of the
  descriptor's padding (zero, or NaN for `padding="nan"`), as Triton's launcher encodes them.

TMA's rules (16-byte aligned base and outer strides, a contiguous innermost dimension, box sizes
of at most 256, an innermost box of a multiple of 16 bytes and at most the swizzle's width) are
checked here first, each broken one a `TensorDescriptorError` naming it: Triton's
TensorDescriptor checks the alignments itself, so a descriptor that passes them always encodes.
`TensorMapCache` keeps each encoding by its `TensorMapRequest` (address, shape, strides, box,
swizzle, ...), so a launch repeated with the same tensors encodes nothing.
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tilec.errors import TensorDescriptorError

MAP_BYTES = 128
"""sizeof(CUtensorMap); it is 64-byte aligned (`.param .align 64 .b8 [128]` in a kernel)."""
MAP_ALIGN = 64
MAX_RANK = 5
MAX_BOX = 256
MAX_GLOBAL_DIM = 2**32
MAX_STRIDE = 2**40

DATA_TYPES: dict[str, int] = {
    "i8": 0, "u8": 0, "fp8e4nv": 0, "fp8e5": 0, "fp8e4b15": 0,  # UINT8
    "i16": 1, "u16": 1,  # UINT16
    "u32": 2, "i32": 3,  # UINT32, INT32
    "u64": 4, "i64": 5,  # UINT64, INT64
    "fp16": 6, "fp32": 7, "fp64": 8, "bf16": 9,  # FLOAT16, FLOAT32, FLOAT64, BFLOAT16
}  # fmt: skip
"""CUtensorMapDataType (cuda.h) of each element type a descriptor may have, by its signature
spelling. TMA copies bits: the integer and float8 types travel as unsigned ints of their width,
and only the float types may be filled with NaN."""
FLOAT_DATA_TYPES = frozenset({6, 7, 8, 9})

SWIZZLES: dict[int, int] = {0: 0, 32: 1, 64: 2, 128: 3}
"""CUtensorMapSwizzle by the swizzle's width in bytes (NONE, 32B, 64B, 128B)."""
INTERLEAVE_NONE = 0
L2_PROMOTION_128B = 2
"""CU_TENSOR_MAP_L2_PROMOTION_L2_128B, Triton's choice."""
OOB_FILLS = {"zero": 0, "nan": 1}
"""CUtensorMapFloatOOBfill: NONE (zeros), NAN_REQUEST_ZERO_FMA."""


def swizzle_bytes(inner_bytes: int) -> int:
    """The widest swizzle (128, 64 or 32 bytes) an innermost block row of `inner_bytes` fills,
    0 below 32 bytes: what Triton's shared layout of a TMA load picks."""
    for width in (128, 64, 32):
        if inner_bytes >= width:
            return width
    return 0


def box_shape(block_shape: Sequence[int], element_bytes: int, swizzle: int) -> tuple[int, ...]:
    """The box one copy moves (outermost first): the block, its innermost dimension cut to the
    swizzle's width (a swizzled box row holds at most `swizzle` bytes), every dimension to 256;
    a block larger than its box takes several copies."""
    *outer, inner = block_shape
    if swizzle:
        inner = min(inner, swizzle // element_bytes)
    return (*(min(size, MAX_BOX) for size in outer), min(inner, MAX_BOX))


@dataclass(frozen=True)
class TensorMapRequest:
    """The arguments of one `cuTensorMapEncodeTiled` call (innermost first, strides in bytes)."""

    data_type: int
    address: int
    global_dims: tuple[int, ...]
    global_strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int

    @property
    def rank(self) -> int:
        return len(self.global_dims)


def request(element: str, address: int, shape: Sequence[int], strides: Sequence[int],
            block_shape: Sequence[int], padding: str, swizzle: int) -> TensorMapRequest:  # fmt: skip
    """The encoding of a descriptor of `element`s (signature spelling: `fp16`) at `address` with
    `shape` and `strides` (elements, outermost first, as Triton's), copied in boxes of
    `block_shape` into shared memory swizzled `swizzle` bytes wide (0, 32, 64, 128); a rule of
    TMA's it breaks is a TensorDescriptorError naming the rule."""
    data_type = DATA_TYPES.get(element)
    if data_type is None:
        _fail(f"TMA cannot copy {element} elements", f"use one of {', '.join(DATA_TYPES)}")
    rank = len(shape)
    if not (1 <= rank <= MAX_RANK and len(strides) == rank == len(block_shape)):
        _fail(f"TMA copies tensors of rank 1 to {MAX_RANK} (shape, strides and block of one "
              f"rank), got shape {list(shape)}, strides {list(strides)}, block "
              f"{list(block_shape)}")  # fmt: skip
    if swizzle not in SWIZZLES:
        _fail(f"no TMA swizzle of {swizzle} bytes", "use 0, 32, 64 or 128")
    size = _element_bytes(element)
    if address % 16:
        _fail(f"the base address {address:#x} is not 16-byte aligned", "align the tensor's data")
    if strides[-1] != 1:
        _fail(f"the last stride is {strides[-1]}, not 1", "make the last dimension contiguous")
    for dim in shape:
        if not 0 < dim <= MAX_GLOBAL_DIM:
            _fail(f"a TMA dimension has 1 to 2**32 elements, got shape {list(shape)}")
    byte_strides = [stride * size for stride in strides[:-1]]
    for stride in byte_strides:
        if stride % 16 or not 0 < stride < MAX_STRIDE:
            _fail(f"the strides {list(strides)} of {size}-byte elements are not multiples of "
                  "16 bytes below 2**40", "pad the rows to a multiple of 16 bytes")  # fmt: skip
    box = box_shape(block_shape, size, swizzle)
    inner_bytes = box[-1] * size
    if inner_bytes % 16:
        _fail(f"the innermost box dimension is {inner_bytes} bytes, not a multiple of 16",
              "make block_shape[-1] a multiple of 16 bytes")  # fmt: skip
    if padding not in OOB_FILLS:
        _fail(f"padding {padding!r} is neither 'zero' nor 'nan'")
    if padding == "nan" and data_type not in FLOAT_DATA_TYPES:
        _fail(f"TMA fills out-of-bounds {element} elements with zeros, not NaN",
              "use padding='zero' or a floating-point tensor")  # fmt: skip
    return TensorMapRequest(
        data_type=data_type,
        address=address,
        global_dims=tuple(reversed([int(d) for d in shape])),
        global_strides=tuple(reversed(byte_strides)),
        box=tuple(reversed(box)),
        element_strides=(1,) * rank,
        interleave=INTERLEAVE_NONE,
        swizzle=SWIZZLES[swizzle],
        l2_promotion=L2_PROMOTION_128B,
        oob_fill=OOB_FILLS[padding],
    )


def _element_bytes(element: str) -> int:
    from tilec.ir.type_names import BY_SIGNATURE

    return max(BY_SIGNATURE[element].ir_type.width // 8, 1)


def _fail(message: str, fix: str = "") -> None:
    raise TensorDescriptorError(
        f"a TensorDescriptor read through TMA: {message}" + (f"; {fix}" if fix else "")
    )


def new_map() -> tuple[Any, int]:
    """A zeroed 64-byte-aligned 128-byte buffer: (the owner to keep alive, its address)."""
    owner = ctypes.create_string_buffer(MAP_BYTES + MAP_ALIGN)
    base = ctypes.addressof(owner)
    return owner, base + (-base % MAP_ALIGN)


def encode(driver: Any, req: TensorMapRequest) -> tuple[Any, int]:
    """`cuTensorMapEncodeTiled` of `req` through `driver` (a `CudaDriver`, on the ctypes
    `LibCuda` or on cuda-bindings; a failure is its CudaError): (the owner of a copy of the
    map, the copy's 64-byte-aligned address)."""
    from tilec_nvidia.libcuda import LibCuda

    cu = driver.cu
    plain = isinstance(cu, LibCuda) or not hasattr(cu, "cuuint64_t")
    args = _arguments(req) if plain else _bindings_arguments(cu, req)
    made = driver.call("cuTensorMapEncodeTiled", *args)
    owner, address = new_map()
    ctypes.memmove(address, made.getPtr(), MAP_BYTES)
    return owner, address


def _arguments(req: TensorMapRequest) -> tuple:
    return (req.data_type, req.rank, req.address, req.global_dims, req.global_strides, req.box,
            req.element_strides, req.interleave, req.swizzle, req.l2_promotion,
            req.oob_fill)  # fmt: skip


def _bindings_arguments(cu: Any, req: TensorMapRequest) -> tuple:
    """cuda-bindings' form: enum members and lists of `cuuint64_t` / `cuuint32_t`."""
    u64, u32 = cu.cuuint64_t, cu.cuuint32_t
    return (
        cu.CUtensorMapDataType(req.data_type), req.rank, req.address,
        [u64(d) for d in req.global_dims], [u64(s) for s in req.global_strides],
        [u32(b) for b in req.box], [u32(e) for e in req.element_strides],
        cu.CUtensorMapInterleave(req.interleave), cu.CUtensorMapSwizzle(req.swizzle),
        cu.CUtensorMapL2promotion(req.l2_promotion), cu.CUtensorMapFloatOOBfill(req.oob_fill),
    )  # fmt: skip


class TensorMapCache:
    """Encoded maps by request (at most `limit`, the oldest dropped): `get(driver, req)` is the
    address of the map's 128 bytes, valid while the cache holds it."""

    def __init__(self, limit: int = 1024):
        self.limit = limit
        self._maps: OrderedDict[TensorMapRequest, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, driver: Any, req: TensorMapRequest) -> int:
        with self._lock:
            found = self._maps.get(req)
            if found is not None:
                self._maps.move_to_end(req)
                return found[1]
            made = self._maps[req] = encode(driver, req)
            while len(self._maps) > self.limit:
                self._maps.popitem(last=False)
            return made[1]

    def __len__(self) -> int:
        return len(self._maps)

    def clear(self) -> None:
        with self._lock:
            self._maps.clear()
