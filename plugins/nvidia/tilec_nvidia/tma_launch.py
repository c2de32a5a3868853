"""Launching a kernel that reads descriptors through TMA (docs/tma.md): its tensor maps.

Such a kernel has, after the parameters of its signature (`metadata["params"]`, which the launch
paths fill from the arguments as for any kernel), one 128-byte tensor-map parameter a descriptor
(`tilec_nvidia.tma.tensor_map_parameter`), listed in `metadata["tensor_maps"]`: for each, where
the descriptor's base, sizes and strides are among the parameters (or the constants the kernel
was compiled with: the last stride, 1, and those of a descriptor made in the kernel) and what
the kernel copies (element, block, swizzle, padding). `TmaPacker` packs the parameters as `Packer` does, then encodes each map from the
packed values (`tilec_nvidia.tensor_map`, cached) and puts its 128 bytes in the kernel's own
64-byte-aligned slot, which the kernelParams array points at: the launch paths that call
`pack` launch such a kernel unchanged (the native launch, which packs in C, is not offered).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

import attrs

from tilec.errors import OptionTypeError, OptionValueError, TensorDescriptorError
from tilec.interop.device import stream_handle
from tilec_nvidia import tensor_map
from tilec_nvidia.driver import Packer

PARAMETER = "param"
CONSTANT = "const"
PRODUCT = "mul"


def _listed(item: Any) -> Any:
    return [_listed(i) for i in item] if isinstance(item, tuple) else item


@attrs.frozen
class TensorMapParameter:
    """One tensor-map parameter. `base` is the index of the descriptor's base pointer among the
    signature's parameters; each of `shape` and `strides` (elements, outermost first) a
    `(PARAMETER, index)` or `(CONSTANT, value)` pair, or a size of a made descriptor
    `(PRODUCT, width, pairs)`: their product wrapped to `width` signed bits, as the kernel
    multiplied them (the fused-attention tutorial's `Z * H * N_CTX`); `block` the block the
    kernel loads,
    `swizzle` the width in bytes of its shared buffer's swizzle (0, 32, 64, 128)."""

    element: str
    base: int
    shape: tuple[tuple, ...]
    strides: tuple[tuple, ...]
    block: tuple[int, ...]
    padding: str
    swizzle: int
    in_kernel: bool = False
    """A descriptor `tl.make_tensor_descriptor` made (its alignments proven at compile time,
    `tma_lowering.proven_aligned`): a run-time size or stride TMA cannot take is an error
    saying so."""

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self)
        if not self.in_kernel:  # as `tma_lowering.added_metadata` writes it
            del data["in_kernel"]
        return {k: [_listed(v) for v in data[k]] if k in ("shape", "strides") else
                list(v) if isinstance(v, tuple) else v for k, v in data.items()}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TensorMapParameter:
        def pairs(items: Sequence[Any]) -> tuple[tuple, ...]:
            return tuple(
                (PRODUCT, int(item[1]), pairs(item[2])) if item[0] == PRODUCT
                else (str(item[0]), int(item[1]))
                for item in items
            )  # fmt: skip

        return cls(
            element=data["element"], base=int(data["base"]), shape=pairs(data["shape"]),
            strides=pairs(data["strides"]), block=tuple(int(b) for b in data["block"]),
            padding=data["padding"], swizzle=int(data["swizzle"]),
            in_kernel=bool(data.get("in_kernel", False)),
        )  # fmt: skip

    def request(self, values: Sequence[Any]) -> tensor_map.TensorMapRequest:
        """The encoding of this map for a launch with the parameter `values`."""

        def read(pair: tuple) -> int:
            if pair[0] == PRODUCT:
                _kind, width, factors = pair
                product = math.prod(read(f) for f in factors) % (1 << width)
                return product - (1 << width) if product >> (width - 1) else product
            kind, value = pair
            return int(values[value]) if kind == PARAMETER else value

        shape, strides = [read(p) for p in self.shape], [read(p) for p in self.strides]
        try:
            return tensor_map.request(
                self.element, int(values[self.base]), shape, strides, self.block,
                self.padding, self.swizzle,
            )  # fmt: skip
        except TensorDescriptorError as error:
            if not self.in_kernel:
                raise
            raise TensorDescriptorError(
                f"the kernel reads a tl.make_tensor_descriptor (shape {shape}, strides "
                f"{strides}) through TMA, which cannot take it: {error}; or set "
                "TILEC_NVIDIA_TMA=0 to read it with masked loads"
            ) from None


