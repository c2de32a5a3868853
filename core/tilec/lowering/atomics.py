"""`tile.atomic_rmw` and `tile.atomic_cas` -> the target's atomics (`TargetInfo.atomic_rmw`,
`TargetInfo.atomic_cas`) or LLVM `atomicrmw` / `cmpxchg`.

- Kinds: `add` (`fadd` on floats), `max`/`min` (signed), `umax`/`umin`, `and`/`or`/`xor`, `xchg`.
  LLVM expands what the target has no instruction for into compare-and-swap loops.
- Float `max`/`min` are Triton 3.6's (`semantic.atomic_max`/`atomic_min`): integer atomics on
  the bits, a signed `max` (`min`) where the value's sign bit is clear, an unsigned `min`
  (`max`) where it is set; the old value is the one of the atomic that ran. This orders floats
  by value, -0.0 below +0.0, and NaNs as their bits (a NaN with the sign bit clear is above
  +inf, one with it set below -inf), as Triton's do, on every backend and in the interpreter.
- `sem` gives the ordering (`relaxed` -> `monotonic`, `acquire`, `release`, `acq_rel`), `scope` the
  synchronization scope (`cta` -> `syncscope("block")`, `gpu` -> `syncscope("device")`, `sys` ->
  the default system scope). `cmpxchg` carries its ordering; `atomicrmw` is relaxed between
  fences of the scope (a release fence before, an acquire fence after), because LLVM's NVPTX
  backend drops the ordering of `atomicrmw` (it prints a plain `atom.global.add.f32`). A target
  with its own instructions (NVIDIA's `atom.global.gpu.acq_rel.add.f32`, as Triton spells them)
  carries both in the instruction.
- Only the thread that owns an element performs its atomic (a replicated layout would otherwise
  repeat it); a scalar atomic is done by thread 0. Masked-off elements do nothing and return 0,
  as in the interpreter. When the old values are used and some threads hold replicas, the owners
  publish theirs through shared memory so that every replica returns the owner's value.
- `atomic_cas` compares bits (floats are compared as integers of their width, as in Triton).
- i1 values live in memory as bytes.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from tilec.dialects.tile import AtomicCASOp, AtomicRMWOp
from tilec.ir.types import FloatType, IntegerType, TensorType, element_type
from tilec.lowering.context import (
    I1,
    I8,
    I32,
    LoweringContext,
    LoweringError,
    LTensor,
    _where,
    lowers,
)
from tilec.lowering.reduce import load_slot, shared_slots, store_slot

ORDERINGS = {"relaxed": "monotonic", "acquire": "acquire", "release": "release",
             "acq_rel": "acq_rel"}  # fmt: skip
FAILURE_ORDERINGS = {"relaxed": "monotonic", "acquire": "acquire", "release": "monotonic",
                     "acq_rel": "acquire"}  # fmt: skip
INT_OPS = {"add": "add", "max": "max", "min": "min", "umax": "umax", "umin": "umin",
           "and": "and", "or": "or", "xor": "xor", "xchg": "xchg"}  # fmt: skip
FLOAT_OPS = {"add": "fadd", "xchg": "xchg"}
FLOAT_KINDS = ("add", "max", "min", "xchg")
"""The kinds on floats: `max` and `min` become integer atomics (`_float_min_max`)."""


Atomic = AtomicRMWOp | AtomicCASOp


def _ordering(ctx: LoweringContext, op: Atomic, table: dict[str, str]) -> str:
    """The LLVM ordering of the op's `sem`, preceded by its `syncscope` unless it is `sys`
    (llvmlite prints the ordering where the syncscope goes, so both travel together)."""
    scope = ctx.target.sync_scopes[op.scope_str]
    ordering = table[op.sem_str]
    return ordering if scope is None else f'syncscope("{scope}") {ordering}'


def _registers(ctx: LoweringContext, value) -> list[ir.Value] | None:
    if value is None:
        return None
    lowered = ctx.get(value)
    return lowered.values if isinstance(lowered, LTensor) else [lowered]


def _conditions(ctx: LoweringContext, op: Atomic, mask) -> list[ir.Value | None]:
    """Per register, when its atomic runs: the mask and ownership (None: always)."""
    b = ctx.builder
    ptr_type = op.ptr.type
    if isinstance(ptr_type, TensorType):
        count = LTensor(ptr_type, []).mapping.num_registers
        owners = ctx.owner_masks(LTensor(ptr_type, []).mapping)
    else:
        count = 1
        owners = [b.icmp_unsigned("==", ctx.thread_id(), I32(0))]
    masks = _registers(ctx, mask)
    conditions: list[ir.Value | None] = []
    for i in range(count):
        condition = None if masks is None else masks[i]
        if owners is not None:
            condition = owners[i] if condition is None else b.and_(condition, owners[i])
        conditions.append(condition)
    return conditions


def _guarded(
    ctx: LoweringContext, condition: ir.Value | None, body: Callable[[], ir.Value]
) -> ir.Value:
    """`body()` where `condition` holds, else 0 of its type."""
    b = ctx.builder
    if condition is None:
        return body()
    start = b.block
    taken = b.append_basic_block("atomic")
    done = b.append_basic_block("atomic.end")
    b.cbranch(condition, taken, done)
    b.position_at_end(taken)
    value = body()
    end = b.block
    b.branch(done)
    b.position_at_end(done)
    phi = b.phi(value.type)
    phi.add_incoming(value, end)
    phi.add_incoming(ir.Constant(value.type, None), start)
    return phi


def _to_memory(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    return b.zext(value, I8) if value.type == I1 else value


def _from_memory(b: ir.IRBuilder, value: ir.Value, t: ir.Type) -> ir.Value:
    return b.icmp_unsigned("!=", value, I8(0)) if t == I1 else value


@lowers(AtomicRMWOp)
def _atomic_rmw(ctx: LoweringContext, op: AtomicRMWOp) -> None:
    b = ctx.builder
    kind = op.kind_str
    scalar = element_type(op.value.type)
    kinds = FLOAT_KINDS if isinstance(scalar, FloatType) else INT_OPS
    if kind not in kinds:
        raise LoweringError(f"{_where(op)}no atomic '{kind}' for {scalar} values")
    if isinstance(scalar, IntegerType) and scalar.width == 1 and kind in ("max", "min"):
        kind = "u" + kind  # i1 as a byte: true (1) is the larger
    ptrs = _registers(ctx, op.ptr)
    values = _registers(ctx, op.value)
    olds = []
    for ptr, value, condition in zip(ptrs, values, _conditions(ctx, op, op.mask), strict=True):
        if isinstance(scalar, FloatType) and kind in ("max", "min"):
            olds.append(_float_min_max(ctx, op, kind, ptr, value, condition))
            continue

        def body(ptr: ir.Value = ptr, value: ir.Value = value) -> ir.Value:
            return _rmw(ctx, op, kind, ptr, _to_memory(b, value))

        olds.append(_guarded(ctx, condition, body))
    _bind(ctx, op, [_from_memory(b, old, v.type) for old, v in zip(olds, values, strict=True)])


def _rmw(ctx: LoweringContext, op: Atomic, kind: str, ptr: ir.Value, value: ir.Value) -> ir.Value:
    """One atomic `kind` of `value` at `ptr` with the op's `sem` and `scope`: the target's own
    instruction, else LLVM's `atomicrmw`, relaxed between fences of the scope."""
    b = ctx.builder
    target = ctx.target
    old = target.atomic_rmw(b, kind, ptr, value, op.sem_str, op.scope_str)
    if old is not None:
        return old
    sem = op.sem_str
    scope = target.sync_scopes[op.scope_str]
    relaxed = "monotonic" if scope is None else f'syncscope("{scope}") monotonic'
    llvm_op = (INT_OPS if isinstance(value.type, ir.IntType) else FLOAT_OPS)[kind]
    if sem in ("release", "acq_rel"):
        b.fence("release", scope)
    old = b.atomic_rmw(llvm_op, ptr, value, relaxed)
    if sem in ("acquire", "acq_rel"):
        b.fence("acquire", scope)
    return old


