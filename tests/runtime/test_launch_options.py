"""Launch options on the interpreter: the returned launch handle, `stream=`, and launches of one
kernel from many threads at once."""

import threading

import numpy as np
import pytest
from frontend_kernels import add_kernel

import tilec
from tilec.runtime.compiler import CompiledKernel


def test_launch_returns_the_compiled_kernel(rng):
    x, y = rng.standard_normal(100, dtype=np.float32), rng.standard_normal(100, dtype=np.float32)
    out = np.empty_like(x)
    handle = add_kernel[(1,)](x, y, out, 100, BLOCK_SIZE=128, backend="interp")
    assert isinstance(handle, CompiledKernel)
    assert handle.name == "add_kernel" and "tir" in handle.asm
    assert handle.signature["x_ptr"] == "*fp32" and handle.constexprs == {"BLOCK_SIZE": 128}
    assert add_kernel[(1,)](x, y, out, 100, BLOCK_SIZE=128, backend="interp") is handle
    checked = add_kernel[(1,)](x, y, out, 100, BLOCK_SIZE=128, backend="interp", check=True)
    assert isinstance(checked, CompiledKernel)


def test_stream_is_a_launch_option_not_a_compile_option(rng):
    x, y = rng.standard_normal(100, dtype=np.float32), rng.standard_normal(100, dtype=np.float32)
    out = np.empty_like(x)
    first = add_kernel[(1,)](x, y, out, 100, BLOCK_SIZE=128, backend="interp")
    assert add_kernel[(1,)](x, y, out, 100, BLOCK_SIZE=128, backend="interp", stream=0) is first
    assert add_kernel[(1,)](x, y, out, 100, BLOCK_SIZE=128, backend="interp", stream=12345) is first
    np.testing.assert_array_equal(out, x + y)
    with pytest.raises(TypeError, match="stream must be an int handle"):
        add_kernel[(1,)](x, y, out, 100, BLOCK_SIZE=128, backend="interp", stream="default")
    with pytest.raises(TypeError, match="check=True launches on the default stream"):
        add_kernel[(1,)](x, y, out, 100, BLOCK_SIZE=128, backend="interp", stream=1, check=True)


def test_launches_from_many_threads(rng):
    """8 threads launch one kernel 10 times each with their own arrays and sizes."""
    add_kernel[(1,)](
        *(np.zeros(16, np.float32) for _ in range(3)), 16, BLOCK_SIZE=64, backend="interp"
    )
    errors = []

    def worker(t):
        local = np.random.default_rng(t)
        try:
            for i in range(10):
                n = 50 + 7 * t + i
                x = local.standard_normal(n, dtype=np.float32)
                y = local.standard_normal(n, dtype=np.float32)
                out = np.empty_like(x)
                add_kernel[(tilec.cdiv(n, 64),)](x, y, out, n, BLOCK_SIZE=64, backend="interp")
                np.testing.assert_array_equal(out, x + y)
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
