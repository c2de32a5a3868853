"""On the GPU: an int8 `tl.dot` whose accumulator sits at the i32 limits saturates, as Triton
3.6's `mma.sync...satfinite.s32.s8.s8.s32` does (tests/lowering/test_lower_mma_satfinite.py runs
the same case on the CPU emulator). The interpreter's i32 sums wrap instead, as Triton's
interpreter does: only such overflows tell them apart."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from test_lower_mma_satfinite import compiled, saturating_case

pytestmark = pytest.mark.gpu


def test_nvidia_int8_dot_saturates():
    args, expected = saturating_case(np.random.default_rng(6))
    kernel = compiled("nvidia")
    assert "satfinite.s32.s8.s8.s32" in kernel.asm["ptx"]  # mma.sync: this GPU's int8 dot
    kernel.run((1,), args)
    np.testing.assert_array_equal(args[2], expected)
