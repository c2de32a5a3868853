"""Hopper's warpgroup tensor cores (sm_90a): `wgmma.mma_async` and its fence, commit and wait.

`wgmma.mma_async` has no LLVM 22 intrinsic: it is inline PTX, in the form the tensor-core note
verified with ptxas (`m64nNk16`, f32 accumulators tied to the outputs, A and B as shared-memory
matrix descriptors, scale-d as a predicate set from a register), `m64nNk8.f32.tf32.tf32` for
f32 operands, which has no transpose immediates (its operands are K-major) and reads the f32
bits as tf32 (the tensor cores drop the 13 low mantissa bits), and `m64nNk32.f32.{e4m3,e5m2}.
{e4m3,e5m2}` for float8 operands (any pair; K-major, no transpose immediates either). The wait is inline PTX too, with
the accumulators threaded through it (as Triton's `warp_group_dot_wait`), so that LLVM cannot move
a read of them above it; the fence and the commit are intrinsics. Every form is checked against
`tilec_nvidia.capabilities` first: LLVM aborts the process on a wgmma for any arch but sm_90a.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from llvmlite import ir

from tilec.lowering.context import F32, I32, I64, LoweringError, call_intrinsic
from tilec.lowering.target import TargetInfo
from tilec_nvidia.capabilities import require

VOID = ir.VoidType()
WGMMA_K = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32}
"""The instruction's K for each operand type (32 bytes of operands)."""
WGMMA_DTYPES = tuple(WGMMA_K)

_IN_FLIGHT: weakref.WeakKeyDictionary[ir.Block, int] = weakref.WeakKeyDictionary()
"""Per LLVM block: at most how many wgmma groups are in flight at its end, where a `wgmma_wait`
earlier in the same block says so and no group was committed since; a block not listed knows
nothing (its code may follow any other)."""


def registers_type(builder: ir.IRBuilder, element: ir.Type, count: int) -> ir.Type:
    """The struct of `count` `element` registers that an inline-asm wgmma, fence or wait returns,
    as a named type of the builder's module (`%wgmma.f32x128`): a literal `{float, ...}` would be
    written out in full in the LLVM IR by each of the hundreds of `extractvalue`s that read it (about
    1 MB of text for a matmul 128x256x64, printed by llvmlite and parsed again by LLVM)."""
    kind = "f32" if element == F32 else str(element)
    named = builder.module.context.get_identified_type(f"wgmma.{kind}x{count}")
    if named.is_opaque:
        named.set_body(*[element] * count)
    return named


def wgmma(
    target: TargetInfo,
    builder: ir.IRBuilder,
    n: int,
    dtype: str,
    desc_a: ir.Value,
    desc_b: ir.Value,
    acc: Sequence[ir.Value],
    transpose_a: bool,
    transpose_b: bool,
    b_dtype: str | None = None,
) -> list[ir.Value]:
    """`NvidiaTargetInfo.wgmma`: issue one asynchronous warpgroup `m64n{n}k{K}` (`dtype` inputs:
    "f16" or "bf16" with K = 16, "tf32" with K = 8, "e4m3" or "e5m2" with K = 32, B's `b_dtype`
    where it differs (e4m3 with e5m2); tf32 and float8 always K-major; f32 accumulators) on
    shared-memory matrix descriptors (i64) of A (or a list of this thread's 4 i32 registers of
    A, mma.sync's A fragment) and B (K-major, or MN-major with `transpose_a` / `transpose_b`),
    accumulating onto this thread's `acc` (n / 2 registers, in `#gpu.mma` version 3 order);
    returns the accumulator registers."""
    require(target.arch, "wgmma", "wgmma.mma_async")
    b_dtype = b_dtype or dtype
    if dtype not in WGMMA_K:
        raise LoweringError(f"wgmma takes f16, bf16, tf32, e4m3 or e5m2 operands, not {dtype}")
    if b_dtype != dtype and {dtype, b_dtype} != {"e4m3", "e5m2"}:
        raise LoweringError(f"wgmma has no form for {dtype} with {b_dtype} operands")
    k = WGMMA_K[dtype]
    if not 8 <= n <= 256 or n % 8:
        raise LoweringError(f"wgmma m64nNk{k} needs N a multiple of 8 up to 256, got {n}")
    regs = n // 2
    if len(acc) != regs:
        raise LoweringError(f"wgmma m64n{n}k{k} has {regs} accumulators per thread, got {len(acc)}")
    registers = isinstance(desc_a, list | tuple)  # A from registers: 4 i32, no transpose bit
    transposable = dtype in ("f16", "bf16")  # the PTX ISA's imm-trans-a/b: 16-bit types only
    if not transposable and (transpose_a or transpose_b or (registers and dtype == "tf32")):
        raise LoweringError(f"wgmma reads {dtype} operands K-major (tf32 from shared memory)")
    outs = ",".join(f"${i}" for i in range(regs))
    a_count = 4 if registers else 1
    first = regs * 2  # operands count outputs first
    a = ",".join(f"${first + i}" for i in range(a_count))
    b, scale = first + a_count, first + a_count + 1
    a_text = f"{{{a}}}" if registers else a
    bits = f"{int(transpose_b)}" if registers else f"{int(transpose_a)}, {int(transpose_b)}"
    immediates = f"1, 1, {bits}" if transposable else "1, 1"
    text = (
        "{\n.reg .pred p;\n"
        f"setp.ne.b32 p, ${scale}, 0;\n"
        f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{dtype}.{b_dtype} "
        f"{{{outs}}}, {a_text}, ${b}, p, {immediates};\n}}"
    )
    a_constraints = ["r"] * 4 if registers else ["l"]
    constraints = ",".join(
        ["=f"] * regs + [str(i) for i in range(regs)] + a_constraints + ["l", "r"]
    )
    a_types = [I32] * 4 if registers else [I64]
    fn_type = ir.FunctionType(
        registers_type(builder, F32, regs), [F32] * regs + a_types + [I64, I32]
    )
    asm = ir.InlineAsm(fn_type, text, constraints, side_effect=True)
    a_args = list(desc_a) if registers else [desc_a]  # type: ignore[arg-type]
    result = builder.call(asm, [*acc, *a_args, desc_b, I32(1)])
    return [builder.extract_value(result, i) for i in range(regs)]


