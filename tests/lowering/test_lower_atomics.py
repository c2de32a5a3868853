"""Atomics: only owners act on a replicated layout, replicas get the owner's old value, masks,
orderings and scopes, float max through a CAS loop, compare-and-swap, a scalar counter."""

from __future__ import annotations

import numpy as np
import pytest
from gir_check import KINDS, compare_with_interp, module, ptx_of, runner

from tilec.lowering import lower_module
from tilec_nvidia.target_info import NvidiaTargetInfo

RNG = np.random.default_rng(3)


def _args() -> list:
    rng = np.random.default_rng(4)
    floats = [rng.standard_normal(64).astype(np.float32) for _ in range(2)]
    mx = rng.standard_normal(64).astype(np.float32)
    mx[3] = np.nan  # fmax: NaN in memory loses
    return [
        *floats,
        np.zeros(64, np.float32),
        mx,
        rng.integers(-50, 50, 64).astype(np.int32),
        rng.integers(-50, 50, 64).astype(np.int32),
        rng.integers(0, 2, 64).astype(np.int32),
        np.zeros(64, np.int32),
        np.array([5], np.int32),
        np.zeros(64, np.int32),
        40,
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_atomics_match_the_interpreter(kind: str):
    got = compare_with_interp("atomics.gir", _args(), run=runner(kind))
    start = _args()
    np.testing.assert_array_equal(got[0], start[0] + start[1])  # added once, not per replica
    np.testing.assert_array_equal(got[2], start[0])  # the old values
    assert got[8][0] == 6 and (got[9] == 5).all()  # one scalar add, its old value everywhere


def test_orderings_scopes_and_ptx():
    lowered = lower_module(module("atomics.gir"), NvidiaTargetInfo(), "atomics")
    ir = lowered.llvm_ir
    assert 'fence syncscope("device") release' in ir
    assert "atomicrmw fadd ptr addrspace(1)" in ir and 'syncscope("device") monotonic' in ir
    assert "atomicrmw fmax" in ir and 'syncscope("block") monotonic' in ir
    assert "cmpxchg ptr addrspace(1)" in ir and 'syncscope("device") acq_rel acquire' in ir
    assert lowered.written == [0, 2, 3, 4, 6, 7, 8, 9]
    ptx = ptx_of("atomics.gir")
    assert "atom.global.add.f32" in ptx and "fence.acq_rel.gpu" in ptx
    assert "atom.relaxed.cta.global.cas.b32" in ptx  # fmax as a CAS loop
    assert "atom.global.min.s32" in ptx and "atom.global.add.u32" in ptx
