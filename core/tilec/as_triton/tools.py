"""`triton.tools` and `triton.tools.tensor_descriptor` under the alias: Triton's host-side
`TensorDescriptor` (a tensor, its shape and strides, and the block shape a kernel moves), built
and checked as Triton builds it. tilec kernels take no descriptor parameter yet: a launch
given one is a `LaunchArgumentError` naming the parameter; build the descriptor inside the
kernel with `tl.make_tensor_descriptor(ptr, shape, strides, block_shape)` instead. Programs that
choose host descriptors only where `supports_host_descriptor()`-style checks pass (Triton's
tutorials) take the pointer path on tilec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__path__: list[str] = []
"""A package to the import system: `tilec.as_triton.finder` answers its submodules."""


@dataclass
class TensorDescriptor:
    base: Any
    shape: list[int]
    strides: list[int]
    block_shape: list[int]
    padding: str = "zero"

    def __post_init__(self) -> None:
        rank = len(self.shape)
        if not (len(self.strides) == rank == len(self.block_shape)):
            raise ValueError(f"rank mismatch: {self}")
        if not 0 < rank <= 5:
            raise ValueError("a tensor descriptor has rank 1 to 5")
        if self.base.data_ptr() % 16:
            raise ValueError("base must be 16-byte aligned")
        for size in self.block_shape:
            if size < 1 or size & (size - 1):
                raise ValueError(f"block sizes must be powers of 2; got {self.block_shape}")
        element_bytes = self.base.dtype.itemsize
        if any(stride * element_bytes % 16 for stride in self.strides[:-1]):
            raise ValueError("strides must be 16-byte aligned")
        if any(size <= 0 for size in self.shape):
            raise ValueError("shape must be positive")
        if self.strides[-1] != 1:
            raise ValueError("Last dimension must be contiguous")
        if self.padding not in ("zero", "nan"):
            raise ValueError("Illegal value for padding")
        if self.padding == "nan" and not self.base.dtype.is_floating_point:
            raise ValueError("Padding option `nan` is only supported for floating point tensors")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: list[int], padding: str = "zero") -> TensorDescriptor:
        return TensorDescriptor(tensor, tensor.shape, tensor.stride(), block_shape, padding)


__all__ = ["TensorDescriptor"]
