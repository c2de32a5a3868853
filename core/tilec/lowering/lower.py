"""The entry point of the LLVM lowering: one gir kernel (`func.func`) -> an LLVM module.

The kernel ABI (see the gir contract): `define ptx_kernel void @name(...)` (or the target's
equivalent) with one parameter per function argument, in order, then those the target adds
(`TargetInfo.added_parameters`: NVIDIA's tensor maps); pointers live in the target's
global address space; one-dimensional blocks of `num_warps * threads_per_warp` threads.

The function has two blocks to begin with: `entry`, the prologue, which holds what is computed
once (thread ids, per-dimension thread offsets; see `LoweringContext.prologue`) and ends in a
branch to `body`, where the ops are lowered in order.
"""

from __future__ import annotations

import attrs
from llvmlite import ir

from tilec.dialects.func import FuncOp
from tilec.dialects.scf import ConditionOp, YieldOp
from tilec.dialects.tile import IntToPtrOp, ReduceOp, ScanOp
from tilec.ir import type_names
from tilec.ir.core import Block, Operation, Value
from tilec.ir.traits import MemoryRead, MemoryWrite
from tilec.ir.types import PointerType, Type, element_type
from tilec.layout.axis_info import analyze_axis_info
from tilec.lowering import warp_specialize
from tilec.lowering.context import LoweringContext, LoweringError, llvm_type
from tilec.lowering.target import TargetInfo


@attrs.frozen
class LoweredKernel:
    """A kernel in LLVM IR and the facts its launcher needs."""

    llvm_ir: str
    name: str
    num_warps: int
    threads_per_warp: int
    shared_bytes: int
    params: list[str]
    """Triton signature types of the parameters, in order: `*fp32`, `i32`, ..."""
    written: list[int]
    """Indices of the pointer parameters the kernel may write through."""
    metadata: dict = attrs.field(factory=dict)
    """The launch metadata of the parameters the target added after `params`
    (`TargetInfo.added_metadata`): `{}` for most kernels."""


def lower_module(module: Operation, target_info: TargetInfo, kernel_name: str) -> LoweredKernel:
    """Lower the gir kernel `kernel_name` of `module` to LLVM IR for `target_info`."""
    func = _find_kernel(module, kernel_name)
    num_warps = _int_attr(func, "gpu.num_warps")
    threads_per_warp = _int_attr(func, "gpu.threads_per_warp")
    if threads_per_warp != target_info.threads_per_warp:
        raise LoweringError(
            f"kernel @{kernel_name} was laid out for {threads_per_warp} threads a warp, but the "
            f"target has {target_info.threads_per_warp}; run the gir stage for this target"
        )
    args = list(func.entry_block.args)
    added = target_info.added_parameters(func)
    llmodule = ir.Module(name=kernel_name, context=ir.Context())  # its own named types
    own = [llvm_type(a.type, target_info) for a in args]
    fn_type = ir.FunctionType(ir.VoidType(), own + [t for _, t in added])
    fn = target_info.define_kernel(llmodule, kernel_name, fn_type)
    prologue = fn.append_basic_block("entry")
    body = fn.append_basic_block("body")
    ctx = LoweringContext(llmodule, fn, ir.IRBuilder(body), target_info, num_warps)
    ctx.axis_info = analyze_axis_info(func)
    for arg, llarg in zip(args, fn.args[: len(args)], strict=True):
        if arg.name_hint:
            llarg.name = arg.name_hint
        ctx.set(arg, llarg)
    ctx.added_args = {key: fn.args[len(args) + i] for i, (key, _) in enumerate(added)}
    ctx.scratch_plan.start(func.entry_block)
    producers = warp_specialize.producer_warps(func)
    specialized = warp_specialize.begin(ctx, producers) if producers else None
    try:
        lower_block(ctx, func.entry_block)
    finally:
        target_info.barrier_threads = None
    ctx.place_tail()  # before `finish`, whose registers depend on the shared memory
    if specialized is None:
        ir.IRBuilder(prologue).branch(body)
    else:  # the producer warps' blocks (docs/tma.md step 5)
        warp_specialize.finish(ctx, specialized, prologue, body)
    num_threads = (num_warps + producers) * threads_per_warp
    target_info.finalize_kernel(llmodule, fn, num_threads, ctx.shared_bytes)
    return LoweredKernel(
        llvm_ir=str(llmodule),
        name=kernel_name,
        num_warps=num_warps + producers,
        threads_per_warp=threads_per_warp,
        shared_bytes=ctx.shared_bytes,
        params=[signature_type(a.type) for a in args],
        written=written_parameters(func),
        metadata=target_info.added_metadata([key for key, _ in added]) if added else {},
    )