def _float_min_max(
    ctx: LoweringContext,
    op: AtomicRMWOp,
    kind: str,
    ptr: ir.Value,
    value: ir.Value,
    condition: ir.Value | None,
) -> ir.Value:
    """Triton's float atomic max/min (see the module doc): a signed integer `kind` where the
    value's sign bit is clear, the unsigned opposite where it is set; the old value of the one
    that ran (0 where neither did)."""
    b = ctx.builder
    bits = b.bitcast(value, _int_of(value.type))
    negative = b.icmp_signed("<", bits, ir.Constant(bits.type, 0))
    positive = b.not_(negative)
    on_positive = positive if condition is None else b.and_(condition, positive)
    on_negative = negative if condition is None else b.and_(condition, negative)
    unsigned = "umin" if kind == "max" else "umax"
    old_positive = _guarded(ctx, on_positive, lambda: _rmw(ctx, op, kind, ptr, bits))
    old_negative = _guarded(ctx, on_negative, lambda: _rmw(ctx, op, unsigned, ptr, bits))
    return b.bitcast(b.select(negative, old_negative, old_positive), value.type)


@lowers(AtomicCASOp)
def _atomic_cas(ctx: LoweringContext, op: AtomicCASOp) -> None:
    b = ctx.builder
    success, failure = _ordering(ctx, op, ORDERINGS), FAILURE_ORDERINGS[op.sem_str]
    ptrs = _registers(ctx, op.ptr)
    compares = _registers(ctx, op.compare)
    values = _registers(ctx, op.value)
    olds = []
    for ptr, compare, value, condition in zip(
        ptrs, compares, values, _conditions(ctx, op, None), strict=True
    ):

        def body(ptr: ir.Value = ptr, compare: ir.Value = compare, value: ir.Value = value):
            t = _to_memory(b, value).type
            bits = ir.IntType(t.width) if isinstance(t, ir.IntType) else _int_of(t)
            expected = b.bitcast(_to_memory(b, compare), bits)
            new = b.bitcast(_to_memory(b, value), bits)
            old = ctx.target.atomic_cas(b, ptr, expected, new, op.sem_str, op.scope_str)
            if old is None:
                old = b.extract_value(b.cmpxchg(ptr, expected, new, success, failure), 0)
            return b.bitcast(old, t)

        olds.append(_guarded(ctx, condition, body))
    _bind(ctx, op, [_from_memory(b, old, v.type) for old, v in zip(olds, values, strict=True)])


