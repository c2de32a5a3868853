"""The `pipeline-loops` pass: a `num_stages` software pipeline of the loads that feed matrix units.

After Triton's Pipeliner, in its simplest schedule (two stages: the loads, then everything else),
for the matmul pattern. An `scf.for` (constant positive step) qualifies when its body holds
`tile.load`s whose only uses are `gpu.convert_layout`s to one matrix-unit operand layout (an
`OperandEncodingAttr`, such as NVIDIA's `#gpu.dot_op`) or shared-memory encoding (a
`SharedEncodingAttr`, such as `#gpu.nvmma_shared`), whose `other` is absent or zero and that
are not volatile, and whose pointers and
masks are computed in the body from the induction variable, loop invariants and loop-carried
values whose own updates depend on nothing else (the pointer increments `a_ptrs += BLOCK_K`).
With S = `num_stages` and D = S - 1 tiles in flight, the loop becomes:

- before it, a `tile.barrier`, a ring `gpu.local_alloc` of S slots per load, and a prologue that issues the copies
  of iterations 0..D-1 (`gpu.async_copy_global_to_local` into slots 0..D-1, each masked by its
  own mask and by `iv < ub`, then `gpu.async_commit_group`), advancing the loop-carried pointers;
- in each iteration i: `gpu.async_wait {num = D - 1}` and a `tile.barrier` (iteration i's tile
  has landed, and every thread has finished reading the slot the next copy overwrites), the
  copies of iteration i + D into slot (i + D) mod S (their masks and `iv + D * step < ub`, so a
  trip count unknown at compile time is handled: copies past the end write zeros nobody reads),
  a commit, then `gpu.local_load`s of slot i mod S in place of the conversions; the loop carries
  the pointers D iterations ahead and the slot index;
- after it, `gpu.async_wait {num = 0}` and `gpu.local_dealloc` (last allocated first).

Loads converted to a shared-memory encoding (the operands of an asynchronous dot,
`tilec.dialects.gpu_shared.AsyncDotOp`: NVIDIA's `gpu.warp_group_dot` reading
`#gpu.nvmma_shared`) get rings in that encoding, read in place (`gpu.local_load` of a slot is a
view). No fence goes between the asynchronous copies and the dot's reads (on NVIDIA, as in
Triton's `fence-insertion`, which adds no `gpu.fence_async_shared` for cp.async-fed operands:
on sm_90 it is `MEMBAR.ALL.CTA; FENCE.VIEW.ASYNC.S`, and the membar waits for the copies still
in flight, undoing the pipeline). Where every such dot reads only ring slots and carries its
accumulator from iteration to iteration alone (a matmul loop), and S >= 3, it becomes
asynchronous (`pendings = 1`: one group stays in flight across iterations, Triton's
`WGMMAPipeline`); the copies of iteration i + D then go at the end of the body, after the dot
and a second barrier (the slot they overwrite was read by the dot of iteration i - 1, which
the dot's wait has retired in each warpgroup, and the barrier in all of them), and a wait
(the dot's `wait_class`, `gpu.warp_group_dot_wait {pendings = 0}`) after the loop makes the
result final (the loop and the waits inside an `scf.if` on the loop running at all: `_guard`
says why).

Loads that feed a matrix unit's operand layout in registers are pipelined the same way.

In a loop so pipelined on a target with asynchronous copies, a vector `tile.load` of 4-byte
elements used in registers (no conversion) whose value flows into a dot of the loop (the
attention backward's m and Delta rows, which `exp2(qk - m)` and `p (dp - Delta)` read before the
dV and dK dots) is loaded one iteration ahead in registers (`prefetch_vectors`, issue 23): its
address ops (pure ops of the body, from the induction variable and carried values) are cloned
for iteration i + 1 at the end of the body (the carried values their yielded updates, `iv +
step` for the induction variable), loaded under `iv + step < ub` and its own mask with its own
`other` (zero where it has none: a masked-off lane of an iteration past the end is never read),
and carried as a new iter-arg, which its uses read; the first is loaded before the loop (under
`lb < ub`). Loaded synchronously where it stood, its latency was exposed where its value is
first used; from a ring (as Triton's pipeliner gives every load a dot depends on) it cost the
rings' copies and shared-memory reads, and a block an SM where two fit. The values are those of
the load in place, bit for bit. `VECTOR_RINGS` (off) gives such vectors rings instead where
the kernel runs one block an SM (`tilec.layout.residency.vector_rings_pay`): its copies go with
the operands' (each thread copies the elements its layout holds, replicas the same bytes) and a
`gpu.local_load` of the slot, in the load's own layout, replaces it where it stood.
A target without asynchronous copies (`LayoutRules.async_copies` false, such as AMD's) stages the
ring through registers instead, as Triton's AMD stream pipeliner does: the prologue loads tiles
0..D-1 and stores them (`tile.load`, zeros where masked off, then `gpu.local_store`); in each
iteration the loads of iteration i + D are issued after the barrier, before the current tile's
`gpu.local_load`s and matrix instructions, and their `gpu.local_store`s into slot (i + D) mod S
come at the end of the body, so the global loads' latency overlaps the math (global -> registers
-> LDS). The slot they overwrite was read in iteration i - 1, which every thread has left at the
barrier; the barrier of the next iteration orders the stores before their reads. No group or
wait ops are emitted there.

A load's cache modifier and eviction policy go with it: onto its copies
(`gpu.async_copy_global_to_local {cache, eviction}`, where the target keeps its own cache
operator, as Triton's cp.async lowering does, and applies the eviction policy where it can) and
onto the register loads of the staged form.

`num_stages` 1 (or 0 here: the compile's `num_stages`) leaves every loop alone, as does anything
outside the pattern (the loads then run synchronously, as before).

Loads first (`LOADS_FIRST`, the pass option `loads-first`; by default where the kernel runs at
least `LOADS_FIRST_BLOCKS` blocks an SM and the loop has one dot): where the loop's
asynchronous dots stay in flight (S >= 3, no bulk ring), each iteration first waits for the
previous iteration's dots (`pendings = 0` on their iter-args), then a barrier, the copies of
iteration i + S - 1 into the slot those dots read, `async_wait {S-1}` and a barrier, and then the
body: tile i's arrival no longer gates the refill, and S tiles are in flight while the loop waits
on memory (S - 1 in the default order, Triton's, where the copies follow the dots and a wait that
leaves one group in flight); no group stays in flight across iterations, so where the tensor
cores are the limit the next group waits for the barrier and the copies' issue: with three
or more blocks an SM the others keep the tensor cores busy meanwhile.

A `tile.descriptor_load` (a host descriptor's load on a target that reads them with TMA) is
pipelined as the masked load it stands for (`LOADS`), through the ring's asynchronous copies,
unless the target fills rings with bulk copies (`LayoutRules.bulk_copies`: NVIDIA's TMA,
docs/tma.md) and takes this load, in the encoding its ring has (a ring read into registers gets
the copies' encoding). Then one thread brings the load's block into the slot
(`tilec.dialects.gpu_bulk`): before the loop `gpu.init_barriers` gives one barrier a slot; each
iteration's issue (the prologue's and the loop's, where the copies went) is one
`gpu.barrier_expect` of the bytes of every such load's block on the slot's barrier, then a
`gpu.async_bulk_copy_global_to_local` a load, both predicated on the iteration being in range
(an iteration past the end issues nothing and is never waited for); where the loop waited for
the copies, every thread waits on the slot's barrier for the phase `phase`, which the loop
carries: 0 in the first round of the ring, flipped each time the slot wraps around to 0 (the
n-th completion of a barrier has parity n % 2, and iteration i is the (i / S)-th of slot
i mod S). After the loop `gpu.inval_barriers` (every copy issued was waited for). Loads of the
loop that the target does not take keep the asynchronous copies and their groups.

A loop `fuse-nested-loops` built from a `tl.range(..., flatten=True)` nest (marked `fused_nest`)
is pipelined the same way across its former outer iterations (`tilec.layout.pipeline_branches`):
its prologue's `scf.if` of pure ops is part of the address slice, cloned for the iteration the
copies are for (the updates reuse that clone); an asynchronous dot whose result goes on through
the epilogue's `scf.if` stays in flight, the then-region waiting for it first, and the copies go
before that `scf.if`. The copies' addresses and masks (with the clone) go before the dots, the
copies alone after the barrier (`address_anchor`), and the prologue of the current iteration,
which only the epilogue then reads, after the copies (`defer_prologue`).
"""

