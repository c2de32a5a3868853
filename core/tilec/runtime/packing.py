"""Kernel arguments as the `void*[]` (`kernelParams`) a GPU driver reads at launch.

Shared by the GPU backends (CUDA's `cuLaunchKernel` and HIP's `hipModuleLaunchKernel` take the same
form): every parameter gets its own 8-byte slot, and the launch passes the address of an array of
pointers to the slots.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from tilec.errors import LaunchArgumentError
from tilec.ir.type_names import SCALARS, STRUCT_CODES
from tilec.ir.types import Float8Type

SCALAR_FORMATS = STRUCT_CODES
"""`struct` codes of scalar parameters (i1 travels as one byte; bf16 as its 16 bits)."""

SLOT = 8
"""Every parameter gets its own 8-byte slot; the driver copies from each the size it expects."""


def float_to_bf16_bits(value: float) -> int:
    """The bfloat16 bit pattern nearest to `value` (round to nearest even), as an int."""
    (bits,) = struct.unpack("<I", struct.pack("<f", value))
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
        return (bits >> 16) | 0x40  # keep NaN a (quiet) NaN
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _float8_encoder(ir_type: Float8Type) -> Any:
    """The conversion of a float to `ir_type`'s bits, its format looked up at the first call."""

    def encode(value: float) -> int:
        # deferred: the float8 formats (two attrs classes, 1-2 ms) wait for a float8 scalar,
        # which a launch from the disk cache rarely has
        from tilec.ir.float8 import FORMATS

        return FORMATS[ir_type].encode(value)

    return encode


SCALAR_CONVERSIONS = {"bf16": float_to_bf16_bits} | {
    s.signature: _float8_encoder(s.ir_type) for s in SCALARS if isinstance(s.ir_type, Float8Type)
}
"""Scalar parameters that travel as the bits of a Python float: bf16, the float8 types."""


class Packer:
    """Packs one kernel's arguments into a `void*[]` the driver reads at launch.

    Built once per loaded kernel from its signature (`*fp32`, `i32`, `fp16`, ...). Pointers are
    64-bit device addresses (ints), `i1` one byte, other scalars their width. `pack(values)` is
    one `struct.pack_into` and returns the address to give the launch call as kernelParams. The
    buffer is reused: a launch holds `lock` from `pack` until the driver's launch call has
    returned (the driver copies the parameters then), so that launches of one kernel from
    several threads never swap arguments. Backends subclass it to name their kind of kernel in
    errors (`kernel_kind`).
    """

    kernel_kind: ClassVar[str] = "a GPU kernel"

    def __init__(self, signature: Sequence[str], names: Sequence[str] | None = None):
        self.signature = tuple(signature)
        self.names = tuple(names) if names else tuple(f"arg{i}" for i in range(len(signature)))
        codes = [
            self._code(kind, name) for kind, name in zip(self.signature, self.names, strict=True)
        ]
        self.struct = struct.Struct(
            "<" + "".join(f"{c}{SLOT - struct.calcsize(c)}x" for c in codes)
        )
        self._convert = tuple(
            (i, SCALAR_CONVERSIONS[kind])
            for i, kind in enumerate(self.signature)
            if kind in SCALAR_CONVERSIONS
        )
        size = max(self.struct.size, SLOT)
        self.buffer = (ctypes.c_uint64 * (size // SLOT))()  # 8-byte aligned
        """The slots; generated launch code packs with `struct.pack_into(buffer, 0, *values)`."""
        base = ctypes.addressof(self.buffer)
        count = len(codes)
        self._pointers = (ctypes.c_void_p * max(count, 1))(*(base + SLOT * i for i in range(count)))
        self.address = ctypes.addressof(self._pointers) if count else 0
        self.pointer_indices = tuple(i for i, kind in enumerate(self.signature) if kind[0] == "*")
        self.pack_into = functools.partial(self.struct.pack_into, self.buffer, 0)
        """`pack_into(*values)`: the values written as they are (no conversion, no check)."""
        self.direct = not self._convert
        """Whether `pack_into` packs as `pack` does (no bf16 or float8 scalar to convert)."""
        self.lock = threading.Lock()

    @classmethod
    def _code(cls, kind: str, name: str) -> str:
        if kind.startswith("*"):
            return "Q"
        code = SCALAR_FORMATS.get(kind)
        if code is None:
            raise LaunchArgumentError(
                f"parameter '{name}' has type {kind!r}, which tilec cannot pass to {cls.kernel_kind}; "
                f"use a pointer (*T) or one of {', '.join(SCALAR_FORMATS)}"
            )
        return code

    def pack(self, values: Sequence[Any]) -> int:
        """Write `values` (device addresses for pointers) into the buffer; return kernelParams."""
        if self._convert:
            values = list(values)
            for i, convert in self._convert:
                values[i] = convert(values[i])
        try:
            self.pack_into(*values)
        except struct.error:
            raise self._explain(values) from None
        return self.address

    def unpack(self) -> tuple:
        """The values in the buffer (bf16 as bits): what the kernel will receive."""
        return self.struct.unpack_from(self.buffer, 0)

    def _explain(self, values: Sequence[Any]) -> LaunchArgumentError:
        if len(values) != len(self.signature):
            return LaunchArgumentError(
                f"expected {len(self.signature)} arguments; got {len(values)}"
            )
        for name, kind, value in zip(self.names, self.signature, values, strict=True):
            try:
                struct.pack("<" + self._code(kind, name), value)
            except struct.error as error:
                what = "a device address (int)" if kind.startswith("*") else kind
                return LaunchArgumentError(
                    f"argument '{name}' ({kind}): cannot pass {value!r} as {what}: {error}"
                )
        return LaunchArgumentError("could not pack the kernel arguments")
