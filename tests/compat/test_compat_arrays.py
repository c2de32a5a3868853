"""Arrays on the interp backend: strided NumPy views in place, DLPack producers and CPU torch
tensors as zero-copy views (issue 11)."""

import importlib.util

import numpy as np
import pytest
from compat_kernels import add_one, strided_double

HAS_TORCH = importlib.util.find_spec("torch") is not None


class DLPackArray:
    """Exposes a NumPy array only through the DLPack protocol (not an ndarray itself)."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def _strides(view: np.ndarray) -> tuple[int, int]:
    return view.strides[0] // view.itemsize, view.strides[1] // view.itemsize


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a[:, ::2],
        lambda a: a.T,
        lambda a: a[::-1, 1::2],
        lambda a: a[1:5, 2:6],
    ],
    ids=["every-other-column", "transposed", "reversed-rows", "window"],
)
def test_strided_views_are_addressed_with_their_real_strides(make):
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    expected = base.copy()
    view = make(base)
    make(expected)[:4, :4] *= 2
    strided_double[(1,)](view, *_strides(view), R=4, C=4, backend="interp")
    np.testing.assert_array_equal(base, expected)


def test_a_dlpack_producer_is_a_zero_copy_array():
    data = np.arange(8, dtype=np.int32)
    add_one[(1,)](DLPackArray(data), N=8, backend="interp")
    np.testing.assert_array_equal(data, np.arange(8) + 1)


def test_dlpack_producers_of_other_dtypes_compile_separately():
    ints, floats = np.zeros(8, np.int32), np.full(8, 0.5, np.float64)
    add_one[(1,)](DLPackArray(ints), N=8, backend="interp")
    add_one[(1,)](DLPackArray(floats), N=8, backend="interp")
    np.testing.assert_array_equal(ints, np.ones(8))
    np.testing.assert_array_equal(floats, np.full(8, 1.5))


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (CI has no torch)")
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "bfloat16"])
def test_cpu_torch_tensors_are_written_in_place(dtype):
    import torch

    tensor = torch.arange(8).to(getattr(torch, dtype))
    add_one[(1,)](tensor, N=8, backend="interp")
    assert torch.equal(tensor, (torch.arange(8) + 1).to(getattr(torch, dtype)))


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (CI has no torch)")
def test_strided_cpu_torch_tensor_is_addressed_with_its_strides():
    import torch

    base = torch.arange(64, dtype=torch.float32).reshape(8, 8)
    expected = base.clone()
    view = base[:, ::2]
    expected[:4, ::2][:, :4] *= 2
    strided_double[(1,)](view, view.stride(0), view.stride(1), R=4, C=4, backend="interp")
    assert torch.equal(base, expected)


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed: pip install torch")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cpu_torch_tensor_that_requires_grad_is_written_in_place(dtype):
    """As Triton's kernels take the leaves of an autograd graph (the layer-norm tutorial's
    weight): by address, the kernel's writes bypassing autograd."""
    import torch

    tensor = torch.zeros(8, dtype=getattr(torch, dtype), requires_grad=True)
    add_one[(1,)](tensor, N=8, backend="interp")
    assert tensor.requires_grad
    assert torch.equal(tensor.detach(), torch.ones(8, dtype=getattr(torch, dtype)))
