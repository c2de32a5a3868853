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

from tilec.errors import TensorDescriptorError
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
    128-byte, 64-byte-aligned slot of its own that `pack` fills (module docstring)."""

    def __init__(self, driver: Any, signature: Sequence[str], names: Sequence[str] | None,
                 maps: Sequence[TensorMapParameter],
                 cache: tensor_map.TensorMapCache | None = None):  # fmt: skip
        super().__init__(signature, names)
        self.driver = driver
        self.maps = tuple(maps)
        self.cache = cache if cache is not None else CACHE
        self._map_buffer = ctypes.create_string_buffer(
            tensor_map.MAP_BYTES * len(self.maps) + tensor_map.MAP_ALIGN
        )
        start = ctypes.addressof(self._map_buffer)
        start += -start % tensor_map.MAP_ALIGN
        self.map_slots = tuple(start + tensor_map.MAP_BYTES * i for i in range(len(self.maps)))
        count = len(self.signature)
        entries = [self._pointers[i] for i in range(count)] + list(self.map_slots)
        self._pointers = (ctypes.c_void_p * len(entries))(*entries)
        self.address = ctypes.addressof(self._pointers)
        self.direct = False  # the fast paths call `pack`, which fills the maps

    def pack(self, values: Sequence[Any]) -> int:
        address = super().pack(values)
        for spec, slot in zip(self.maps, self.map_slots, strict=True):
            source = self.cache.get(self.driver, spec.request(values))
            ctypes.memmove(slot, source, tensor_map.MAP_BYTES)
        return address

    def map_bytes(self, index: int) -> bytes:
        """The 128 bytes the next launch passes for map `index` (tests)."""
        return ctypes.string_at(self.map_slots[index], tensor_map.MAP_BYTES)


CACHE = tensor_map.TensorMapCache()
"""The process's encodings (the maps are copied into each kernel's slots at launch, so an entry
dropped from the cache never leaves a launch without its map)."""


def install(driver: Any, kernel: Any, metadata: dict[str, Any],
            names: Sequence[str] | None = None) -> Any:  # fmt: skip
    """Give `kernel` (loaded) a `TmaPacker` where its `metadata` lists tensor maps."""
    maps = metadata.get("tensor_maps")
    if maps:
        specs = [TensorMapParameter.from_json(m) for m in maps]
        kernel.packer = TmaPacker(driver, metadata["params"], names, specs)
    return kernel


__all__ = ["CACHE", "TensorMapParameter", "TmaPacker", "install"]
