"""Triton's host-side `TensorDescriptor` (`triton.tools.tensor_descriptor`): a tensor in global
memory (`base`), its `shape` and `strides` (in elements), and the `block_shape` a kernel moves,
passed to a kernel as one argument. The kernel sees the same descriptor `tl.make_tensor_descriptor`
makes (`desc.load`, `desc.store`, `desc.shape`, ...).

`base` is a torch tensor, an array with `__cuda_array_interface__` (`tilec.to_device`, CuPy) or a
NumPy array (on interp, or copied in and out by a GPU backend). The checks are Triton's, with its
texts (`TensorDescriptorError`, an `AssertionError`; a block size that is no int or no power of
two is Triton's TypeError or ValueError).

At a launch a descriptor argument `d` is the runtime arguments `d.0` (the base pointer, with its
16-byte alignment), `d.1.i` (the shape, i32 where it fits) and `d.2.i` (the strides, i64, as
Triton's), the last stride the constant 1, and the constexpr `d.3` (a `DescriptorBlock`: block
shape and padding), all in the launch's key (`tilec.frontend.tuple_params` flattens it; `tilec.runtime.hot_path`'s
fast launches read the parts from the descriptor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tilec.errors import ArgumentValueError, LaunchArgumentError, TensorDescriptorError

MAX_RANK = 5
MAX_BLOCK_ELEMENTS = 2**20
"""Triton's TRITON_MAX_TENSOR_NUMEL."""


@dataclass(frozen=True)
class DescriptorBlock:
    """What a kernel is compiled for besides the base's element type: the block shape and the
    padding of a descriptor argument (a constexpr element of it)."""

    block_shape: tuple[int, ...]
    padding: str


@dataclass
class TensorDescriptor:
    base: Any
    shape: list[int]
    strides: list[int]
    block_shape: list[int]
    padding: str = "zero"

    def __post_init__(self) -> None:
        rank = len(self.shape)
        _check(len(self.strides) == rank, f"rank mismatch: {self}")
        _check(len(self.block_shape) == rank, f"rank mismatch: {self}")
        _check(rank > 0, "rank must not be zero")
        _check(rank <= MAX_RANK, "rank cannot be more than 5")
        if type(self.base).__name__ not in ("FakeTensor", "FunctionalTensor"):
            _check(base_address(self.base) % 16 == 0, "base must be 16-byte aligned")
        validate_block_shape(self.block_shape)
        element_bytes = _dtype(self.base).itemsize
        for stride in self.strides[:-1]:
            _check(stride * element_bytes % 16 == 0, "strides must be 16-byte aligned")
        for size in self.shape:
            _check(size > 0, "shape must be positive")
        _check(self.strides[-1] == 1, "Last dimension must be contiguous")
        _check(self.padding in ("zero", "nan"), "Illegal value for padding")
        if self.padding == "nan":
            _check(
                is_floating(self.base),
                "Padding option `nan` is only supported for floating point tensors",
            )

    @staticmethod
    def from_tensor(tensor: Any, block_shape: list[int], padding: str = "zero") -> TensorDescriptor:
        """The descriptor of all of `tensor` (a torch tensor, a NumPy or device array)."""
        return TensorDescriptor(tensor, tensor.shape, element_strides(tensor), block_shape, padding)

    def kernel_block(self) -> DescriptorBlock:
        return DescriptorBlock(tuple(self.block_shape), self.padding)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise TensorDescriptorError(message)


def validate_block_shape(shape: list[int]) -> int:
    """Triton's check of a block shape: ints, powers of two, at most 2**20 elements."""
    numel = 1
    for i, size in enumerate(shape):
        if not isinstance(size, int) or isinstance(size, bool):
            raise LaunchArgumentError(
                f"Shape element {i} must have type `constexpr[int]`, got `constexpr[{type(size)}]"
            )
        if size <= 0 or size & (size - 1):
            raise ArgumentValueError(f"Shape element {i} must be a power of 2")
        numel *= size
    if numel > MAX_BLOCK_ELEMENTS:
        raise ArgumentValueError(
            f"numel ({numel}) exceeds triton maximum tensor numel ({MAX_BLOCK_ELEMENTS})"
        )
    return numel


def base_address(base: Any) -> int:
    """The address of the first element of `base`."""
    data_ptr = getattr(base, "data_ptr", None)
    if callable(data_ptr):
        return data_ptr()
    for name in ("__cuda_array_interface__", "__array_interface__"):
        interface = getattr(base, name, None)
        if isinstance(interface, dict):
            return interface["data"][0]
    raise LaunchArgumentError(
        "a TensorDescriptor's base is a torch tensor, a NumPy array or a device array "
        f"(tilec.to_device, __cuda_array_interface__); got {type(base).__name__}"
    )


def _dtype(base: Any) -> Any:
    dtype = getattr(base, "dtype", None)
    if dtype is None or not hasattr(dtype, "itemsize"):
        base_address(base)  # the error naming what a base may be
        raise LaunchArgumentError(f"a TensorDescriptor's base has no dtype: {base!r}")
    return dtype


def is_floating(base: Any) -> bool:
    dtype = _dtype(base)
    floating = getattr(dtype, "is_floating_point", None)  # torch
    if floating is not None:
        return bool(floating)
    return getattr(dtype, "kind", "") == "f"  # NumPy


def element_strides(tensor: Any) -> list[int]:
    """`tensor`'s strides in elements: torch's `stride()`; NumPy's and device arrays' byte
    `strides` divided by the element size."""
    stride = getattr(tensor, "stride", None)
    if callable(stride):
        return list(stride())
    size = _dtype(tensor).itemsize
    strides = list(tensor.strides)
    if any(s % size for s in strides):
        raise TensorDescriptorError(
            f"strides must be 16-byte aligned: the array's byte strides {tuple(strides)} are no "
            f"multiples of its element size ({size})"
        )
    return [s // size for s in strides]


__all__ = ["DescriptorBlock", "TensorDescriptor"]
