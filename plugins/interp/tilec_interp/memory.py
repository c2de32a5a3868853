"""The interpreter's memory: registered NumPy buffers at disjoint fake addresses.

Buffer k lives at byte address `(k + 1) << 48`, above the user address space; a pointer is an
int64 byte address. An address is attributed to the buffer whose base is nearest, so an offset
within +-2**47 bytes of a buffer is reported relative to that buffer. An address below every
buffer is host memory the kernel computed the address of (`host_memory`: taken only inside a
writable mapping of this process). Every access is bounds-checked and alignment-checked.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from tilec.errors import LaunchArgumentError, TilecError
from tilec.interop.host_span import host_span
from tilec_interp import host_memory

SHIFT = 48
HALF = 1 << (SHIFT - 1)


class InterpreterError(TilecError, RuntimeError):
    """A kernel fault found by the interpreter (out-of-bounds access, failed assert, ...), at
    the kernel's line."""


class Buffer:
    """The bytes a pointer argument may address, in place: for a strided view, every byte from
    its lowest to its highest element (the gaps between its elements included, as on a GPU), so
    that a kernel addressing it with its real strides reads and writes the right elements."""

    def __init__(self, array: np.ndarray, base: int, name: str | None = None):
        self.original = array
        self.name = name
        """The kernel parameter it was passed for, for error messages."""
        self.writeable = bool(array.flags.writeable)
        self.array, self.start = host_span(array)
        self.base = base
        self.bytes = self.array.reshape(-1).view(np.uint8)
        self.nbytes = self.bytes.size
        self._views: dict[np.dtype, np.ndarray] = {}

    def view(self, dtype: np.dtype) -> np.ndarray:
        v = self._views.get(dtype)
        if v is None:
            usable = self.nbytes - self.nbytes % dtype.itemsize
            v = self._views[dtype] = self.bytes[:usable].view(dtype)
        return v


def as_host_array(value: object) -> np.ndarray:
    """A pointer argument as a NumPy array over the same memory: NumPy arrays as they are; CPU
    torch tensors and other DLPack producers (`__dlpack__`) as zero-copy views, so writes land
    in them (a bf16 torch tensor as its uint16 bit patterns, a float8 one as its uint8 codes; one that requires grad through
    `detach()`, which shares its memory)."""
    if isinstance(value, np.ndarray):
        return value
    if getattr(value, "requires_grad", False) and callable(getattr(value, "detach", None)):
        value = value.detach()  # the same memory; a kernel's writes bypass autograd, as in Triton
    dtype_name = str(getattr(value, "dtype", ""))
    if dtype_name == "torch.bfloat16" and callable(getattr(value, "numpy", None)):
        torch = sys.modules[type(value).__module__.split(".")[0]]
        return value.view(torch.int16).numpy().view(np.uint16)  # type: ignore[attr-defined]
    if dtype_name.startswith("torch.float8_") and callable(getattr(value, "numpy", None)):
        torch = sys.modules[type(value).__module__.split(".")[0]]
        return value.view(torch.uint8).numpy()  # type: ignore[attr-defined]
    if hasattr(value, "__dlpack__"):
        device = getattr(value, "__dlpack_device__", lambda: (1, 0))()
        if device[0] != 1:
            raise LaunchArgumentError(
                f"a pointer argument of the interp backend must be in CPU memory, got a "
                f"{type(value).__name__} on DLPack device {tuple(device)}; copy it to the CPU "
                "(e.g. tensor.cpu())"
            )
        try:
            return np.from_dlpack(value)
        except (TypeError, BufferError, RuntimeError) as error:
            raise LaunchArgumentError(
                f"a pointer argument ({type(value).__name__}) cannot be read through DLPack: "
                f"{error}"
            ) from None
    raise LaunchArgumentError(
        "a pointer argument must be a NumPy array, a CPU torch tensor or a DLPack producer, "
        f"got {type(value).__name__}"
    )


