"""Error texts that Triton 3.6's language tests read (`re.search` over the error or its
`__cause__`): a launch's CompilationError has the message as its cause, as Triton's has its
semantic error, and the messages carry Triton's wording."""

import numpy as np
import pytest
from compat_cause_kernels import triton_error_texts

import tilec


@pytest.mark.parametrize(
    ("which", "text"),
    [
        ("program_id", "program_id axis must be 0, 1, or 2 but got 20"),
        ("axis_low", "invalid axis -3. Expected -2 <= axis < 2"),
        ("axis_high", "invalid axis 2"),
        ("axis_of_scalar", "invalid axis 1"),
        ("axes_repeated", "duplicate axes, normalized axes = [0, 0]"),
        ("scalar_overflow", "out of range"),
    ],
)
def test_the_cause_of_a_launch_error_says_what_triton_says(which, text):
    x = np.zeros(4, np.int32)
    with pytest.raises(tilec.CompilationError) as info:
        triton_error_texts[(1,)](x, WHICH=which, backend="interp")
    assert text in str(info.value.__cause__), info.value
    assert text in str(info.value)  # and the located error says it too
    assert "triton_error_texts" not in str(info.value.__cause__)  # the bare message
