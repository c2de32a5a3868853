"""The tensor-core features of the arch table, and that they gate both layout assignment (the
instructions offered) and codegen (an intrinsic the target lacks is an error, never an abort)."""

from __future__ import annotations

import pytest
from llvmlite import ir

from tilec.lowering import LoweringError
from tilec.lowering.context import F32, I32
from tilec_nvidia.arch import ARCHS
from tilec_nvidia.backend import NvidiaBackend
from tilec_nvidia.capabilities import features, has, mma_instructions, require
from tilec_nvidia.target_info import NvidiaTargetInfo
from tilec_nvidia.tensor_core_instructions import TensorCoreInstruction


def test_features_by_arch():
    assert features("sm_70") == frozenset()
    assert features("sm_75") == {"ldmatrix"}
    assert features("sm_80") == {"ldmatrix", "mma_v2", "cp_async"}
    # fp8 cvt needs PTX 8.1 there: not emitted; float8 mma.sync asks for PTX 8.4 where used
    assert features("sm_89") == features("sm_80") | {"mma_fp8"}
    assert features("sm_90") == {
        "ldmatrix", "mma_v2", "mma_fp8", "cp_async", "stmatrix", "fp8_cvt", "tma"
    }  # fmt: skip
    assert features("sm_90a") == features("sm_90") | {"wgmma", "tensormap"}
    assert "wgmma" not in features("sm_100a") and "tensormap" not in features("sm_100a")
    assert all(features(arch.name) == arch.features for arch in ARCHS)


def test_features_come_from_the_arch_table():
    assert ARCHS.check("sm_90a").features == ARCHS.check("sm_90").features | {"wgmma", "tensormap"}
    with pytest.raises(ValueError, match="unsupported NVIDIA target 'sm_91'"):
        features("sm_91")


def test_unknown_feature_is_an_error():
    with pytest.raises(ValueError, match="unknown NVIDIA feature"):
        has("sm_90a", "tcgen05")


def test_require_names_the_instruction_and_the_targets():
    require("sm_80", "mma_v2", "mma.sync")
    with pytest.raises(LoweringError, match=r"mma.sync needs sm_80 and later; the target is sm_75"):
        require("sm_75", "mma_v2", "mma.sync")
    with pytest.raises(LoweringError, match=r"wgmma needs sm_90a; the target is sm_90"):
        require("sm_90", "wgmma", "wgmma")


def test_layout_rules_offer_mma_sync_from_sm_80_and_wgmma_on_sm_90a():
    backend = NvidiaBackend()
    assert backend.layout_rules("sm_75").mma_instructions == ()
    mma_sync = [
        (2, (16, 8, 16), "f16", "f32"),
        (2, (16, 8, 16), "bf16", "f32"),
        (2, (16, 8, 8), "tf32", "f32"),
        (2, (16, 8, 32), "i8", "i32"),
    ]
    wgmma = [
        (3, (64, 8, 32), "f16", "f32"),  # float8 inputs (their f16 conversions), as e4m3/e5m2
        (3, (64, 8, 16), "f16", "f32"),
        (3, (64, 8, 16), "bf16", "f32"),
        (3, (64, 8, 8), "tf32", "f32"),
    ]

    def offered(arch):
        rules = backend.layout_rules(arch).mma_instructions
        assert rules == mma_instructions(arch)
        return [(i.version, i.shape, i.operand, i.accumulator) for i in rules]

    fp8_mma_sync = [(2, (16, 8, 32), "f16", "f32")]  # float8 inputs, as e4m3/e5m2 (sm_89 on)
    assert offered("sm_80") == mma_sync
    assert offered("sm_89") == offered("sm_90") == fp8_mma_sync + mma_sync
    assert offered("sm_90a") == wgmma + fp8_mma_sync + mma_sync


def _builder() -> ir.IRBuilder:
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "k")
    return ir.IRBuilder(fn.append_basic_block())


def test_intrinsics_are_checked_before_llvm_sees_them():
    b = _builder()
    instruction = TensorCoreInstruction(2, (16, 8, 16), "f16", "f32")
    regs, acc = [I32(0)] * 4, [F32(0.0)] * 4
    with pytest.raises(LoweringError, match="needs sm_80"):
        NvidiaTargetInfo("sm_75").mma(b, instruction, regs, regs[:2], acc)
    with pytest.raises(LoweringError, match="needs sm_75"):
        NvidiaTargetInfo("sm_70").ldmatrix(
            b, ir.Constant(ir.PointerType(addrspace=3), None), 4, False
        )
    with pytest.raises(LoweringError, match="no NVVM intrinsic"):
        NvidiaTargetInfo("sm_90a").mma(
            b, TensorCoreInstruction(2, (16, 8, 8), "f32", "f32"), regs, regs[:2], acc
        )
    assert len(NvidiaTargetInfo("sm_80").mma(b, instruction, regs, regs[:2], acc)) == 4


@pytest.mark.parametrize(
    ("shape", "operand", "accumulator"), [((16, 8, 8), "tf32", "f32"), ((16, 8, 32), "i8", "i32")]
)
def test_tf32_and_int8_mma_are_checked_before_llvm_sees_them(shape, operand, accumulator):
    b = _builder()
    instruction = TensorCoreInstruction(2, shape, operand, accumulator)
    regs = [I32(0)] * 4
    acc = [I32(0)] * 4 if accumulator == "i32" else [F32(0.0)] * 4
    with pytest.raises(LoweringError, match=f"mma.sync.aligned.m16n8k{shape[2]} needs sm_80"):
        NvidiaTargetInfo("sm_75").mma(b, instruction, regs, regs[:2], acc)
    results = NvidiaTargetInfo("sm_80").mma(b, instruction, regs, regs[:2], acc)
    assert [r.type for r in results] == [acc[0].type] * 4
    text = str(b.module)
    assert f"llvm.nvvm.mma.m16n8k{shape[2]}.row.col" in text
    assert "llvm.nvvm.f2tf32" not in text  # tf32 operands go as f32 bits (the mma truncates)
