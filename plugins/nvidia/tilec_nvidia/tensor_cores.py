"""The NVVM intrinsics of the tensor-core path: `mma.sync`, `ldmatrix` and `cp.async`.

Each is checked against `tilec_nvidia.capabilities` before it is emitted (LLVM aborts the process
on an intrinsic the target lacks). The forms are those of the tensor-core note's verified
snippets: `llvm.nvvm.mma.m16n8k16.row.col.f32.f32` takes f16 pairs as `<2 x half>`,
`llvm.nvvm.mma.m16n8k16.row.col.bf16` takes bf16 pairs as i32, `...m16n8k8.row.col.tf32`
(`mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`) one tf32 per i32,
`...m16n8k32.row.col.satfinite.s8` (`...m16n8k32.row.col.satfinite.s32.s8.s8.s32`, Triton 3.6's
form: each instruction's `C + A B` beyond the i32 range is clamped to it, where the interpreter's
i32 sums wrap; only an accumulator within 2^19 of the i32 limits or a K over 131072 gets there)
four s8 per i32 with i32 accumulators; the float8 forms
`mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32` (sm_89 and later, PTX ISA 8.4)
have no intrinsic and are inline PTX (`_float8_mma`), four float8 codes per i32; ldmatrix
returns i32 registers; `cp.async.cg.shared.global.16` and `cp.async.ca.shared.global.{4,8}`
(`.s` with a source size for the zero-fill of masked elements), `cp.async.commit.group` and
`cp.async.wait.group` (an immarg).

tf32 operands are passed as their f32 bits, as Triton passes them: the tensor cores ignore the 13
low mantissa bits (truncation toward zero), which the interpreter emulates. wgmma reads its
operands from shared memory, where no rounding instruction can reach them; mma.sync does the same
so that both paths, and the FMA fallback, compute the same products.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from tilec.layout.rules import MmaInstruction
from tilec.lowering.context import F16, F32, I32, LoweringError, call_intrinsic
from tilec.lowering.memory_hints import MemoryHints
from tilec.lowering.target import TargetInfo
from tilec_nvidia.cache_hints import require_ptx_version
from tilec_nvidia.capabilities import require

_MMA_NAMES = {
    ((16, 8, 16), "f16", "f32"): "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
    ((16, 8, 16), "bf16", "f32"): "llvm.nvvm.mma.m16n8k16.row.col.bf16",
    ((16, 8, 8), "tf32", "f32"): "llvm.nvvm.mma.m16n8k8.row.col.tf32",
    ((16, 8, 32), "i8", "i32"): "llvm.nvvm.mma.m16n8k32.row.col.satfinite.s8",
}
_V2F16 = ir.VectorType(F16, 2)
VOID = ir.VoidType()


def mma(
    target: TargetInfo,
    builder: ir.IRBuilder,
    instruction: MmaInstruction,
    a: Sequence[ir.Value],
    b: Sequence[ir.Value],
    c: Sequence[ir.Value],
) -> list[ir.Value]:
    """`TargetInfo.mma` of NVIDIA's targets: one mma.sync `instruction` on this lane's 4 A and
    2 B registers (i32, `kWidth` elements each) and 4 accumulators; returns the 4 results."""
    shape = "m{}n{}k{}".format(*instruction.shape)
    if len(a) != 4 or len(b) != 2 or len(c) != 4:
        raise LoweringError(
            f"mma {shape} takes 4 + 2 + 4 registers, got {len(a)}, {len(b)}, {len(c)}"
        )
    if instruction.operand in FLOAT8_MMA_OPERANDS:
        result = _float8_mma(builder, target.arch, instruction, [*a, *b, *c])
    else:
        key = (instruction.shape, instruction.operand, instruction.accumulator)
        name = _MMA_NAMES.get(key)
        if instruction.version != 2 or name is None:
            raise LoweringError(f"no NVVM intrinsic for the tensor-core instruction {instruction}")
        require(target.arch, "mma_v2", f"mma.sync.aligned.{shape}")
        if instruction.operand == "f16":
            a = [builder.bitcast(r, _V2F16) for r in a]
            b = [builder.bitcast(r, _V2F16) for r in b]
        accumulator = I32 if instruction.accumulator == "i32" else F32
        struct = ir.LiteralStructType([accumulator] * 4)
        result = call_intrinsic(builder, name, struct, [*a, *b, *c])
    return [builder.extract_value(result, i) for i in range(4)]


FLOAT8_MMA_OPERANDS = tuple(f"{a}.{b}" for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2"))
"""The operand pairs of mma.sync's float8 forms (A's type, B's), as `TensorCoreInstruction`s
name them."""
FLOAT8_MMA_PTX_VERSION = 84
"""PTX ISA 8.4 introduced mma.sync's e4m3/e5m2 forms."""


