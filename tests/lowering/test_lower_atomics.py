"""Atomics: only owners act on a replicated layout, replicas get the owner's old value, masks,
orderings and scopes, Triton's float max (integer atomics on the bits), compare-and-swap, a scalar
counter; NVIDIA's Triton-spelled `atom`s and the core's LLVM atomics of other targets."""

from __future__ import annotations

import numpy as np
import pytest
from gir_check import KINDS, compare_with_interp, module, ptx_of, runner

from tilec.lowering import lower_module
from tilec.lowering.target import TargetInfo
from tilec_nvidia.target_info import NvidiaTargetInfo

RNG = np.random.default_rng(3)


def _args() -> list:
    rng = np.random.default_rng(4)
    floats = [rng.standard_normal(64).astype(np.float32) for _ in range(2)]
    mx = rng.standard_normal(64).astype(np.float32)
    mx[3] = np.nan  # Triton's order: a NaN with the sign bit clear is above every value
    mx[5] = -np.float32(np.nan)  # with it set, below every value
    mx[6], mx[7] = 0.0, -0.0  # -0.0 below +0.0
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
    x, mx = start[1], start[3]  # the max adds x (argument 1) into mx
    assert np.isnan(got[3][3])  # masked float max (n = 40): the NaN in memory stays
    assert got[3][5] == x[5] and got[3][6] == max(0.0, x[6])  # -NaN: any value is larger
    assert x[7] < 0 and got[3][7] == 0 and np.signbit(got[3][7])  # -0.0 is above x[7]
    np.testing.assert_array_equal(got[3][40:], mx[40:])  # masked off


def test_nvidia_atomics_are_tritons_atom_instructions():
    """tl.atomic_* on NVIDIA: one `atom` each with Triton's spelling, the order and scope in the
    instruction (Triton's own test_atomic_rmw/test_atomic_cas read `atom.global.gpu.acq_rel`
    and `atom.global.acq_rel` in the PTX), no fences; float max as a signed max and an unsigned
    min of the bits; assembled by ptxas where it is installed (`ptx_of`)."""
    lowered = lower_module(module("atomics.gir"), NvidiaTargetInfo(), "atomics")
    ir = lowered.llvm_ir
    assert "fence" not in ir and "atomicrmw" not in ir and "cmpxchg" not in ir
    assert lowered.written == [0, 2, 3, 4, 6, 7, 8, 9]
    ptx = ptx_of("atomics.gir")
    assert "fence" not in ptx
    for form in (
        "atom.global.gpu.acq_rel.add.f32",  # sem acq_rel, scope gpu: Triton's defaults
        "atom.global.cta.relaxed.max.s32",  # float max, sign bit clear
        "atom.global.cta.relaxed.min.u32",  # float max, sign bit set
        "atom.global.sys.release.min.s32",
        "atom.global.acq_rel.gpu.cas.b32",
        "atom.global.gpu.acq_rel.add.u32",  # the scalar counter
    ):
        assert form in ptx, form


class _LLVMAtomics(NvidiaTargetInfo):
    """NVIDIA without its own atomics: the core's LLVM path, as a target without the hooks."""

    atomic_rmw = TargetInfo.atomic_rmw
    atomic_cas = TargetInfo.atomic_cas


def test_llvm_atomics_carry_orderings_and_scopes():
    lowered = lower_module(module("atomics.gir"), _LLVMAtomics(), "atomics")
    ir = lowered.llvm_ir
    assert 'fence syncscope("device") release' in ir
    assert "atomicrmw fadd ptr addrspace(1)" in ir and 'syncscope("device") monotonic' in ir
    assert "atomicrmw max ptr addrspace(1)" in ir and "atomicrmw umin ptr addrspace(1)" in ir
    assert "fmax" not in ir and 'syncscope("block") monotonic' in ir
    assert "cmpxchg ptr addrspace(1)" in ir and 'syncscope("device") acq_rel acquire' in ir
