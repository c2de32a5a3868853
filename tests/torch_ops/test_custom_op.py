"""`tilec.torch.custom_op` on the CPU with the interp backend: `torch.compile(fullgraph=True)`
traces through a function that launches a tilec kernel. Skipped where torch is not installed."""

from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
import tilec.torch as tilec_torch

torch = pytest.importorskip("torch", reason="needs PyTorch (CI installs none)")


@tilec.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@tilec_torch.custom_op("tilec_cpu_test::scale", mutates_args=())
def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    # the interp backend takes NumPy arrays: views of the tensors' memory, no copies
    scale_kernel[(tilec.cdiv(n, 128),)](
        x.numpy(), out.numpy(), n, factor, BLOCK=128, backend="interp"
    )
    return out


@scale.register_fake
def _(x: torch.Tensor, factor: float) -> torch.Tensor:
    return torch.empty_like(x)


def test_torch_compile_fullgraph_traces_through_the_op():
    def f(x):
        return scale(x, 3.0) + 1.0

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    x = torch.randn(1000)
    np.testing.assert_allclose(compiled(x).numpy(), x.numpy() * 3.0 + 1.0, rtol=1e-6)
    y = torch.randn(1000)
    np.testing.assert_allclose(compiled(y).numpy(), y.numpy() * 3.0 + 1.0, rtol=1e-6)


def test_fake_gives_the_tracer_the_output():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        out = scale(torch.empty(7, 3), 2.0)
    assert out.shape == (7, 3) and out.dtype == torch.float32