class TmaPacker(Packer):
    """A `Packer` whose kernelParams array ends with one entry a tensor map, each pointing at a
    128-byte, 64-byte-aligned slot of its own that `pack` fills (module docstring), then,
    where the kernel builds maps itself (`scratch_size` bytes a program: `tma_made`), one
    entry for the address of its global scratch, which `pack(values, programs, stream)` gets
    for the launch's `programs` (`GlobalScratch`)."""

    def __init__(self, driver: Any, signature: Sequence[str], names: Sequence[str] | None,
                 maps: Sequence[TensorMapParameter],
                 cache: tensor_map.TensorMapCache | None = None,
                 scratch: GlobalScratch | None = None):  # fmt: skip
        super().__init__(signature, names)
        self.driver = driver
        self.maps = tuple(maps)
        self.cache = cache if cache is not None else CACHE
        self.scratch = scratch
        self.scratch_size = scratch.size if scratch is not None else 0
        self._scratch_address = ctypes.c_uint64(0)
        self._map_buffer = ctypes.create_string_buffer(
            tensor_map.MAP_BYTES * len(self.maps) + tensor_map.MAP_ALIGN
        )
        start = ctypes.addressof(self._map_buffer)
        start += -start % tensor_map.MAP_ALIGN
        self.map_slots = tuple(start + tensor_map.MAP_BYTES * i for i in range(len(self.maps)))
        count = len(self.signature)
        entries = [self._pointers[i] for i in range(count)] + list(self.map_slots)
        if scratch is not None:
            entries.append(ctypes.addressof(self._scratch_address))
        self._pointers = (ctypes.c_void_p * len(entries))(*entries)
        self.address = ctypes.addressof(self._pointers)
        self.direct = False  # the fast paths call `pack`, which fills the maps

    def pack(self, values: Sequence[Any], programs: int | None = None,
             stream: Any = None) -> int:  # fmt: skip
        address = super().pack(values)
        for spec, slot in zip(self.maps, self.map_slots, strict=True):
            source = self.cache.get(self.driver, spec.request(values))
            ctypes.memmove(slot, source, tensor_map.MAP_BYTES)
        if self.scratch is not None:
            if programs is None:
                raise TypeError("a kernel that builds tensor maps is packed with its programs")
            self._scratch_address.value = self.scratch.address(self.driver, programs, stream)
        return address

    def map_bytes(self, index: int) -> bytes:
        """The 128 bytes the next launch passes for map `index` (tests)."""
        return ctypes.string_at(self.map_slots[index], tensor_map.MAP_BYTES)


class GlobalScratch:
    """The global scratch of a kernel that builds tensor maps (`tma_made`): `size` bytes a
    program, `align`-aligned. `address(driver, programs, stream)` asks the allocator given to
    `tilec.set_allocator` for `programs * size` bytes on `stream`, as Triton's launcher does
    (`fn(size, alignment, stream)`, an int or an object with `data_ptr()`), keeping what it
    gave until the next launch; without one, memory of the kernel's own, one allocation a
    stream, grown as needed (a launch on a stream finds the stream's earlier launches done
    with it). What the allocator returns that gives no address (None, an object without
    `data_ptr()`, an address of 0) is an `OptionTypeError` / `OptionValueError` naming the
    kernel (`given_address`: Triton 3.6 passes None on as a null pointer, which the kernel
    then writes through, and raises a `TypeError` for the rest)."""

    def __init__(self, size: int, align: int, kernel: str = "?"):
        self.size, self.align, self.kernel = size, align, kernel
        self._given: Any = None
        self._own: dict[int, tuple[int, int]] = {}

    def address(self, driver: Any, programs: int, stream: Any = None) -> int:
        import tilec

        nbytes = programs * self.size
        handle = stream_handle(stream)
        allocator = tilec.get_allocator()
        if allocator is not None:
            given = allocator(nbytes, self.align, handle)
            self._given = given  # alive until the next launch (Triton drops it at once)
            address = self.given_address(given, nbytes)
            if address % self.align:
                raise TensorDescriptorError(
                    f"kernel '{self.kernel}': tilec.set_allocator's allocator gave {nbytes} "
                    f"bytes at {address:#x}, not {self.align}-byte aligned as asked"
                )
            return address
        return self._own_address(driver, nbytes, handle)

    def given_address(self, given: Any, nbytes: int) -> int:
        """The device address of what the allocator returned for `nbytes` (class doc)."""
        asked = (
            f"kernel '{self.kernel}' builds tensor maps in global scratch (docs/tma.md) and "
            f"asked tilec.set_allocator's allocator for {nbytes} bytes ({self.align}-byte "
            "aligned)"
        )
        fix = (
            "return device memory of that size, e.g. torch.empty(size, dtype=torch.int8, "
            "device='cuda'), or call tilec.set_allocator(None) to let tilec allocate it"
        )
        address, returned = given, repr(given)
        if isinstance(given, bool) or not isinstance(given, int):
            data_ptr = getattr(given, "data_ptr", None)
            address = data_ptr() if callable(data_ptr) else None
            if callable(data_ptr):
                returned += f" whose data_ptr() gave {address!r}"
        if isinstance(address, bool) or not isinstance(address, int):
            raise OptionTypeError(
                f"{asked}; it returned {returned}, not an int address or an object whose "
                f"data_ptr() gives one: {fix}"
            )
        if address < 0 or address >= 2**64 or (address == 0 and nbytes):
            raise OptionValueError(f"{asked}; it returned the address {address:#x}: {fix}")
        return address

    def _own_address(self, driver: Any, nbytes: int, handle: int) -> int:
        address, held = self._own.get(handle, (0, 0))
        if held < nbytes:
            if held:
                driver.mem_free(address)  # synchronizes: no launch still writes it
            size = max(nbytes, 2 * held)
            address = driver.mem_alloc(size + self.align)
            self._own[handle] = (address, size)
        return address + (-address % self.align)


CACHE = tensor_map.TensorMapCache()
"""The process's encodings (the maps are copied into each kernel's slots at launch, so an entry
dropped from the cache never leaves a launch without its map)."""


def install(driver: Any, kernel: Any, metadata: dict[str, Any],
            names: Sequence[str] | None = None) -> Any:  # fmt: skip
    """Give `kernel` (loaded) a `TmaPacker` where its `metadata` lists tensor maps."""
    maps = metadata.get("tensor_maps") or []
    size = metadata.get("global_scratch_size", 0)
    if maps or size:
        specs = [TensorMapParameter.from_json(m) for m in maps]
        name = getattr(kernel, "name", "?")
        scratch = GlobalScratch(size, metadata["global_scratch_align"], name) if size else None
        kernel.packer = TmaPacker(driver, metadata["params"], names, specs, scratch=scratch)
    return kernel


__all__ = ["CACHE", "GlobalScratch", "TensorMapParameter", "TmaPacker", "install"]
