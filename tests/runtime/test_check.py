"""`check=True`: a backend's results compared with the interpreter's; int == 1 specialization."""

import numpy as np
import pytest
from frontend_kernels import add_kernel, softmax_kernel

import tilec
from tilec.runtime import check
from tilec_interp.backend import InterpBackend, InterpDriver

ADD_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}


class OffByOneDriver(InterpDriver):
    """Runs the interpreter, then corrupts one output element: a driver with a bug."""

    def __init__(self, index: int, delta: float):
        self.index, self.delta = index, delta

    def run(self, compiled, grid, args, stream=None):
        super().run(compiled, grid, args, stream)
        args[2][self.index] += self.delta


class OffByOneBackend(InterpBackend):
    name = "offbyone"

    def __init__(self, index: int = 1234, delta: float = 0.5):
        self.index, self.delta = index, delta

    def make_driver(self):
        return OffByOneDriver(self.index, self.delta)


def reference():
    return tilec.compile(add_kernel, ADD_SIGNATURE, {"BLOCK_SIZE": 1024}, backend="interp")


def add_args(rng, n=5000):
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    return [x, y, np.empty_like(x), n]


def test_check_names_kernel_argument_and_first_bad_index(rng):
    compiled = tilec.compile(
        add_kernel, ADD_SIGNATURE, {"BLOCK_SIZE": 1024}, backend=OffByOneBackend()
    )
    with pytest.raises(check.CheckError) as error:
        check.run_checked(compiled, (5,), add_args(rng), reference)
    message = str(error.value)
    assert "add_kernel" in message and "'output_ptr'" in message and "index 1234" in message
    assert "1 of 5000 elements differ" in message


def test_check_accepts_differences_within_tolerance(rng):
    backend = OffByOneBackend(delta=1e-7)
    compiled = tilec.compile(add_kernel, ADD_SIGNATURE, {"BLOCK_SIZE": 1024}, backend=backend)
    args = add_args(rng)
    check.run_checked(compiled, (5,), args, reference)
    np.testing.assert_allclose(args[2], args[0] + args[1], rtol=1e-6, atol=1e-6)


def test_check_compares_integers_exactly():
    expected = np.arange(10, dtype=np.int32)
    actual = expected.copy()
    actual[7] += 1
    with pytest.raises(check.CheckError, match="index 7: got 8, expected 7"):
        check._compare("k", "out", "i32", actual, expected)
    check._compare("k", "out", "i32", expected.copy(), expected)


def test_dot_tolerance_scales_with_the_largest_result():
    """A cancelled dot result is off by ulps of the array's sums (seen on the H100: 0.0051730
    against 0.0051839 where results reach 80), not of itself; plain fp32 stays strict."""
    expected = np.array([0.0051839, 80.0, -3.0], np.float32)
    actual = expected.copy()
    actual[0] = 0.0051730
    dot = {**check.TOLERANCES, "fp32": check.DOT_F32_TOLERANCE}
    check._compare("k", "c", "fp32", actual, expected, dot)
    with pytest.raises(check.CheckError, match=r"index 0: .* atol=1e-05\)"):
        check._compare("k", "c", "fp32", actual, expected)
    actual[0] = 0.0061839  # 1e-3 off: more than 1e-5 of 80
    with pytest.raises(check.CheckError, match=r"index 0: .* atol=0.0008\)"):
        check._compare("k", "c", "fp32", actual, expected, dot)


def test_check_option_on_interp_launch_runs(rng):
    x, y, out, n = add_args(rng)
    add_kernel[(5,)](x, y, out, n, BLOCK_SIZE=1024, check=True)
    np.testing.assert_array_equal(out, x + y)


def test_int_equal_to_one_is_compiled_in(rng):
    x = rng.standard_normal((3, 64), dtype=np.float32)
    y = np.empty_like(x)
    softmax_kernel[(3,)](y, x, 64, 64, 64, BLOCK=64)
    compiled = tilec.compile(
        softmax_kernel,
        {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_row_stride": "i32", "out_row_stride": "i32",
         "n_cols": "i32"},
        {"BLOCK": 64},
        backend="interp",
        equal_to_1=["in_row_stride"],
    )  # fmt: skip
    tir = compiled.asm["tir"]
    assert "tile.equal_to = 1 : i32" in tir
    # The stride multiplies nothing any more: program_id is used as the row offset directly.
    assert tir.count("arith.muli") == 1, tir
    one_row = rng.standard_normal((1, 64), dtype=np.float32)
    out = np.empty_like(one_row)
    softmax_kernel[(1,)](out, one_row, 1, 64, 64, BLOCK=64)  # in_row_stride == 1: specialized
    e = np.exp(one_row - one_row.max())
    np.testing.assert_allclose(out, e / e.sum(), rtol=1e-5)