def _int_of(t: ir.Type) -> ir.IntType:
    return ir.IntType({"half": 16, "bfloat": 16, "float": 32, "double": 64}[str(t)])


def _bind(ctx: LoweringContext, op: Atomic, olds: list[ir.Value]) -> None:
    """Bind the old values; replicas get their owner's through shared memory when used."""
    result = op.result
    result_type = result.type
    b = ctx.builder
    if not isinstance(result_type, TensorType):
        if result.has_uses():
            thread0 = b.icmp_unsigned("==", ctx.thread_id(), I32(0))
            olds = _publish(ctx, op, olds, [I32(0)], [thread0], 1)
        ctx.set(result, olds[0])
        return
    mapping = LTensor(result_type, []).mapping
    owners = ctx.owner_masks(mapping)
    if result.has_uses() and owners is not None:
        indices = []
        for coords in ctx.element_coords(mapping):
            index: ir.Value = I32(0)
            for coord, size in zip(coords, mapping.shape, strict=True):
                index = b.add(b.mul(index, I32(size)), coord)
            indices.append(index)
        olds = _publish(ctx, op, olds, indices, owners, _size(mapping))
    ctx.set(result, LTensor(result_type, olds))


def _publish(
    ctx: LoweringContext,
    op: Atomic,
    values: list[ir.Value],
    indices: list[ir.Value],
    owners: list[ir.Value],
    numel: int,
) -> list[ir.Value]:
    """Owners write `values` at `indices` of a shared buffer of `numel` elements; every thread
    reads them back."""
    b = ctx.builder
    t = values[0].type
    (base,) = shared_slots(ctx, op, [t], numel)
    for value, index, owner in zip(values, indices, owners, strict=True):
        with b.if_then(owner):
            store_slot(ctx, base, index, value)
    ctx.target.barrier(b)
    return [load_slot(ctx, base, index, t) for index in indices]


def _size(mapping) -> int:
    numel = 1
    for size in mapping.shape:
        numel *= size
    return numel
