"""The device side of TMA (docs/tma.md): the PTX a kernel runs to copy a box of a tensor from
global to shared memory with `cp.async.bulk.tensor`, completed on an mbarrier.

Every instruction is inline PTX, listed in `INSTRUCTIONS` with the feature (`tilec_nvidia.arch`)
and PTX ISA version it needs, checked before anything is emitted: LLVM 22 has intrinsics for
some of them (`llvm.nvvm.cp.async.bulk.tensor.g2s.tile.Nd`, whose operands changed between LLVM
releases: a shared::cluster destination, a cta_group flag), and an intrinsic or operand LLVM
does not know aborts the process, where inline PTX is assembled by ptxas, which reports.

One copy of a box (`load_box`):

    mbarrier.init            once, by one thread, then fence.proxy.async + bar.sync (`init`)
    prefetch.tensormap       once a kernel, any thread (`prefetch`)
    mbarrier.arrive.expect_tx by the issuing thread: the bytes the copies will bring
    cp.async.bulk.tensor.Nd   by the issuing thread, one a box, coordinates innermost first
    mbarrier.try_wait.parity  every reading thread, until the phase completes (`wait`)

A barrier is reused by flipping the parity it waits for (0, 1, 0, ...): the n-th completion of
one barrier is waited for with parity n % 2. The tensor map is the address of the kernel's
128-byte grid-constant parameter (`tensor_map_parameter`), generic (LLVM's `cvta.param`).
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from tilec.lowering.context import I32, LoweringError
from tilec_nvidia.cache_hints import require_ptx_version
from tilec_nvidia.capabilities import require

TMA_PTX_VERSION = 80
"""cp.async.bulk.tensor, mbarrier.expect_tx and prefetch.tensormap: PTX ISA 8.0."""

INSTRUCTIONS = {
    "init": "mbarrier.init.shared::cta.b64",
    "inval": "mbarrier.inval.shared::cta.b64",
    "fence_init": "fence.proxy.async.shared::cta",
    "prefetch": "prefetch.tensormap",
    "expect": "mbarrier.arrive.expect_tx.shared::cta.b64",
    "arrive": "mbarrier.arrive.shared::cta.b64",
    "copy": "cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes",
    "wait": "mbarrier.try_wait.parity.shared::cta.b64",
    "store": "cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group",
    "commit": "cp.async.bulk.commit_group",
    "wait_group": "cp.async.bulk.wait_group",
}
"""The PTX of each step; every one needs the `tma` feature (sm_90 and later) and PTX 8.0."""

MAX_RANK = 5
VOID = ir.VoidType()
I64 = ir.IntType(64)
MAP_TYPE = ir.ArrayType(ir.IntType(8), 128)


def _check(target_arch: str, builder: ir.IRBuilder, step: str) -> str:
    require(target_arch, "tma", INSTRUCTIONS[step].format(rank="N"))
    require_ptx_version(builder.module, TMA_PTX_VERSION)
    return INSTRUCTIONS[step]


def _asm(builder: ir.IRBuilder, text: str, constraints: str, operands: Sequence[ir.Value],
         result: ir.Type = VOID) -> ir.Value:  # fmt: skip
    fn_type = ir.FunctionType(result, [o.type for o in operands])
    return builder.call(ir.InlineAsm(fn_type, text, constraints, side_effect=True), operands)


def tensor_map_parameter(function: ir.Function, index: int) -> ir.Argument:
    """Make `function`'s argument `index` (a `ptr`) the 128-byte tensor map: `byval([128 x i8])
    align 64` and `nvvm.grid_constant`, which NVPTX emits as `.param .align 64 .b8 [128]` read
    in place (its generic address, never a copy in local memory)."""
    arg = function.args[index]
    if not isinstance(arg.type, ir.PointerType):
        raise LoweringError(f"a tensor map parameter is a pointer, got {arg.type}")
    attributes = _TensorMapAttributes(["byval", _GRID_CONSTANT])
    attributes.align = 64
    arg.attributes = attributes
    return arg


_GRID_CONSTANT = '"nvvm.grid_constant"'


class _TensorMapAttributes(ir.values.ArgumentAttributes):
    """llvmlite's argument attributes, with `byval` of the map's type (llvmlite spells it from
    a typed pointer's pointee, which an opaque `ptr` has not) and LLVM's `nvvm.grid_constant`
    string attribute (LLVM 21 and later; the `!nvvm.annotations` entry before)."""

    _known = ir.values.ArgumentAttributes._known | {_GRID_CONSTANT: False}

    def _expand(self, name: str, typ: ir.Type) -> str:
        return f"byval({MAP_TYPE})" if name == "byval" else name


def prefetch(arch: str, builder: ir.IRBuilder, tensor_map: ir.Value) -> None:
    """Bring the tensor map into the cache ahead of the first copy."""
    _asm(builder, f"{_check(arch, builder, 'prefetch')} [$0];", "l", [tensor_map])


def init(arch: str, builder: ir.IRBuilder, barrier: ir.Value, issuer: ir.Value,
         threads: int | None = None) -> None:  # fmt: skip
    """Initialize the 8-byte shared mbarrier `barrier` for one arrival (the issuing thread's),
    by the thread where `issuer` (i1) holds, then make it visible to the async proxy and to the
    block (fence, bar.sync; of the first `threads` threads where given: a warp-specialized
    kernel's consumers): before any copy completes on it."""
    text = f"@$1 {_check(arch, builder, 'init')} [$0], 1;"
    _asm(builder, text, "l,b", [barrier, issuer])
    _asm(builder, f"{_check(arch, builder, 'fence_init')};", "", [])
    _asm(builder, "bar.sync 0;" if threads is None else f"bar.sync 0, {threads};", "", [])


def arrive(arch: str, builder: ir.IRBuilder, barrier: ir.Value, issuer: ir.Value) -> None:
    """The thread where `issuer` holds arrives on `barrier` (a warp-specialized kernel's
    consumers releasing a ring slot: docs/tma.md step 5)."""
    _asm(builder, f"@$1 {_check(arch, builder, 'arrive')} _, [$0];", "l,b", [barrier, issuer])


def inval(arch: str, builder: ir.IRBuilder, barrier: ir.Value, issuer: ir.Value) -> None:
    """The thread where `issuer` holds invalidates `barrier` (no thread waits on it any more,
    no copy completes on it): its memory may then hold anything else."""
    _asm(builder, f"@$1 {_check(arch, builder, 'inval')} [$0];", "l,b", [barrier, issuer])


def fence_async_shared(arch: str, builder: ir.IRBuilder) -> None:
    """Order this thread's earlier generic-proxy accesses to shared memory before the async
    proxy's (TMA's writes into a buffer the threads used)."""
    _asm(builder, f"{_check(arch, builder, 'fence_init')};", "", [])


def expect_bytes(arch: str, builder: ir.IRBuilder, barrier: ir.Value, nbytes: int,
                 issuer: ir.Value) -> None:  # fmt: skip
    """The issuing thread arrives on `barrier`, which completes when `nbytes` have landed."""
    text = f"@$1 {_check(arch, builder, 'expect')} _, [$0], {nbytes};"
    _asm(builder, text, "l,b", [barrier, issuer])


def copy_box(arch: str, builder: ir.IRBuilder, destination: ir.Value, barrier: ir.Value,
             tensor_map: ir.Value, coordinates: Sequence[ir.Value],
             issuer: ir.Value) -> None:  # fmt: skip
    """The thread where `issuer` holds copies the box at `coordinates` (i32 elements, outermost
    first, as the kernel's offsets; emitted innermost first) into shared `destination` (aligned
    to 128 bytes, 1024 where swizzled 128B), completing on `barrier`."""
    rank = len(coordinates)
    opcode, coords = _box_instruction(arch, builder, "copy", rank, first=3)
    text = f"@${3 + rank} {opcode} [$0], [$2, {{{coords}}}], [$1];"
    operands = [destination, barrier, tensor_map, *reversed(coordinates), issuer]
    _asm(builder, text, "l,l,l," + "r," * rank + "b", operands)


def store_box(arch: str, builder: ir.IRBuilder, source: ir.Value, tensor_map: ir.Value,
              coordinates: Sequence[ir.Value], issuer: ir.Value) -> None:  # fmt: skip
    """The thread where `issuer` holds copies the box in shared `source` to the tensor at
    `coordinates` (as `copy_box`'s); elements outside the tensor are not written. The stores
    join the thread's bulk group (`commit_and_wait`)."""
    rank = len(coordinates)
    opcode, coords = _box_instruction(arch, builder, "store", rank, first=2)
    text = f"@${2 + rank} {opcode} [$1, {{{coords}}}], [$0];"
    operands = [source, tensor_map, *reversed(coordinates), issuer]
    _asm(builder, text, "l,l," + "r," * rank + "b", operands)


def _box_instruction(arch: str, builder: ir.IRBuilder, kind: str, rank: int,
                     first: int) -> tuple[str, str]:  # fmt: skip
    """The checked opcode of a box `kind` ("copy", "store") of `rank`, and its coordinates'
    operand list from inline-asm operand `first` on."""
    if not 1 <= rank <= MAX_RANK:
        raise LoweringError(f"TMA copies boxes of rank 1 to {MAX_RANK}, not {rank}")
    opcode = _check(arch, builder, kind).format(rank=rank)
    return opcode, ", ".join(f"${first + i}" for i in range(rank))


def commit_and_wait(arch: str, builder: ir.IRBuilder, issuer: ir.Value) -> None:
    """The issuing thread closes its bulk group and waits until its stores have completed
    (not only read their source: a later load of the kernel may read what they wrote)."""
    _asm(builder, f"@$0 {_check(arch, builder, 'commit')};", "b", [issuer])
    _asm(builder, f"@$0 {_check(arch, builder, 'wait_group')} 0;", "b", [issuer])


def wait(arch: str, builder: ir.IRBuilder, barrier: ir.Value, parity: ir.Value) -> None:
    """Spin until `barrier`'s phase of `parity` (i32, 0 or 1) has completed: a loop around
    `mbarrier.try_wait.parity` (which itself waits a while) in LLVM IR."""
    opcode = _check(arch, builder, "wait")
    text = f"{{ .reg .pred p; {opcode} p, [$1], $2; selp.u32 $0, 1, 0, p; }}"
    function = builder.function
    loop = function.append_basic_block("tma.wait")
    done = function.append_basic_block("tma.ready")
    builder.branch(loop)
    builder.position_at_end(loop)
    ready = _asm(builder, text, "=r,l,r", [barrier, parity], I32)
    builder.cbranch(builder.icmp_unsigned("!=", ready, I32(0)), done, loop)
    builder.position_at_end(done)


def load_box(arch: str, builder: ir.IRBuilder, destination: ir.Value, barrier: ir.Value,
             tensor_map: ir.Value, coordinates: Sequence[ir.Value], nbytes: int,
             issuer: ir.Value, parity: ir.Value) -> None:  # fmt: skip
    """One box, `nbytes` long, copied into `destination` and waited for by every thread."""
    expect_bytes(arch, builder, barrier, nbytes, issuer)
    copy_box(arch, builder, destination, barrier, tensor_map, coordinates, issuer)
    wait(arch, builder, barrier, parity)


__all__ = ["INSTRUCTIONS", "commit_and_wait", "copy_box", "expect_bytes", "fence_async_shared",
           "init", "inval", "load_box", "prefetch", "store_box", "tensor_map_parameter", "wait"]  # fmt: skip
