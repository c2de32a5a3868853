"""The Triton 3.6 language features of test_compat_language_values.py launched on a GPU backend
(nvidia; amd with `TILEC_TEST_BACKEND=amd`): tuple arguments, `tl.map_elementwise` with
per-element branches, loops and packs, `loop_unroll_factor`, `x.item()` and `tl.target_info`,
against NumPy."""

import numpy as np
import pytest
from compat_helpers import GPU_BACKEND as BACKEND
from compat_language_kernels import (
    item_kernel,
    loop_kernel,
    map_kernel,
    target_kernel,
    tuple_argument,
    unroll_kernel,
)

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu_backend")]


def test_tuple_arguments():
    x, y = np.arange(128, dtype=np.float32), np.full(128, 2.0, np.float32)
    out = np.zeros(128, np.float32)
    tuple_argument[(1,)]((x, (y, None)), (3, 1), out, 128, backend=BACKEND)
    np.testing.assert_array_equal(out, x + y * 3 + 1)


@pytest.mark.parametrize("which", ["selu", "classify", "safe_div", "pack2"])
def test_map_elementwise(rng, which):
    x = rng.integers(-20, 20, 128).astype(np.float32)
    y = rng.integers(-3, 4, 128).astype(np.float32)
    if which == "pack2":
        y = np.where(y == 0, 1, y).astype(np.float32)
    out, reference = np.zeros_like(x), np.zeros_like(x)
    map_kernel[(1,)](x, y, out, N=128, WHICH=which, backend=BACKEND)
    map_kernel[(1,)](x, y, reference, N=128, WHICH=which, backend="interp")
    np.testing.assert_allclose(out, reference, rtol=1e-6)


@pytest.mark.parametrize("which", ["collatz", "odd_sum"])
def test_map_elementwise_loops(which):
    x = np.arange(1, 129, dtype=np.int32)
    out, reference = np.zeros_like(x), np.zeros_like(x)
    loop_kernel[(1,)](x, out, N=128, WHICH=which, backend=BACKEND)
    loop_kernel[(1,)](x, reference, N=128, WHICH=which, backend="interp")
    np.testing.assert_array_equal(out, reference)


def test_unroll_item_and_target_info():
    out = np.zeros(5, np.int32)
    unroll_kernel[(1,)](out, -5, 17, STEP=3, UNROLL=4, backend=BACKEND)
    counters = range(-5, 17, 3)
    assert out[0] == sum(i * i for i in counters) and list(out[1:]) == [sum(counters)] * 4
    value = np.zeros(1, np.float32)
    item_kernel[(1,)](np.float32([-2.5]), value, SHAPE=(1, 1), backend=BACKEND)
    assert value[0] == -5.0
    kind = np.zeros(1, np.int32)
    target_kernel[(1,)](kind, backend=BACKEND)
    expected = {"nvidia": (1, 11), "amd": (2, 12)}.get(BACKEND, (3,))  # others: neither
    assert kind[0] in expected
