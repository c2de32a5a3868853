"""Triton's `TensorWrapper` and `reinterpret`: a tensor seen as another element type of the same
width (`reinterpret(x, tl.uint32)`), which a kernel then reads with that type. tilec takes it as
any tensor argument: through `data_ptr()`, `dtype` (a `tl.dtype`) and `get_device()`, and on
the interp backend through DLPack."""

from __future__ import annotations

from typing import Any

from tilec import language as tl
from tilec.errors import ArgumentValueError


class TensorWrapper:
    """`base` (a torch tensor) whose elements a kernel reads as `dtype` (a `tl.dtype` of the
    same width)."""

    def __init__(self, base: Any, dtype: Any):
        self.base = base
        self.dtype = dtype
        self.data = base.data
        self.device = base.device
        self.shape = base.shape

    def data_ptr(self) -> int:
        return self.base.data_ptr()

    def get_device(self) -> int:
        return self.base.get_device()

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        """The base's memory (the interp backend reads host tensors through DLPack; the kernel
        sees the bytes as `dtype`)."""
        return self.base.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self.base.__dlpack_device__()

    def stride(self, *args: Any) -> Any:
        return self.base.stride(*args)

    def element_size(self) -> int:
        return self.base.element_size()

    def numel(self) -> int:
        return self.base.numel()

    def dim(self) -> int:
        return self.base.dim()

    def cpu(self) -> TensorWrapper:
        return TensorWrapper(self.base.cpu(), self.dtype)

    def copy_(self, other: Any) -> None:
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)

    def clone(self) -> TensorWrapper:
        return TensorWrapper(self.base.clone(), self.dtype)

    def to(self, device: Any) -> TensorWrapper:
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes: Any) -> TensorWrapper:
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor: Any, dtype: Any) -> Any:
    """`tensor` read as `dtype`: a `TensorWrapper`, or the base tensor when `dtype` is its own
    type again. The widths must agree."""
    if isinstance(tensor, TensorWrapper):
        if dtype == tensor.base.dtype:
            return tensor.base  # reinterpreting back to the original type
        tensor = tensor.base
    if not isinstance(dtype, tl.dtype):
        raise ArgumentValueError(f"reinterpret takes a tl.dtype (tl.uint32, ...); got {dtype!r}")
    if dtype.primitive_bitwidth != tensor.element_size() * 8:
        raise ArgumentValueError(
            f"reinterpret: a tensor of {tensor.dtype} ({tensor.element_size() * 8} bits) cannot "
            f"be read as {dtype} ({dtype.primitive_bitwidth} bits)"
        )
    return TensorWrapper(tensor, dtype)
