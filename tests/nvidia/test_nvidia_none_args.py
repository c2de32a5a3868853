"""`None` arguments on the nvidia launch path (issue 20), against the fake driver of
test_native_launch: a `None` is a compile-time constant, not passed to the kernel, and a `None`
and a tensor for one parameter are two specializations with a fast launch each (native and
Python), never one taken for the other."""

from __future__ import annotations

import types

from test_native_launch import Tensor, gpu  # noqa: F401 (the fixture)

import tilec
import tilec.language as tl
from tilec.runtime import launcher


def make_kernel():
    @tilec.jit
    def axpy(x_ptr, w_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        if w_ptr is not None:
            x = x * tl.load(w_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x, mask=mask)

    return axpy


def test_none_and_a_tensor_for_one_parameter_launch_natively_apart(gpu):  # noqa: F811
    kernel = make_kernel()
    launch = kernel[(2,)]
    x, w, out = Tensor(0x10000), Tensor(0x20000), Tensor(0x30000)
    without = launch(x, None, out, 4096, BLOCK=1024)
    assert without.constexprs["w_ptr"] is None
    assert list(without.signature) == ["x_ptr", "out_ptr", "n"]
    launch(x, None, out, 4096, BLOCK=1024)
    assert len(gpu.python) == 1 and gpu.native[-1][4][:3] == [0x10000, 0x30000, 4096]
    with_w = launch(x, w, out, 4096, BLOCK=1024)  # another specialization: compiled, general
    assert with_w is not without and with_w.signature["w_ptr"] == "*fp32"
    assert len(gpu.python) == 2 and len(gpu.native) == 1
    assert launch(x, w, out, 4096, BLOCK=1024) is with_w
    assert len(gpu.python) == 2 and gpu.native[-1][4] == [0x10000, 0x20000, 0x30000, 4096]
    assert launch(x, None, out, 4096, BLOCK=1024) is without  # its own native launch again
    assert len(gpu.python) == 2 and gpu.native[-1][4][:3] == [0x10000, 0x30000, 4096]


def test_none_on_the_python_fast_launch(gpu):  # noqa: F811
    """A stream object (not an int handle) leaves the launch to the Python fast launch."""
    kernel = make_kernel()
    launch = kernel[(2,)]
    x, w, out = Tensor(0x10000), Tensor(0x20000), Tensor(0x30000)
    stream = types.SimpleNamespace(cuda_stream=0x99)
    without = launch(x, None, out, 4096, BLOCK=1024, stream=stream)
    with_w = launch(x, w, out, 4096, BLOCK=1024, stream=stream)
    assert len(gpu.python) == 2 and with_w is not without
    assert launch(x, w, out, 4096, BLOCK=1024, stream=stream) is with_w
    assert launch(x, None, out, 4096, BLOCK=1024, stream=stream) is without
    assert launch(x, w_ptr=None, out_ptr=out, n=4096, BLOCK=1024, stream=stream) is without
    assert len(gpu.python) == 5 and not gpu.native


def test_kernels_of_constexprs_only_take_the_fast_launch(gpu, monkeypatch):  # noqa: F811
    """No runtime argument at all (issue 20: their fast launch had a SyntaxError); with no
    tensor among the arguments, the Python fast launch."""
    general = []
    original = launcher.Launcher._launch
    monkeypatch.setattr(
        launcher.Launcher, "_launch", lambda self, *a: general.append(a) or original(self, *a)
    )

    @tilec.jit
    def constant_shape(shape: tl.constexpr = (16, 32), value: tl.constexpr = None):
        tl.static_assert(shape[0] * shape[1] == 512)
        if value is not None:
            tl.full(shape, value, tl.float32)

    @tilec.jit
    def nothing():
        pass

    for _ in range(3):
        constant_shape[(1,)]()
        constant_shape[(1,)](shape=(32, 16), value=2.0)
        nothing[(1,)]()
    assert len(gpu.python) == 9 and len(general) == 3
