"""What Triton programs ask of a compiled kernel (issue 11), against a fake cuda.bindings (no
GPU): `kernel.warmup(...)` then `_init_handles()` loads without launching, `n_regs`, `n_spills`
and `metadata.shared` read what the loaded kernel uses, and `compiled[grid](*args)` launches
with every argument of the kernel, constexprs included (the fused-softmax tutorial does all
of it)."""

from __future__ import annotations

import pytest
from test_nvidia_runner import FakeDeviceArray, scale_kernel


def warmup():
    x, out = FakeDeviceArray(0x10000, 1000), FakeDeviceArray(0x20000, 1000)
    compiled = scale_kernel.warmup(x, out, 1000, 2.0, BLOCK=128, backend="nvidia", grid=(8,))
    return compiled, x, out


def test_init_handles_loads_without_launching(fake_gpu):
    compiled, _, _ = warmup()
    with pytest.raises(AttributeError, match="known once loaded: call _init_handles"):
        compiled.metadata.num_regs  # noqa: B018
    compiled._init_handles()
    assert fake_gpu.images and not fake_gpu.launches
    assert compiled.n_regs == 32 and compiled.n_spills == 0
    assert compiled.metadata.shared == compiled.metadata["shared_bytes"]


def test_compiled_kernel_launches_with_every_argument(fake_gpu):
    compiled, x, out = warmup()
    assert compiled[(8, 1, 1)](x, out, 1000, 2.0, 128) is compiled
    assert len(fake_gpu.launches) == 1
    with pytest.raises(ValueError, match="compiled with BLOCK=128, got 256"):
        compiled[(8,)](x, out, 1000, 2.0, 256)
    with pytest.raises(TypeError, match=r"takes the kernel's 5 arguments \(x_ptr, out_ptr"):
        compiled[(8,)](x, out, 1000, 2.0)
    assert len(fake_gpu.launches) == 1