from __future__ import annotations

from typing import Any

import attrs

from tilec.dialects.arith import (
    AddIOp,
    AndIOp,
    CmpIOp,
    ConstantOp,
    ExtUIOp,
    RemUIOp,
    SelectOp,
    XOrIOp,
)
from tilec.dialects.float8 import FpToFpOp
from tilec.dialects.gpu import ConvertLayoutOp, SharedEncodingAttr
from tilec.dialects.gpu_bulk import (
    AsyncBulkCopyGlobalToLocalOp,
    BarrierExpectOp,
    InitBarriersOp,
    InvalBarriersOp,
    WaitBarrierOp,
)
from tilec.dialects.gpu_matrix import OperandEncodingAttr, SwizzledSharedEncodingAttr
from tilec.dialects.gpu_shared import (
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncDotOp,
    AsyncWaitOp,
    LocalAllocOp,
    LocalDeallocOp,
    LocalLoadOp,
    LocalStoreOp,
    MatrixUnitOp,
)
from tilec.dialects.scf import ForOp, IfOp, YieldOp
from tilec.dialects.tile import BarrierOp, DescriptorLoadOp, DotOp, LoadOp, SplatOp, TransOp
from tilec.ir.attributes import DenseAttr, FloatAttr, IntegerAttr, StringAttr
from tilec.ir.core import Block, BlockArgument, Operation, Value
from tilec.ir.traits import Pure
from tilec.ir.types import IntegerType, MemDescType, PointerType, TensorType, Type, i1, i32
from tilec.layout.pipeline_branches import (
    address_anchor,
    carried_index,
    defer_prologue,
    issue_anchor,
    operands,
    pure,
    updates_left,
    wait_in_branches,
)
from tilec.layout.residency import ring_bytes, shared_bytes, vector_rings_pay
from tilec.passes.base import ModulePass, PassContext
from tilec.passes.options import pass_option


class PipelineLoops(ModulePass):
    name = "pipeline-loops"
    stage = "gir"
    description = (
        "software-pipeline the matrix-unit operand loads of loops (num_stages, async copies)"
    )
    after = ("remove-layout-conversions",)

    @attrs.frozen
    class Options:
        num_stages: int = pass_option(
            0,
            "stages (slots of the ring; 0: the compile's num_stages, 1: no pipelining)",
            minimum=0,
        )
        loads_first: int = pass_option(
            0,
            "1: refill a ring slot before waiting for the iteration's tile (module doc), 2: "
            "after its dots; 0: LOADS_FIRST",
            choices=(0, 1, 2),
        )

    def run(self, module: Operation, context: PassContext) -> bool:
        default = self.options.num_stages or getattr(context.target, "num_stages", 1)
        rules = getattr(context.target, "rules", None)
        registers = not getattr(rules, "async_copies", True)
        bulk = None if registers else getattr(rules, "bulk_copies", None)
        changed = False
        loops = [op for op in module.walk() if isinstance(op, ForOp)]
        sm = getattr(rules, "sm", None)
        sizes = _kernel_shared(module, loops, default) if sm is not None else None
        vectors = not registers and _vector_rings(sizes, context.target)
        ahead = not registers and not vectors
        first = {1: True, 2: False}.get(self.options.loads_first, LOADS_FIRST)
        if first is None:  # by the blocks an SM; where the SM is unknown, the default order
            blocks = 0 if sizes is None else sm.blocks(context.target.num_warps, sizes[vectors])
            first = None if blocks >= LOADS_FIRST_BLOCKS else False
        for loop in loops:
            stages = loop_stages(loop, default)
            plan = plan_loop(loop, register_loads=vectors) if stages >= 2 else None
            if plan is not None and ahead:  # a new loop where it loads vectors ahead
                loop = prefetch_vectors(loop)
                plan = plan_loop(loop)
            if plan is not None:
                _pipeline(loop, plan, stages, registers, bulk, loads_first=first)
                changed = True
        return changed


def _kernel_shared(module: Operation, loops: list[ForOp], default: int) -> dict[bool, int]:
    """The kernel's shared memory as the lowering will place it (`tilec.layout.residency`),
    with its loops' rings without (False) and with (True) the vector loads' rings."""
    rings: dict[bool, dict[Operation, int]] = {False: {}, True: {}}
    replaced: set[Operation] = set()
    for loop in loops:
        stages = loop_stages(loop, default)
        for vectors in (False, True):
            plan = plan_loop(loop, register_loads=vectors) if stages >= 2 else None
            if plan is not None:
                types = (load.result.type for load in plan.loads)
                rings[vectors][loop] = ring_bytes(types, stages)
                replaced.update(convert for group in plan.converts for convert in group)
    held = frozenset(replaced)
    return {vectors: shared_bytes(module, rings[vectors], held) for vectors in (False, True)}


