"""tl.device_print output and the compile-time errors of the newer language names."""

import numpy as np
import pytest
from lang_helpers import run
from language_kernels import (
    bad_propagate_nan,
    failing_static_assert,
    print_kernel,
    xor_sum_of_floats,
)

import tilec.language as tl
from tilec.frontend import CompilationError, compile_to_tir


def test_device_print_prints_every_program(capsys):
    x = np.arange(1, 5, dtype=np.int32) * 7
    run(print_kernel, [("*int32", x)], grid=(2,), N=4)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert all("x=" in line and "[ 7 14 21 28]" in line for line in lines), lines


@pytest.mark.parametrize(
    ("kernel", "message"),
    [
        (xor_sum_of_floats, "tl.xor_sum needs an integer tensor, got f32"),
        (bad_propagate_nan, "propagate_nan must be tl.PropagateNan.NONE or tl.PropagateNan.ALL"),
        (failing_static_assert, "static assertion failed: N must be a multiple of 3"),
    ],
)
def test_compile_errors_name_the_problem(kernel, message):
    with pytest.raises(CompilationError) as info:
        compile_to_tir(kernel, {"x_ptr": "*fp32"}, {"N": 4})
    assert message in str(info.value)
    assert "language_kernels.py" in str(info.value)


def test_propagate_nan_values_are_tritons():
    assert (int(tl.PropagateNan.NONE), int(tl.PropagateNan.ALL)) == (0, 0xFFFF)