def wgmma_fence(
    target: TargetInfo, builder: ir.IRBuilder, registers: Sequence[ir.Value] = ()
) -> list[ir.Value]:
    """`wgmma.fence`, ordering earlier register and shared-memory accesses before the wgmmas that
    follow; `registers` (i32: A fragments packed for the wgmmas that follow) are threaded
    through it, so that they are written before it, as the PTX ISA asks of wgmma's register
    operands, and not sunk between the wgmmas."""
    require(target.arch, "wgmma", "wgmma.fence")
    if not registers:
        call_intrinsic(builder, "llvm.nvvm.wgmma.fence.sync.aligned", VOID, [])
        return []
    regs = len(registers)
    constraints = ",".join(["=r"] * regs + [str(i) for i in range(regs)])
    fn_type = ir.FunctionType(registers_type(builder, I32, regs), [I32] * regs)
    fence = ir.InlineAsm(fn_type, "wgmma.fence.sync.aligned;", constraints, side_effect=True)
    result = builder.call(fence, list(registers))
    return [builder.extract_value(result, i) for i in range(regs)]


def wgmma_commit(target: TargetInfo, builder: ir.IRBuilder) -> None:
    """Close the wgmmas issued since the last commit into a group."""
    require(target.arch, "wgmma", "wgmma.commit_group")
    call_intrinsic(builder, "llvm.nvvm.wgmma.commit_group.sync.aligned", VOID, [])
    # A count of the groups committed since a wait would let the wait after this commit go
    # too (the attention forward's after P @ V), but ptxas then allocated the backward's d64
    # kernels worse (spills 24/20 -> 48/48 bytes): only waits with no commit since go.
    _IN_FLIGHT.pop(builder.block, None)


def wgmma_wait(
    target: TargetInfo, builder: ir.IRBuilder, acc: Sequence[ir.Value], pending: int
) -> list[ir.Value]:
    """Wait until at most `pending` wgmma groups are in flight; returns `acc`, threaded through
    the wait so that no read of it moves above it. Where an earlier wait of the same LLVM block,
    with no commit since, already leaves at most `pending` groups in flight (an attention loop's
    wait for P @ V of the last iteration right after the one for Q K^T), no `wgmma.wait_group`
    is emitted (each is a warpgroup-wide synchronization); `acc` is still threaded, through an
    empty asm statement ordered after that earlier wait."""
    require(target.arch, "wgmma", "wgmma.wait_group")
    block = builder.block
    redundant = _IN_FLIGHT.get(block, pending + 1) <= pending
    _IN_FLIGHT[block] = min(pending, _IN_FLIGHT.get(block, pending))
    if not acc:
        if not redundant:
            call_intrinsic(builder, "llvm.nvvm.wgmma.wait_group.sync.aligned", VOID, [I64(pending)])
        return []
    regs = len(acc)
    constraints = ",".join(["=f"] * regs + [str(i) for i in range(regs)])
    fn_type = ir.FunctionType(registers_type(builder, F32, regs), [F32] * regs)
    text = "" if redundant else f"wgmma.wait_group.sync.aligned {pending};"
    result = builder.call(ir.InlineAsm(fn_type, text, constraints, side_effect=True), list(acc))
    return [builder.extract_value(result, i) for i in range(regs)]


def fence_async_shared(target: TargetInfo, builder: ir.IRBuilder) -> None:
    """Make this thread's shared-memory writes visible to the async proxy (wgmma)."""
    require(target.arch, "wgmma", "fence.proxy.async.shared::cta")
    call_intrinsic(builder, "llvm.nvvm.fence.proxy.async.shared_cta", VOID, [])


__all__ = [
    "WGMMA_DTYPES",
    "fence_async_shared",
    "registers_type",
    "wgmma",
    "wgmma_commit",
    "wgmma_fence",
    "wgmma_wait",
]