VECTOR_RINGS = False
"""Whether the vector loads used in registers that a pipelined loop's dots depend on get rings
where `tilec.layout.residency.vector_rings_pay` says so (True), rather than being loaded one
iteration ahead in registers (`prefetch_vectors`) wherever they qualify (False, the default).
Measured on the H200 (the attention backward's losing sweep cases, benchmarks/attention_bwd_ab.py,
the loads ahead written in the source): ahead beat the plain loads at d64 (two blocks an SM:
0.894 -> 1.008, 0.925 -> 1.043 of Triton) and the rings at d128 (one block: 0.949 -> 1.016,
0.946 -> 1.012), the control 0.985 -> 1.029; rings forced at two blocks an SM measured 0.85."""


def _vector_rings(sizes: dict[bool, int] | None, target: Any) -> bool:
    """Whether the kernel's vector loads used in registers get rings (module doc): with
    `VECTOR_RINGS`, where it runs one block an SM, by its shared memory `sizes` without and with
    them (None: the SM is unknown; `tilec.layout.residency.vector_rings_pay`)."""
    if not VECTOR_RINGS:
        return False
    if sizes is None:
        return True
    rules = target.rules
    return vector_rings_pay(rules.sm, target.num_warps, rules.shared_memory_bytes,
                            sizes[False], sizes[True])  # fmt: skip


def prefetch_vectors(loop: ForOp) -> ForOp:
    """`loop` with its `tile.load`s of vectors used in registers that its dots depend on
    (`_register_load`) loaded one iteration ahead (module doc), or `loop` itself where it has
    none whose pointers, mask and `other` pure ops of the body compute (a gathered index)."""
    block = loop.regions[0].block
    iv, terminator = block.args[0], block.last_op
    yields = list(terminator.operands)  # type: ignore[union-attr]
    outside, at_end = _Emitter(loop.parent, loop), _Emitter(block, terminator)  # type: ignore[arg-type]
    inits, nexts = [], []
    next_iv = runs = None
    for load in [op for op in block.ops if isinstance(op, LoadOp) and _register_load(op, block)]:
        roots = [v for v in (load.ptr, load.mask, load.other) if v is not None]
        address = _slice(roots, block)
        if address is None:
            continue
        order = block.index_map()
        ops = tuple(sorted(address, key=order.__getitem__))
        args = {a for op in ops for a in _block_args(op, block)}
        args |= {v for v in roots if isinstance(v, BlockArgument) and v.owner is block}
        args.discard(iv)
        if next_iv is None:
            next_iv = at_end.binary(AddIOp, iv, loop.step)
            runs = outside.less_than(loop.lower_bound, loop.upper_bound)
        first = {iv: loop.lower_bound, **{a: loop.init_args[a.index - 1] for a in args}}
        inits.append(outside.load_ahead(load, ops, first, runs))
        following = {iv: next_iv, **{a: yields[a.index - 1] for a in args}}
        nexts.append(
            at_end.load_ahead(load, ops, following, at_end.less_than(next_iv, loop.upper_bound))
        )
        arg = block.add_arg(load.result.type, load.result.name_hint)
        load.result.replace_all_uses_with(arg)
        load.erase()
    if not inits:
        return loop
    # (a yielded load now yields its iter-arg: this iteration's value, as before)
    terminator.set_operands([*terminator.operands, *nexts])  # type: ignore[union-attr]
    _erase_dead(block)
    marks = dict(loop.attributes)  # `num_stages`, a fused nest's (`pipeline_branches`), ...
    new_loop = _rebuild(loop, [*loop.init_args, *inits])
    for name, value in marks.items():
        new_loop.attributes.setdefault(name, value)
    return new_loop


def loop_stages(loop: ForOp, default: int) -> int:
    """The stages of `loop`: its `num_stages` attribute (`tl.range(num_stages=...)`, which, as in
    Triton, overrides the kernel's `num_stages` for that loop), else `default`."""
    hint = loop.attributes.get("num_stages")
    return default if hint is None else hint.value  # type: ignore[attr-defined]


@attrs.frozen
class Plan:
    step: int
    loads: tuple[LoadOp, ...]
    converts: tuple[tuple[ConvertLayoutOp, ...], ...]
    """Per load, the conversions to its operand layout it replaces; none for a vector used in
    registers (`_register_load`)."""
    address_ops: tuple[Operation, ...]
    """The body ops the loads' pointers and masks need, in body order."""
    carried: tuple[int, ...]
    """The loop-carried values (iter-arg indices) those ops read, closed under their updates."""
    update_ops: tuple[Operation, ...]
    """The body ops computing the yielded updates of `carried`, in body order."""


def plan_loop(loop: ForOp, register_loads: bool = False) -> Plan | None:
    """What `pipeline-loops` would pipeline in `loop`, or None where it leaves it alone; with
    `register_loads` (a target with asynchronous copies), also the vector loads used in
    registers that its dots depend on (module doc), unless their pointers cannot be computed
    ahead (a gathered index): then they stay loads and the rest is pipelined as before."""
    plan = _plan(loop, register_loads)
    if plan is None and register_loads:
        return _plan(loop, False)
    return plan


def _plan(loop: ForOp, register_loads: bool) -> Plan | None:
    step = _constant_int(loop.step)
    if step is None or step <= 0:
        return None
    block = loop.regions[0].block
    loads, converts = [], []
    for op in block.ops:
        uses = _pipelinable(op, block)
        if uses is not None:
            loads.append(op)
            converts.append(uses)
    if not loads:
        return None
    if register_loads:
        vectors = [op for op in block.ops if _register_load(op, block)]
        loads += vectors
        converts += [()] * len(vectors)
    iv = block.args[0]
    roots = [v for load in loads for v in (load.ptr, load.mask, *_offsets(load)) if v is not None]
    address = _slice(roots, block)
    if address is None:
        return None
    carried = {a.index - 1 for op in address for a in _block_args(op, block) if a is not iv}
    carried |= {v.index - 1 for v in roots if _is_arg(v, block, iv)}  # type: ignore[attr-defined]
    yields = block.last_op.operands  # type: ignore[union-attr]
    while True:
        updates = _slice([yields[j] for j in carried], block)
        if updates is None:
            return None
        more = {a.index - 1 for op in updates for a in _block_args(op, block) if a is not iv}
        more |= {yields[j].index - 1 for j in carried if _is_arg(yields[j], block, iv)}
        if more <= carried:
            break
        carried |= more
    if not all(_is_address(block.args[1 + j].type) for j in carried):
        return None
    order = block.index_map()
    return Plan(
        step,
        tuple(loads),
        tuple(converts),
        tuple(sorted(address, key=order.__getitem__)),
        tuple(sorted(carried)),
        tuple(sorted(updates, key=order.__getitem__)),
    )


