"""Float8 operands whose rows no vector can load (K and the strides odd: the sweep's e4m3
4095^3 matmul, issue 23). Each thread holds 4 consecutive bytes of a row
(`tilec.layout.blocked.UNALIGNED_BYTES`), loaded one by one from one pointer plus constants,
not a loop-carried pointer a byte (96 of them, 192 registers, spilled, at 64x128x64 with 4
warps), and the ring's synchronous copies issue every load of a tile before its stores, so
that its loads are in flight together. The result is checked on the CPU wgmma emulator by
test_lower_wgmma_fp8.test_unaligned_k_on_the_emulator (and here at the sweep's config)."""

from __future__ import annotations

import re

import numpy as np
from fp8_matmul_kernels import compile_fp8
from gir_check import needs_ptxas
from test_attention_bwd_sm90 import _ptx_loops
from test_lower_wgmma_fp8 import _ptxas, run_on_emulator

BLOCKS = (64, 128, 64)  # the sweep's pick for e4m3 4095^3, 4 warps, 4 stages


def _kernel():
    return compile_fp8("fp8e4nv", "fp8e4nv", BLOCKS, 4, 4, divisible=False)


def test_a_thread_holds_four_unaligned_bytes_of_a_row():
    gir = _kernel().asm["gir"]
    pointers = set(re.findall(r"tensor<\d+x\d+x!tile\.ptr<f8E4M3FN>, #(\w+)>", gir))
    assert pointers, gir
    for name in pointers:
        layout = re.search(rf"^#{name} = .*sizePerThread = \[(\d+), (\d+)\]", gir, re.M)
        assert sorted(map(int, layout.groups())) == [1, 4], layout.group(0)


def test_the_byte_copies_do_not_spill_and_load_before_they_store():
    needs_ptxas()
    ptx = _kernel().asm["ptx"]
    assert "0 bytes spill stores" in _ptxas(ptx)
    loop = max(_ptx_loops(ptx), key=len).splitlines()
    loads = [i for i, line in enumerate(loop) if "ld.global" in line]
    stores = [i for i, line in enumerate(loop) if line.startswith("st.shared")]
    # A's 64x64 bytes are 32 a thread, B's 64x128 64: each tile's loads, then its stores
    assert len(loads) == 96 and len([i for i in loads if i < min(stores)]) == 32


def test_the_sweep_config_on_the_emulator():
    """M, N, K = 70, 130, 200: ragged everywhere, four K blocks, the last masked."""
    c, expected = run_on_emulator(_kernel(), "fp8e4nv", "fp8e4nv", 70, 130, 200, BLOCKS)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-3)