def _float8_mma(
    builder: ir.IRBuilder, arch: str, instruction: MmaInstruction, registers: list[ir.Value]
) -> ir.Value:
    """`mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32` (sm_89 and later,
    PTX ISA 8.4, which the module then asks for) on A's, B's and the accumulator's `registers`
    (four bytes a register, laid out as the s8 form's fragments); no NVVM intrinsic, so inline
    PTX. Returns the struct of the 4 results."""
    if (instruction.version, instruction.shape, instruction.accumulator) != (2, (16, 8, 32), "f32"):
        raise LoweringError(f"no float8 mma.sync form for {instruction}")
    require(arch, "mma_fp8", f"mma.sync.aligned.m16n8k32 of {instruction.operand}")
    require_ptx_version(builder.module, FLOAT8_MMA_PTX_VERSION)
    text = (
        f"mma.sync.aligned.m16n8k32.row.col.f32.{instruction.operand}.f32 "
        "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};"
    )
    constraints = ",".join(["=f"] * 4 + ["r"] * 6 + ["f"] * 4)
    fn_type = ir.FunctionType(ir.LiteralStructType([F32] * 4), [I32] * 6 + [F32] * 4)
    return builder.call(ir.InlineAsm(fn_type, text, constraints), registers)


def ldmatrix(
    target: TargetInfo, builder: ir.IRBuilder, address: ir.Value, count: int, transpose: bool
) -> list[ir.Value]:
    """`NvidiaTargetInfo.ldmatrix`: load `count` (1, 2, 4) 8x8 matrices of 16-bit elements from
    shared memory, lanes `8i..8i+7` giving the row addresses of matrix i (`address`, a shared
    pointer): as i32 registers, lane `l` getting row `l / 4`, elements `2 (l % 4)` and `+1` of
    each matrix (of its transpose with `transpose`).
    `tilec_nvidia.dot_operand` reads fragments with it where a target has it (a target
    without, such as a host emulator, gets element reads)."""
    if count not in (1, 2, 4):
        raise LoweringError(f"ldmatrix loads 1, 2 or 4 matrices, not {count}")
    require(target.arch, "ldmatrix", "ldmatrix.sync.aligned.m8n8")
    name = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if transpose else ''}.b16"
    if count == 1:
        return [call_intrinsic(builder, name, I32, [address])]
    result = call_intrinsic(builder, name, ir.LiteralStructType([I32] * count), [address])
    return [builder.extract_value(result, i) for i in range(count)]


def async_copy(
    target: TargetInfo,
    builder: ir.IRBuilder,
    dst: ir.Value,
    src: ir.Value,
    src_size: ir.Value | None,
    nbytes: int = 16,
    hints: MemoryHints | None = None,
) -> None:
    """`TargetInfo.async_copy` of NVIDIA's targets: `cp.async` of `nbytes`: 16 bytes bypass L1
    (`.cg`, as Triton's); 4 and 8 bytes exist only as `.ca` (cached in L1), whatever the
    pipelined load's cache modifier (as Triton's). An L2 cache policy (the load's eviction
    policy, which `tilec_nvidia.cache_hints.prepare` put in the `hints`) makes it
    `cp.async...L2::cache_hint`, which LLVM has no intrinsic for: inline asm."""
    policy = None if hints is None else hints.prepared
    if nbytes not in (4, 8, 16):
        raise LoweringError(f"cp.async copies 4, 8 or 16 bytes, not {nbytes}")
    cache = "cg" if nbytes == 16 else "ca"
    require(target.arch, "cp_async", f"cp.async.{cache}.shared.global")
    if policy is not None:
        size = src_size if src_size is not None else I32(nbytes)
        text = f"cp.async.{cache}.shared.global.L2::cache_hint [$0], [$1], {nbytes}, $2, $3;"
        fn_type = ir.FunctionType(VOID, [dst.type, src.type, I32, policy.type])
        asm = ir.InlineAsm(fn_type, text, "l,l,r,l", side_effect=True)
        builder.call(asm, [dst, src, size, policy])
        return
    name = f"llvm.nvvm.cp.async.{cache}.shared.global.{nbytes}"
    if src_size is None:
        call_intrinsic(builder, name, VOID, [dst, src])
        return
    call_intrinsic(builder, f"{name}.s", VOID, [dst, src, src_size])


def async_commit(target: TargetInfo, builder: ir.IRBuilder) -> None:
    require(target.arch, "cp_async", "cp.async.commit_group")
    call_intrinsic(builder, "llvm.nvvm.cp.async.commit.group", VOID, [])


def async_wait(target: TargetInfo, builder: ir.IRBuilder, pending: int) -> None:
    require(target.arch, "cp_async", "cp.async.wait_group")
    call_intrinsic(builder, "llvm.nvvm.cp.async.wait.group", VOID, [I32(pending)])


__all__ = ["FLOAT8_MMA_OPERANDS", "async_commit", "async_copy", "async_wait", "ldmatrix", "mma"]