def lower_block(ctx: LoweringContext, block: Block) -> None:
    """Lower every op of `block` in order at the context's builder (terminators included)."""
    for op in block.ops:
        ctx.lower_op(op)


def signature_type(t: Type) -> str:
    """The Triton signature spelling of a parameter type: `*fp32`, `i32`, `u8`, `bf16`, `i1`."""
    try:
        return type_names.signature_type(t)
    except ValueError as error:
        raise LoweringError(str(error)) from None


def written_parameters(func: FuncOp) -> list[int]:
    """The pointer parameters that a store or atomic may write through.

    A may-alias over-approximation: every pointer derives from the parameters of all pointer
    operands of the op that makes it (and of the yields of its regions, for loops and branches);
    a pointer read from memory or made from an integer may point anywhere.
    """
    args = list(func.entry_block.args)
    pointer_args = [i for i, a in enumerate(args) if isinstance(a.type, PointerType)]
    everything = frozenset(pointer_args)
    derived: dict[Value, frozenset[int]] = {a: frozenset([i]) for i, a in enumerate(args)}

    def sources(value: Value) -> frozenset[int]:
        if not isinstance(element_type(value.type), PointerType):
            return frozenset()  # integers carry no provenance (int_to_ptr is "anything")
        return derived.get(value, frozenset())

    changed = True
    while changed:
        changed = False
        for op in func.walk():
            if op is func:
                continue
            inflow = frozenset().union(*(sources(v) for v in op.operands))
            if op.has_trait(MemoryRead) or isinstance(op, IntToPtrOp):
                inflow = everything  # a pointer read from memory or made from an integer
            for region in op.regions:
                for block in region.blocks:
                    last = block.last_op
                    if isinstance(last, (YieldOp, ConditionOp)):
                        inflow = inflow.union(*(sources(v) for v in last.operands))
            targets = list(op.results) + [
                a for region in op.regions for block in region.blocks for a in block.args
            ]
            if isinstance(op, (ReduceOp, ScanOp)):
                targets = list(op.results)
            for value in targets:
                if isinstance(element_type(value.type), PointerType) and not inflow <= sources(
                    value
                ):
                    derived[value] = sources(value) | inflow
                    changed = True
    written: set[int] = set()
    for op in func.walk():
        if op.has_trait(MemoryWrite):
            written |= sources(op.operands[0])  # a MemoryWrite op's pointer is its first operand
    return sorted(written & everything)


def _find_kernel(module: Operation, kernel_name: str) -> FuncOp:
    functions = [op for op in module.walk() if isinstance(op, FuncOp)]
    for func in functions:
        if func.name_str == kernel_name:
            return func
    names = ", ".join("@" + f.name_str for f in functions)
    raise LoweringError(f"no function @{kernel_name} to lower; the module has {names or 'none'}")


def _int_attr(func: FuncOp, key: str) -> int:
    attr = func.attributes.get(key)
    if attr is None:
        raise LoweringError(
            f"kernel @{func.name_str} has no '{key}' attribute: lower gir (after layout "
            "assignment), not tir"
        )
    return int(attr.value)  # type: ignore[attr-defined]
