"""Error texts that Triton 3.6's language tests read (`re.search` over the error or its
`__cause__`): a launch's CompilationError has the message as its cause, as Triton's has its
semantic error, and the messages carry Triton's wording."""

import numpy as np
import pytest
from compat_cause_kernels import descriptor_block_kernel, triton_error_texts

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


@pytest.mark.parametrize(("dtype", "columns", "size"), [(np.int16, 4, "4 * 2 = 8"),
                                                        (np.int32, 2, "2 * 4 = 8")])  # fmt: skip
def test_a_descriptor_block_under_16_bytes_a_row_is_refused(dtype, columns, size):
    x = np.ones((16, 16), dtype)
    with pytest.raises(tilec.CompilationError) as info:
        descriptor_block_kernel[(1,)](x, COLUMNS=columns, backend="interp")
    text = f"Descriptor block shape must have at least 16 bytes in the last dimension, but got {size} bytes"
    assert text in str(info.value.__cause__)


@pytest.mark.parametrize(("dtype", "columns"), [(np.int16, 8), (np.int32, 4), (np.int8, 16)])
def test_a_descriptor_block_of_16_bytes_a_row_works(dtype, columns):
    x = np.ones((16, 16), dtype)
    descriptor_block_kernel[(1,)](x, COLUMNS=columns, backend="interp")
    assert (x[:8, :columns] == 0).all() and (x[8:] == 1).all() and (x[:, columns:] == 1).all()
