"""The one-wave cubin on the GPU (`tilec_nvidia.one_wave`): the column sum launched on grids that
fit one wave (its one-wave function) and that do not (its plain one), against torch, bit for bit
between the two (the same code, other registers), and the occupancy the driver computed. Needs
a GPU and ptxas: `pytest -m gpu tests/nvidia/test_one_wave_gpu.py`."""

from __future__ import annotations

import pytest
from test_one_wave import column_sum

from tilec_nvidia import driver as cuda
from tilec_nvidia.codegen import find_ptxas

torch = pytest.importorskip("torch", reason="needs PyTorch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(find_ptxas() is None, reason="no ptxas: no cubin to compare"),
]


@pytest.fixture(scope="module")
def gpu():
    cuda.reset_driver(None)
    return cuda.get_driver()


def launch(part, out, rows, cols):
    grid = ((cols + 127) // 128,)
    return column_sum[grid](part, out, rows, cols, BLOCK_ROWS=32, BLOCK_COLS=128)


@pytest.mark.parametrize("rows", [1, 31, 264, 1000])
def test_one_wave_and_many_waves_sum_the_same(gpu, rows):
    sms = gpu.properties.sm_count
    torch.manual_seed(rows)
    small_cols = 128 * 4  # 4 programs: one wave
    part = torch.randn(rows, small_cols, device="cuda")
    out = torch.full((small_cols,), float("nan"), device="cuda")
    compiled = launch(part, out, rows, small_cols)
    loaded = compiled.backend.driver.load(compiled, gpu)
    torch.testing.assert_close(out, part.double().sum(0).float(), rtol=1e-5, atol=1e-4)
    if rows == 1:  # specialized (`rows == 1`): one trip, no loop left, one cubin
        assert loaded.one_wave_function is None
        return
    assert loaded.one_wave_function is not None, "no one-wave cubin for the column sum"
    assert loaded.one_wave_programs >= sms and loaded.one_wave_programs % sms == 0
    # as many columns again as the one-wave function runs at once, and one program more: the
    # plain function; the first columns sum as they did
    wide_cols = 128 * (loaded.one_wave_programs + 1)
    wide = torch.randn(rows, wide_cols, device="cuda")
    wide[:, :small_cols] = part
    wide_out = torch.full((wide_cols,), float("nan"), device="cuda")
    launch(wide, wide_out, rows, wide_cols)
    torch.cuda.synchronize()
    torch.testing.assert_close(wide_out, wide.double().sum(0).float(), rtol=1e-5, atol=1e-4)
    assert torch.equal(wide_out[:small_cols], out)  # bit for bit: the same sums in order
