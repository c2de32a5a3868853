"""Triton's `enable_reflect_ftz` option on NVIDIA (its libdevice flush-to-zero, on by default):
`tl.exp2` on f32 is `ex2.approx.ftz.f32` with it and `ex2.approx.f32` without, the PTX that
Triton's test_enable_reflect_ftz reads; on the GPU a subnormal result is 0 with it and kept
without it. Another backend accepts the option with no effect, as Triton does."""

from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl


@tilec.jit
def exp2_kernel(data):
    ptrs = data + tl.arange(0, 128)
    tl.store(ptrs, tl.math.exp2(tl.load(ptrs)))


def _compiled(backend: str, ftz: bool, target: str | None = None):
    options = {} if target is None else {"target": target}
    return tilec.compile(exp2_kernel, {"data": "*fp32"}, {}, backend=backend,
                         enable_reflect_ftz=ftz, **options)  # fmt: skip


@pytest.mark.parametrize("ftz", [False, True])
def test_exp2_flushes_subnormals_only_with_reflect_ftz(ftz):
    ptx = _compiled("nvidia", ftz, "sm_90a").asm["ptx"]
    assert ("ex2.approx.ftz.f32" in ptx) == ftz
    assert "ex2.approx.f32" in ptx or ftz


def test_the_default_is_tritons():
    ptx = tilec.compile(exp2_kernel, {"data": "*fp32"}, {}, backend="nvidia", target="sm_90a")
    assert "ex2.approx.ftz.f32" in ptx.asm["ptx"]


def test_the_interpreter_accepts_it_with_no_effect():
    data = np.full(128, -130.0, np.float32)
    exp2_kernel[(1,)](data, backend="interp", enable_reflect_ftz=True)
    assert (data == np.float32(2.0**-130)).all()  # subnormal, kept


@pytest.mark.gpu
@pytest.mark.parametrize("ftz", [False, True])
def test_subnormal_results_on_the_gpu(ftz):
    data = np.full(128, -130.0, np.float32)
    _compiled("nvidia", ftz).run((1,), [data])
    assert (data == (0.0 if ftz else np.float32(2.0**-130))).all()