def _offsets(load: Operation) -> list[Value]:
    """A descriptor load's block offsets (which its bulk copies take), else none."""
    return load.offsets if isinstance(load, DescriptorLoadOp) else []


def _is_address(t: Type) -> bool:
    """Pointers and integers (offsets): the loop-carried values address computations read."""
    element = t.element_type if isinstance(t, TensorType) else t
    return isinstance(element, PointerType | IntegerType)


def _constant_int(value: Value) -> int | None:
    op = getattr(value, "op", None)
    if isinstance(op, ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value
    return None


def _is_arg(value: Value, block: Block, iv: Value) -> bool:
    return isinstance(value, BlockArgument) and value.owner is block and value is not iv


def _block_args(op: Operation, block: Block) -> list[BlockArgument]:
    return [v for v in operands(op) if isinstance(v, BlockArgument) and v.owner is block]


LOADS = (LoadOp, DescriptorLoadOp)

LOADS_FIRST: bool | None = None
"""Whether a loop whose asynchronous dots stay in flight across iterations refills first
(module doc, "Loads first"): True or False for every such loop; None (the default) where the
kernel runs at least `LOADS_FIRST_BLOCKS` blocks an SM and the loop has one dot (a matmul's
K loop; attention's have two). The pass option `loads-first` (1 on, 2 off) decides it for one run."""

LOADS_FIRST_BLOCKS = 3
"""The blocks an SM from which a matmul loop refills first (`LOADS_FIRST` None). Measured on the
H200 (benchmarks/RESULTS.md, sixth session, the sweep's matmuls with the order forced on): the
64x128x32 w4 s4 kernel (four blocks an SM) 1.025x its time in the default order over 46 shapes
(1.13-1.16x where the grid leaves SMs with one block: skinny M, long K), 64x128x64 w4 s4 (fp8,
four) 1.013x; 128x128x64 w8 s3 (two) 0.988x; the one-block kernels 0.85-0.87x, where the
tensor cores are the limit and the order leaves no group in flight across iterations."""
"""The loads pipelined: a `tile.descriptor_load` (a host descriptor's, which a target reads
with TMA where it stands) as the masked load of its first three operands, through the ring's
asynchronous copies (TMA into the ring: docs/tma.md, next steps)."""


def _pipelinable(op: Operation, block: Block) -> tuple[ConvertLayoutOp, ...] | None:
    """The conversions to one operand layout (`OperandEncodingAttr`) or shared-memory encoding
    that are all of a qualifying load's uses (module doc)."""
    if not isinstance(op, LOADS) or not isinstance(op.result.type, TensorType):
        return None
    if "volatile" in op.attributes:
        return None
    if op.other is not None and not _is_zero(op.other):
        return None
    if op.result.type.element_type.width not in (8, 16, 32) or op.result.type.rank != 2:  # type: ignore[attr-defined]
        return None
    users = op.result.users
    if not users or not all(isinstance(u, ConvertLayoutOp) for u in users):
        return None
    encodings = {u.results[0].type.encoding for u in users}  # type: ignore[attr-defined]
    operand_layouts = OperandEncodingAttr | SharedEncodingAttr
    if len(encodings) != 1 or not isinstance(next(iter(encodings)), operand_layouts):
        return None
    if any(u.parent is not block for u in users):
        return None
    return tuple(users)  # type: ignore[arg-type]


def _register_load(op: Operation, block: Block) -> bool:
    """Whether `op` is a vector load of 4-byte elements, used in registers, whose value flows
    into a matrix-unit op of `block` (module doc)."""
    if not isinstance(op, LOADS) or not isinstance(op.result.type, TensorType):
        return False
    t = op.result.type
    if "volatile" in op.attributes or t.rank != 1 or t.element_type.width != 32:  # type: ignore[attr-defined]
        return False
    if op.other is not None and not _is_zero(op.other):
        return False
    return _feeds_matrix_unit(op.result, block)


def _feeds_matrix_unit(value: Value, block: Block) -> bool:
    """Whether `value` flows, through ops of `block`, into a matrix-unit op or a `tile.dot`."""
    seen: set[Operation] = set()
    pending = [value]
    while pending:
        for user in pending.pop().users:
            if user.parent is not block or user in seen:
                continue
            if isinstance(user, MatrixUnitOp | DotOp):
                return True
            seen.add(user)
            pending.extend(user.results)
    return False


def _is_zero(value: Value) -> bool:
    """Whether `value` is a constant zero: also a splat of one, or a float8 conversion of one
    (the `other=0.0` of a float8 load, which no constant holds)."""
    op = getattr(value, "op", None)
    if isinstance(op, SplatOp | FpToFpOp):
        return _is_zero(op.operands[0])
    if not isinstance(op, ConstantOp):
        return False
    attr = op.value.value if isinstance(op.value, DenseAttr) else op.value
    return isinstance(attr, IntegerAttr | FloatAttr) and attr.value == 0


def _slice(roots: list[Value], block: Block) -> set[Operation] | None:
    """The pure ops of `block` that `roots` depend on inside it; None if one is not pure or
    holds regions."""
    found: set[Operation] = set()
    pending = list(roots)
    while pending:
        op = getattr(pending.pop(), "op", None)
        if op is None or op.parent is not block or op in found:
            continue
        if not pure(op):  # an scf.if of pure ops too (`tilec.layout.pipeline_branches`)
            return None
        found.add(op)
        pending.extend(operands(op))
    return found


def _const(value: int, type_: Type) -> ConstantOp:
    return ConstantOp(IntegerAttr(value, type_), type_)


def _mapped(value: Value | None, mapping: dict[Value, Value]) -> Value | None:
    return None if value is None else mapping.get(value, value)


class Emitter:
    """Inserts new ops before `anchor` (or at the end of `block` without one): the ops of a
    rewrite of the ring passes (this one, `tilec.layout.warp_specialize`)."""

    def __init__(self, block: Block, anchor: Operation | None = None):
        self.block, self.anchor = block, anchor

    def add(self, op: Operation) -> Value | None:
        if self.anchor is None:
            self.block.append(op)
        else:
            self.block.insert_before(op, self.anchor)
        return op.results[0] if op.results else None

    def const(self, value: int, type_: Type) -> Value:
        return self.add(_const(value, type_))  # type: ignore[return-value]

    def binary(self, cls: type[Operation], lhs: Value, rhs: Value) -> Value:
        return self.add(cls(lhs, rhs))  # type: ignore[return-value, call-arg]

    def compare(self, predicate: str, lhs: Value, rhs: Value) -> Value:
        op = CmpIOp(operands=[lhs, rhs], result_types=[i1],
                    attributes={"predicate": StringAttr(predicate)})  # fmt: skip
        return self.add(op)  # type: ignore[return-value]

    def less_than(self, lhs: Value, rhs: Value) -> Value:
        return self.compare("slt", lhs, rhs)


class _Emitter(Emitter):
    """`Emitter` with the pipelining's own steps (clones, copies, the loads ahead)."""

    def clone(self, ops: tuple[Operation, ...], mapping: dict[Value, Value]) -> None:
        for op in ops:
            self.add(op.clone(mapping))

    def in_range_mask(self, ptr: Value, mask: Value | None, in_range: Value) -> Value:
        """`in_range` splat to `ptr`'s shape, and'ed with a load's `mask` where it has one."""
        mask_type = TensorType(ptr.type.shape, i1, ptr.type.encoding)  # type: ignore[attr-defined]
        splat = self.add(SplatOp(operands=[in_range], result_types=[mask_type]))
        return splat if mask is None else self.binary(AndIOp, mask, splat)  # type: ignore[return-value]

    def issue(
        self,
        plan: Plan,
        buffers: list[Value],
        slot: Value,
        mapping: dict[Value, Value],
        in_range: Value,
        registers: bool = False,
        ring: _BulkRing | None = None,
        addresses: _Emitter | None = None,
    ) -> list[Value]:
        """The copies of one iteration (its address ops cloned under `mapping`), committed; with
        `registers`, its tiles loaded into registers instead (zeros where masked off), returned
        for `store`; the loads `ring` takes, by its bulk copies (module doc). With `addresses`,
        the address ops and masks go there (earlier in the block) and only the copies here."""
        at = addresses or self
        at.clone(plan.address_ops, mapping)
        tiles = []
        for load, buffer in zip(plan.loads, buffers, strict=True):
            if ring is not None and load in ring.loads:
                continue
            ptr = mapping.get(load.ptr, load.ptr)
            mask = at.in_range_mask(ptr, _mapped(load.mask, mapping), in_range)
            hints = {k: v for k, v in load.attributes.items() if k in ("cache", "eviction")}
            if registers:
                t: TensorType = load.result.type  # type: ignore[assignment]
                zero = self.add(ConstantOp(DenseAttr(_zero(t.element_type), t), t))
                tile = LoadOp(operands=[ptr, mask, zero], result_types=[t], attributes=hints)
                tile.location = load.location
                tiles.append(self.add(tile))
                continue
            copy = AsyncCopyGlobalToLocalOp(operands=[ptr, buffer, slot, mask], attributes=hints)
            self.add(copy)
        if ring is not None:
            ring.issue(self, plan, buffers, slot, mapping, in_range)
        if not registers and (ring is None or ring.mixed):
            self.add(AsyncCommitGroupOp())
        return tiles  # type: ignore[return-value]

    def load_ahead(self, load: LoadOp, ops: tuple[Operation, ...], mapping: dict[Value, Value],
                   in_range: Value) -> Value:  # fmt: skip
        """`load` of the iteration `mapping` maps the loop's values to (its address `ops`
        cloned), masked off where `in_range` is false: its `other` there, or zero."""
        self.clone(ops, mapping)
        ptr = mapping.get(load.ptr, load.ptr)
        t: TensorType = load.result.type  # type: ignore[assignment]
        mask = self.in_range_mask(ptr, _mapped(load.mask, mapping), in_range)
        if load.other is not None:
            other = mapping.get(load.other, load.other)
        else:
            other = self.add(ConstantOp(DenseAttr(_zero(t.element_type), t), t))
        ahead = LoadOp(operands=[ptr, mask, other], result_types=[t],
                       attributes=dict(load.attributes))  # fmt: skip
        ahead.location = load.location
        return self.add(ahead)  # type: ignore[return-value]

    def store(self, tiles: list[Value], buffers: list[Value], slot: Value) -> None:
        """`issue(registers=True)`'s tiles written into `slot` of their rings."""
        for tile, buffer in zip(tiles, buffers, strict=True):
            self.add(LocalStoreOp(operands=[tile, buffer, slot]))


@attrs.define
class _BulkRing:
    """The loads of a pipelined loop that the target's bulk copies bring into their rings
    (module doc), and the barriers (one a slot) their copies complete on."""

    loads: dict[Operation, SharedEncodingAttr]
    mixed: bool
    """Whether other loads of the loop keep the asynchronous copies."""
    barriers: Value | None = None

    def issue(self, at: _Emitter, plan: Plan, buffers: list[Value], slot: Value,
              mapping: dict[Value, Value], in_range: Value) -> None:  # fmt: skip
        """One iteration's bulk copies into `slot`: the barrier's expected bytes, the copies."""
        copies = [(load, buffer) for load, buffer in zip(plan.loads, buffers, strict=True)
                  if load in self.loads]  # fmt: skip
        nbytes = sum(_block_bytes(load) for load, _ in copies)
        expect = BarrierExpectOp(operands=[self.barriers, slot, in_range],  # type: ignore[list-item]
                                 attributes={"nbytes": IntegerAttr(nbytes, i32)})  # fmt: skip
        at.add(expect)
        for load, buffer in copies:
            offsets = [mapping.get(v, v) for v in _offsets(load)]
            attributes = {k: load.attributes[k] for k in _DESCRIPTOR_ATTRIBUTES
                          if k in load.attributes}  # fmt: skip
            operands = [buffer, slot, self.barriers, in_range, *offsets]
            copy = AsyncBulkCopyGlobalToLocalOp(operands=operands, attributes=attributes)  # type: ignore[arg-type]
            copy.location = load.location
            at.add(copy)


_DESCRIPTOR_ATTRIBUTES = ("base_param", "shape_params", "stride_params", "padding", "in_kernel")


def _block_bytes(load: Operation) -> int:
    t: TensorType = load.result.type  # type: ignore[assignment]
    count = 1
    for extent in t.shape:
        count *= extent
    return count * max(t.element_type.width // 8, 1)  # type: ignore[attr-defined]


def _bulk_ring(plan: Plan, shared: list[SharedEncodingAttr | None], bulk: Any) -> _BulkRing | None:
    """The loads of `plan` that `bulk` (`LayoutRules.bulk_copies`) takes, with the encoding of
    their rings: a descriptor load converted to an operand layout or a shared encoding, whose
    ring (`shared`) has no encoding or the one the copies write."""
    if bulk is None:
        return None
    taken = {}
    for load, converts, encoding in zip(plan.loads, plan.converts, shared, strict=True):
        if not isinstance(load, DescriptorLoadOp) or not converts:
            continue
        written = bulk(load)
        if written is not None and encoding in (None, written):
            taken[load] = written
    if not taken:
        return None
    return _BulkRing(taken, mixed=len(taken) < len(plan.loads))


def _zero(element: Type) -> IntegerAttr | FloatAttr:
    if isinstance(element, IntegerType):
        return IntegerAttr(0, element)
    return FloatAttr(0.0, element)


def _ring_encoding(
    converts: tuple[ConvertLayoutOp, ...], registers: bool
) -> SharedEncodingAttr | None:
    """A ring's encoding: that of the conversions, for operands read from shared memory in
    place (an asynchronous dot's: `_shared_encoding`); for a B operand staged through registers
    whose layout asks for it (`OperandEncodingAttr.staged_b_transposed`: AMD's), stored
    transposed (K contiguous), so that each lane's K elements are one LDS vector read (the
    register stores write along N, which costs less: each element is stored once, and read
    by every wavefront along M)."""
    if not converts:
        return None  # a vector used in registers: a plain ring
    encoding = converts[0].results[0].type.encoding  # type: ignore[attr-defined]
    if (
        registers
        and isinstance(encoding, OperandEncodingAttr)
        and encoding.staged_b_transposed
        and encoding.op_idx == 1
    ):
        return SwizzledSharedEncodingAttr(True)
    return _shared_encoding(converts)


def _shared_encoding(converts: tuple[ConvertLayoutOp, ...]) -> SharedEncodingAttr | None:
    """The shared-memory encoding the loads are converted to (a ring of it is read in place:
    a `gpu.local_load` of a slot is a view), or None for a register operand layout."""
    if not converts:
        return None
    encoding = converts[0].results[0].type.encoding  # type: ignore[attr-defined]
    return encoding if isinstance(encoding, SharedEncodingAttr) else None


def _async_dots(block: Block, plan: Plan) -> list[tuple[AsyncDotOp, int]]:
    """The asynchronous dots (`AsyncDotOp`: `gpu.warp_group_dot`) of the loop that may stay in
    flight across iterations, with their iter-arg index: B (and A, unless A is in registers
    that keep their value: `_registers_kept`) from the pipelined loads or converted to shared
    memory before the loop (`_invariant_shared`), the result only yielded, and the accumulator that iter-arg, or
    computed from it in the body by pure ops (attention rescales it by `alpha`:
    `_wait_for_carried` then waits before that)."""
    from_rings = {convert.results[0] for group in plan.converts for convert in group}
    from_rings |= {  # views of a ring slot: tile.trans of one
        user.results[0]
        for value in list(from_rings)
        for user in value.users
        if isinstance(user, TransOp)
    }
    terminator = block.last_op
    iv = block.args[0]
    found = []
    for op in block.ops:
        if not isinstance(op, AsyncDotOp):
            continue
        a_in_registers = isinstance(op.a.type.encoding, OperandEncodingAttr)  # type: ignore[attr-defined]
        if a_in_registers and not _registers_kept(op, block):
            continue
        if not (a_in_registers or op.a in from_rings or _invariant_shared(op.a, block)):
            continue
        if not (op.b in from_rings or _invariant_shared(op.b, block)):
            continue
        index = carried_index(op, terminator)  # yielded, or through an epilogue's scf.if
        if index is None:
            continue
        arg = block.args[1 + index]
        if arg is iv or not _computed_from(op.acc, arg, block):
            continue
        if op.acc is arg and [u for u, _ in arg.uses] != [op]:
            continue
        found.append((op, index))
    return found


def _registers_kept(dot: AsyncDotOp, block: Block) -> bool:
    """Whether the registers of `dot`'s A (a register operand) keep their value while the dot
    stays in flight into the next iteration (Triton's `dotCanBeProperlyAsync`, rule 1a): A
    defined outside the loop, or converted from a matrix unit's result (attention's P, from
    the scores' dot, which the next iteration waits for before it recomputes P: that wait
    retires this dot too). An A loaded or computed otherwise in the body is written again
    by the next iteration while the dot may still read it (an `ldmatrix` of the next tile
    under a `wgmma` in flight: wrong results on the H200, issue 23)."""
    a = dot.a
    producer = getattr(a, "op", None)
    at: Operation | None = producer
    if producer is None:  # a block argument: the loop's own (carried) or an outer one
        at = a.owner.parent_op if a.owner is not block else block.first_op  # type: ignore[attr-defined]
    while at is not None and at.parent is not block:
        at = at.parent_op
    if at is None:
        return True  # defined outside the loop
    if not isinstance(producer, ConvertLayoutOp) or producer.parent is not block:
        return False
    result_encoding = dot.result.type.encoding  # type: ignore[attr-defined]
    return isinstance(producer.operands[0].type.encoding, type(result_encoding))  # type: ignore[attr-defined]


def _computed_from(value: Value, arg: Value, block: Block, depth: int = 0) -> bool:
    """Whether `value` is `arg` or computed from it by pure, region-free ops of `block`."""
    if value is arg:
        return True
    producer = getattr(value, "op", None)
    if depth > 16 or producer is None or producer.parent is not block:
        return False
    if not producer.has_trait(Pure) or producer.regions:
        return False
    return any(_computed_from(v, arg, block, depth + 1) for v in producer.operands)


def _wait_at_top(at: _Emitter, block: Block, dots: list[tuple[AsyncDotOp, int]]) -> None:
    """Loads first: a wait for each asynchronous dot's iter-arg (`pendings = 0`: the previous
    iteration's groups retired) at the top of the body, every use of the iter-arg reading the
    wait's registers (the dot's accumulator too, where it is the iter-arg)."""
    for dot, index in dots:
        arg = block.args[1 + index]
        wait = dot.wait_class(
            operands=[arg], result_types=[arg.type], attributes={"pendings": IntegerAttr(0, i32)}
        )
        at.add(wait)
        for user, position in list(arg.uses):
            if user is not wait:
                user.set_operand(position, wait.results[0])


def _wait_for_carried(block: Block, dots: list[tuple[AsyncDotOp, int]]) -> None:
    """An asynchronous dot whose accumulator is computed from its iter-arg: the iter-arg's
    registers are final only after a wait (the dot's `wait_class`: `gpu.warp_group_dot_wait
    {pendings = 0}`), placed before the iter-arg's first use in the body (the dots retire in
    order, so a synchronous one issued before that use has already retired it; the wait
    threads the registers through)."""
    order = block.index_map()
    for dot, index in dots:
        arg = block.args[1 + index]
        if dot.acc is arg:
            continue  # only the next wgmma reads it: the hardware orders them
        users = sorted({u for u, _ in arg.uses}, key=order.__getitem__)
        wait = dot.wait_class(
            operands=[arg], result_types=[arg.type], attributes={"pendings": IntegerAttr(0, i32)}
        )
        block.insert_before(wait, users[0])
        for user, at in list(arg.uses):
            if user is not wait:
                user.set_operand(at, wait.results[0])


def _invariant_shared(value: Value, block: Block) -> bool:
    """Whether `value` is a conversion to shared memory made outside the loop `block`:
    stored once, never overwritten while the loop runs (or a `tile.trans` view of one)."""
    producer = getattr(value, "op", None)
    if isinstance(producer, TransOp):
        return _invariant_shared(producer.source, block)
    if not isinstance(producer, ConvertLayoutOp):
        return False
    if not isinstance(producer.result.type.encoding, SharedEncodingAttr):  # type: ignore[attr-defined]
        return False
    at: Operation | None = producer
    while at is not None:
        if at.parent is block:
            return False
        at = at.parent_op
    return True


def _pipeline(
    loop: ForOp,
    plan: Plan,
    stages: int,
    registers: bool = False,
    bulk: Any = None,
    loads_first: bool | None = False,
) -> None:
    """Pipeline `loop` by `plan` (module doc); `loads_first` None: refill first where the loop
    has one dot, a matmul's K loop (`LOADS_FIRST`; attention's loops have two)."""
    block = loop.regions[0].block
    shared = [_ring_encoding(converts, registers) for converts in plan.converts]
    ring = _bulk_ring(plan, shared, bulk)
    if ring is not None:
        shared = [ring.loads.get(load, e) for load, e in zip(plan.loads, shared, strict=True)]
    in_place = any(_shared_encoding(converts) for converts in plan.converts)
    async_dots = _async_dots(block, plan) if in_place and stages >= 3 else []
    ahead = stages - 1
    iv, args = block.args[0], block.args[1:]
    lb, ub = loop.lower_bound, loop.upper_bound
    outside = _Emitter(loop.parent, loop)  # type: ignore[arg-type]
    # The prologue's copies (zero-filled where masked off) may land in shared memory that threads
    # are still reading, such as an earlier pipelined loop's ring: every thread is done first.
    outside.add(BarrierOp())
    buffers = []
    for load, encoding in zip(plan.loads, shared, strict=True):
        t = load.result.type
        ring_type = MemDescType((stages, *t.shape), t.element_type, encoding)  # type: ignore[attr-defined]
        buffers.append(outside.add(LocalAllocOp(ring_type)))
    if ring is not None:
        ring.barriers = outside.add(InitBarriersOp(stages))
    carried = {args[j]: loop.init_args[j] for j in plan.carried}
    for t in range(ahead):
        at = outside.binary(AddIOp, lb, outside.const(t * plan.step, iv.type)) if t else lb
        mapping: dict[Value, Value] = {iv: at, **carried}
        in_range = outside.less_than(at, ub)
        slot_t = outside.const(t, i32)
        tiles = outside.issue(plan, buffers, slot_t, mapping, in_range, registers, ring)
        if registers:
            outside.store(tiles, buffers, slot_t)
        outside.clone(updates_left(plan.update_ops, plan.address_ops), mapping)
        yields = block.last_op.operands  # type: ignore[union-attr]
        carried = {args[j]: mapping.get(yields[j], yields[j]) for j in plan.carried}

    ahead_args = [block.add_arg(args[j].type, args[j].name_hint) for j in plan.carried]
    slot = block.add_arg(i32, "slot")
    phase = block.add_arg(i32, "phase") if ring is not None else None
    inside = _Emitter(block, block.first_op)
    dots = sum(isinstance(op, AsyncDotOp) for op in block.ops)
    wanted = dots == 1 if loads_first is None else loads_first
    first = wanted and bool(async_dots) and ring is None and not registers
    if first:  # the previous iteration's dots retired in every warpgroup: their slot is free
        _wait_at_top(inside, block, async_dots)
        inside.add(BarrierOp())
    elif not registers and (ring is None or ring.mixed):
        inside.add(AsyncWaitOp(attributes={"num": IntegerAttr(ahead - 1, i32)}))
    if ring is not None:
        inside.add(WaitBarrierOp(operands=[ring.barriers, slot, phase]))  # type: ignore[list-item]
    if not first and (ring is None or ring.mixed or not async_dots):
        # Bulk copies alone, issued after the dots and their barrier (below), need none here:
        # the barrier's wait makes their bytes visible to every waiting thread.
        inside.add(BarrierOp())
    # An asynchronous dot still reads the previous iteration's slot after its op: the copies
    # that overwrite that slot come after the dot (which retires it in its warpgroup) and a
    # barrier (in every warpgroup).
    # (Before a fused loop's epilogue: `pipeline_branches.issue_anchor`.)
    anchor = issue_anchor(block, [dot for dot, _ in async_dots])
    issuer = _Emitter(block, anchor) if async_dots and not first else inside
    # In a fused nest, the addresses (the prologue's clone, 64-bit pointer math) go before the
    # dots, where ptxas schedules them among the wgmmas, as Triton's: the barrier is followed by
    # the copies (`pipeline_branches.address_anchor`). Between the dots and the barrier, ptxas
    # sinks the math past the barrier again.
    early = (
        address_anchor(loop, [dot for dot, _ in async_dots]) if not first and ring is None else None
    )
    addresser = _Emitter(block, early) if early is not None else issuer
    if async_dots and not first:
        issuer.add(BarrierOp())
    at = addresser.binary(AddIOp, iv, addresser.const(ahead * plan.step, iv.type))
    mapping = {iv: at, **{args[j]: a for j, a in zip(plan.carried, ahead_args, strict=True)}}
    target_slot = _slot_ahead(addresser, slot, ahead, stages)
    in_range = addresser.less_than(at, ub)
    tiles = issuer.issue(plan, buffers, target_slot, mapping, in_range, registers, ring,
                         addresses=addresser if early is not None else None)  # fmt: skip
    if first:  # then iteration i's tile: S - 1 groups after it may stay in flight
        inside.add(AsyncWaitOp(attributes={"num": IntegerAttr(ahead, i32)}))
        inside.add(BarrierOp())
    if registers:  # stored after the body's math (before the yield): the loads' latency overlaps it
        _Emitter(block, block.last_op).store(tiles, buffers, target_slot)
    for load, converts, buffer in zip(plan.loads, plan.converts, buffers, strict=True):
        if not converts:  # used in registers: read where it was loaded
            loaded = LocalLoadOp(operands=[buffer, slot], result_types=[load.result.type])
            loaded.location = load.location
            block.insert_before(loaded, load)
            load.result.replace_all_uses_with(loaded.results[0])
        for convert in converts:
            loaded = LocalLoadOp(operands=[buffer, slot], result_types=[convert.results[0].type])
            block.insert_before(loaded, convert)
            convert.results[0].replace_all_uses_with(loaded.results[0])
            convert.erase()
        load.erase()
    terminator = block.last_op
    at_end = _Emitter(block, terminator)
    at_end.clone(updates_left(plan.update_ops, plan.address_ops), mapping)
    yields = terminator.operands  # type: ignore[union-attr]
    next_ahead = [mapping.get(yields[j], yields[j]) for j in plan.carried]
    one = at_end.const(1, i32)
    next_slot = at_end.binary(RemUIOp, at_end.binary(AddIOp, slot, one), at_end.const(stages, i32))
    next_phase = [] if phase is None else [_next_phase(at_end, phase, next_slot)]
    terminator.set_operands([*yields, *next_ahead, next_slot, *next_phase])  # type: ignore[union-attr]
    _erase_dead(block)
    inits = [*loop.init_args, *carried.values(), outside.const(0, i32)]
    if phase is not None:
        inits.append(outside.const(0, i32))
    for dot, _ in async_dots:
        dot.attributes["pendings"] = IntegerAttr(1, i32)
        wait_in_branches(dot)
    if not first:
        _wait_for_carried(block, async_dots)
        defer_prologue(loop, [dot for dot, _ in async_dots])
    new_loop = _rebuild(loop, inits)
    after = _Emitter(new_loop.parent, new_loop.next_op)  # type: ignore[arg-type]
    waits: list[Operation] = []
    for dot, index in async_dots:
        result = new_loop.results[index]
        wait = dot.wait_class(
            operands=[result],
            result_types=[result.type],
            attributes={"pendings": IntegerAttr(0, i32)},
        )
        after.add(wait)
        waits.append(wait)
        for user, at in list(result.uses):
            if user is not wait:
                user.set_operand(at, wait.results[0])
    if waits:
        _guard(new_loop, waits)
    if not registers and (ring is None or ring.mixed):
        after.add(AsyncWaitOp(attributes={"num": IntegerAttr(0, i32)}))
    if ring is not None:
        after.add(InvalBarriersOp(operands=[ring.barriers]))  # type: ignore[list-item]
        _erase_dead(after.block)  # the pointers the prologue computed for no copy
    for buffer in reversed(buffers):
        after.add(LocalDeallocOp(operands=[buffer]))


def _slot_ahead(at: _Emitter, slot: Value, ahead: int, stages: int) -> Value:
    """The slot `ahead` iterations after `slot` (below `stages`, 0 < `ahead` < `stages`), the
    one the copies fill: `(slot + ahead) mod stages`, a mask where `stages` is a power of two,
    else `slot >= stages - ahead ? slot + ahead - stages : slot + ahead`. As a remainder by 3
    LLVM divides by a multiply-high, a shift and a multiply-subtract, a chain the copies'
    addresses wait for between the loop's wgmmas and its copies (Triton carries a second
    wrapped counter instead)."""
    if stages & (stages - 1) == 0:
        return at.binary(RemUIOp, at.binary(AddIOp, slot, at.const(ahead, i32)),
                         at.const(stages, i32))  # fmt: skip
    wraps = at.add(CmpIOp(operands=[slot, at.const(stages - ahead, i32)], result_types=[i1],
                          attributes={"predicate": StringAttr("uge")}))  # fmt: skip
    wrapped = at.binary(AddIOp, slot, at.const(ahead - stages, i32))
    plain = at.binary(AddIOp, slot, at.const(ahead, i32))
    chosen = SelectOp(operands=[wraps, wrapped, plain], result_types=[i32])  # type: ignore[list-item]
    return at.add(chosen)  # type: ignore[return-value]


def _next_phase(at: _Emitter, phase: Value, next_slot: Value) -> Value:
    """The barriers' phase of the next iteration: flipped where its slot wraps around to 0."""
    attrs_ = {"predicate": StringAttr("eq")}
    wraps = at.add(CmpIOp(operands=[next_slot, at.const(0, i32)], result_types=[i1],
                          attributes=attrs_))  # fmt: skip
    flip = at.add(ExtUIOp(wraps, i32))  # type: ignore[arg-type]
    return at.binary(XOrIOp, phase, flip)  # type: ignore[arg-type]


def _guard(loop: ForOp, waits: list[Operation]) -> None:
    """Put `loop` and the waits after it into `scf.if (lb < ub)`, whose else region yields the
    loop's inits. ptxas serializes every wgmma of a kernel where a non-wgmma instruction defines
    an accumulator register between a wgmma and its wait: the loop's zero-trip path, which
    copies the accumulator's init into those registers and joins the loop's exit before the
    wait, is one. Inside the guard the loop runs at least once (LLVM drops its own zero-trip
    test) and the waits come before the join."""
    waited = {w.operands[0]: w.results[0] for w in waits}
    results = [waited.get(r, r) for r in loop.results]
    outside = _Emitter(loop.parent, loop)  # type: ignore[arg-type]
    runs = outside.less_than(loop.lower_bound, loop.upper_bound)
    guard = IfOp(runs, [r.type for r in results])
    guard.location = loop.location
    outside.add(guard)
    uses = [(user, at, i) for i, r in enumerate(results) for user, at in list(r.uses)]
    then_block, else_block = guard.regions[0].block, guard.regions[1].block
    for op in (loop, *waits):
        op.detach()
        then_block.append(op)
    then_block.append(YieldOp(operands=results))
    else_block.append(YieldOp(operands=list(loop.init_args)))
    for user, at, i in uses:
        if user is not then_block.last_op:
            user.set_operand(at, guard.results[i])


WARP_SPECIALIZE = "warp_specialize"
"""The flag of `tl.range(warp_specialize=True)` on a loop, which the pipelined loop keeps."""


def _erase_dead(block: Block) -> None:
    for op in reversed(list(block.ops)):
        dead = op.results and not any(r.has_uses() for r in op.results)
        if dead and op.has_trait(Pure) and not op.regions:
            op.erase()


def _rebuild(loop: ForOp, inits: list[Value]) -> ForOp:
    """`loop` with the block's added arguments as new loop-carried values (`inits`)."""
    old_block = loop.regions[0].block
    new_loop = ForOp(loop.lower_bound, loop.upper_bound, loop.step, inits)
    new_loop.location = loop.location
    if WARP_SPECIALIZE in loop.attributes:  # for `warp-specialize`, which runs next
        new_loop.attributes[WARP_SPECIALIZE] = loop.attributes[WARP_SPECIALIZE]
    new_block = new_loop.regions[0].block
    for old, new in zip(old_block.args, new_block.args, strict=True):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    for op in list(old_block.ops):
        op.detach()
        new_block.append(op)
    loop.parent.insert_before(new_loop, loop)  # type: ignore[union-attr]
    for old, new in zip(loop.results, new_loop.results, strict=False):
        old.replace_all_uses_with(new)
    loop.erase()
    return new_loop


__all__ = ["PipelineLoops", "Plan", "plan_loop", "prefetch_vectors"]