class Memory:
    def __init__(self) -> None:
        self.buffers: list[Buffer] = []
        self.host: dict[int, Buffer] = {}
        """Buffers over host mappings reached through computed addresses, by start address."""
        self._mappings: list[tuple[int, int]] | None = None

    def register(self, array: object, name: str | None = None) -> int:
        """Register `array`, passed for parameter `name` (read and written in place); returns the
        address of its first element."""
        host = as_host_array(array)
        base = (len(self.buffers) + 1) << SHIFT
        buffer = Buffer(host, base, name)
        self.buffers.append(buffer)
        return base + buffer.start

    def resolve_fast(self, addr: np.ndarray, itemsize: int) -> tuple[Buffer, np.ndarray] | None:
        """(buffer, element indices) when every address of the flat int64 `addr` lies in one
        buffer, in bounds and aligned; None otherwise (then `resolve` finds and reports why).

        Five passes over `addr` (min, max, or, subtract, shift) and one new array."""
        if addr.size == 0:
            return None
        lo, hi = int(addr.min()), int(addr.max())
        k = ((lo + HALF) >> SHIFT) - 1
        if k != ((hi + HALF) >> SHIFT) - 1 or not 0 <= k < len(self.buffers):
            return None
        buf = self.buffers[k]
        if lo < buf.base or hi + itemsize > buf.base + buf.nbytes:
            return None
        # Bases are 2**40-aligned, so an address is aligned when its low bits are clear.
        if itemsize > 1 and int(np.bitwise_or.reduce(addr)) & (itemsize - 1):
            return None
        index = np.subtract(addr, buf.base)
        if itemsize > 1:
            np.right_shift(index, itemsize.bit_length() - 1, out=index)
        return buf, index

    def resolve(
        self,
        addr: np.ndarray,
        sel: np.ndarray | None,
        dtype: np.dtype,
        fail: Callable[[int, str], None],
    ) -> list[tuple[Buffer, np.ndarray, np.ndarray | None]]:
        """Split flat addresses (those where `sel`) into (buffer, element indices, positions).

        `positions` are indices into the flat arrays (None: all of them). Calls
        `fail(flat_index, description)` for the first bad access.
        """
        itemsize = dtype.itemsize
        if sel is not None and bool(sel.all()):
            sel = None
        positions = None if sel is None else np.flatnonzero(sel)
        a = addr if positions is None else addr[positions]
        if a.size == 0:
            return []
        # Fast path: every address in one buffer, in bounds and aligned (bases are 2**40-aligned).
        lo, hi = int(a.min()), int(a.max())
        k_lo = ((lo + HALF) >> SHIFT) - 1
        if k_lo == ((hi + HALF) >> SHIFT) - 1 and 0 <= k_lo < len(self.buffers):
            buf = self.buffers[k_lo]
            if (
                lo >= buf.base
                and hi + itemsize <= buf.base + buf.nbytes
                and (itemsize == 1 or not bool((a & (itemsize - 1)).any()))
            ):
                return [(buf, (a - buf.base) >> (itemsize.bit_length() - 1), positions)]
        k = ((a + HALF) >> SHIFT) - 1
        k0 = int(k[0])
        if bool((k == k0).all()):
            groups = [(k0, None)]
        else:
            groups = [(int(kk), np.flatnonzero(k == kk)) for kk in np.unique(k)]
        out = []
        for kk, where in groups:
            aa = a if where is None else a[where]
            pos = positions if where is None else (where if positions is None else positions[where])
            if not 0 <= kk < len(self.buffers):
                host = self.host_parts(aa, pos, itemsize) if kk < 0 else None
                if host is None:
                    first = 0 if pos is None else int(pos[0])
                    fail(first, "to an address that belongs to no buffer")
                out.extend(host)  # type: ignore[arg-type]
                continue
            buf = self.buffers[kk]
            off = aa - buf.base
            bad = (off < 0) | (off + itemsize > buf.nbytes) | (off % itemsize != 0)
            if bool(bad.any()):
                i = int(np.argmax(bad))
                first = i if pos is None else int(pos[i])
                o = int(off[i])
                where = f"{o // itemsize}" if o % itemsize == 0 else f"{o / itemsize} (misaligned)"
                fail(
                    first,
                    f"at element offset {where} of a buffer of "
                    f"{buf.nbytes // itemsize} elements ({buf.nbytes} bytes)",
                )
            out.append((buf, off // itemsize, pos))
        return out

    def host_parts(
        self, addr: np.ndarray, pos: np.ndarray | None, itemsize: int
    ) -> list[tuple[Buffer, np.ndarray, np.ndarray | None]] | None:
        """(buffer, element indices, positions) of computed host addresses, one part per
        writable mapping of this process they fall in; None when any access is not wholly
        inside one (or is misaligned), which the caller reports."""
        if self._mappings is None:
            self._mappings = host_memory.writable_mappings()
        if not self._mappings:
            return None
        starts = np.array([start for start, _ in self._mappings], np.int64)
        which = np.searchsorted(starts, addr, side="right") - 1
        parts = []
        for m in np.unique(which):
            if m < 0:
                return None
            start, end = self._mappings[int(m)]
            where = np.flatnonzero(which == m)
            off = addr[where] - start
            if bool(((off + itemsize > end - start) | (off % itemsize != 0)).any()):
                return None
            buf = self.host.get(start)
            if buf is None:
                buf = self.host[start] = Buffer(host_memory.mapping_array(start, end), start)
            parts.append((buf, off // itemsize, where if pos is None else pos[where]))
        return parts
