"""`tile.dot` -> LLVM IR with FMAs through shared memory (a result in a matrix-unit layout: the
lowering its backend registered, `tilec.lowering.matrix_units`).

`a` (MxK) and `b` (KxN) may have any layouts: every thread writes the elements it holds to
shared memory, `a` transposed (`[k][m]`) and `b` as it is (`[k][n]`), so that at one `k` the
threads of a warp read neighbouring words. After a barrier each thread computes its `acc`
elements in a loop over K (an LLVM loop, unrolled by `UNROLL`), reading one `a` value per
distinct row and one `b` value per distinct column it holds at each `k`.

Arithmetic follows the interpreter: inputs are converted to the compute type (f32 for f16, bf16
and f32 accumulators, f64, or the accumulator's integer type; narrower inputs are extended,
signed or unsigned as they are, wider ones, such as f64 inputs of an f32 accumulator, rounded or
truncated); float products are fused (`llvm.fma`). f32 and wider accumulate onto `acc`; an f16
or bf16 accumulator gets `round(sum) + acc` (f16) or `round(sum + acc)` (bf16), as the
interpreter's `matmul` then add. f32 inputs with `input_precision = "tf32"` are cut to tf32 as
the tensor cores and the interpreter cut them (`tf32_truncate`) when they are written to shared
memory, so that
this path and the tensor cores give the same products; "tf32x3" computes in full f32 (Triton's
FMA path does so for both), which is within the 3xTF32 split's error of the interpreter.
"""

from __future__ import annotations

from llvmlite import ir

from tilec.dialects.gpu import layout_of
from tilec.dialects.tile import DotOp
from tilec.ir.types import IntegerType, element_type
from tilec.layout.mapping import ThreadMapping
from tilec.lowering.context import BF16, F16, F32, F64, I32, LoweringContext, LTensor, lowers
from tilec.lowering.matrix_units import DOT_LOWERINGS, registered, tf32_truncate
from tilec.lowering.reduce import element_bytes, load_slot, store_slot

UNROLL = 8
"""Values of K handled per loop iteration."""


@lowers(DotOp)
def _dot(ctx: LoweringContext, op: DotOp) -> None:
    matrix_unit = registered(DOT_LOWERINGS, layout_of(op.result.type))
    if matrix_unit is not None:
        matrix_unit(ctx, op)  # a backend's matrix unit (tilec.lowering.matrix_units)
        return
    b = ctx.builder
    a, bm, acc = ctx.get(op.a), ctx.get(op.b), ctx.get(op.acc)
    (m_size, k_size), n_size = a.type.shape, bm.type.shape[1]
    in_type = element_type(op.a.type)
    acc_type = element_type(op.acc.type)
    a_mem, acc_ll = ctx.type(in_type), ctx.type(acc_type)
    compute = _compute_type(acc_ll)

    rounding = a_mem == F32 and op.precision == "tf32"
    ctx.target.barrier(b)
    a_base = ctx.shared_scratch((m_size * k_size + k_size * n_size) * element_bytes(a_mem))
    b_base = b.gep(a_base, [I32(m_size * k_size)], source_etype=a_mem)
    _write(ctx, a, lambda m, k: b.add(b.mul(k, I32(m_size)), m), a_base, rounding)
    _write(ctx, bm, lambda k, n: b.add(b.mul(k, I32(n_size)), n), b_base, rounding)
    ctx.target.barrier(b)

    mapping = acc.mapping
    rows, cols = _distinct(ctx, mapping, 0), _distinct(ctx, mapping, 1)
    starts = [
        v if acc_ll == compute else ir.Constant(compute, 0.0)
        for v in acc.values  # f16/bf16: add acc after the loop, as the interpreter does
    ]
    unsigned = isinstance(in_type, IntegerType) and in_type.unsigned

    def extend(value: ir.Value) -> ir.Value:
        """`value` in the compute type, as NumPy's `astype` (the interpreter) converts it."""
        source = value.type
        if source == compute:
            return value
        if isinstance(source, ir.IntType) and isinstance(compute, ir.IntType):
            if source.width > compute.width:
                return b.trunc(value, compute)
            return b.zext(value, compute) if unsigned else b.sext(value, compute)
        if isinstance(source, ir.IntType):
            return b.uitofp(value, compute) if unsigned else b.sitofp(value, compute)
        if isinstance(compute, ir.IntType):
            return b.fptosi(value, compute)
        if _FLOAT_BITS[source] > _FLOAT_BITS[compute]:
            return b.fptrunc(value, compute)
        return b.fpext(value, compute)

    fma = _fma(ctx, compute)
    entry = b.block
    loop = b.append_basic_block("dot.k")
    done = b.append_basic_block("dot.end")
    b.branch(loop)
    b.position_at_end(loop)
    k = b.phi(I32)
    phis = [b.phi(compute) for _ in starts]
    sums: list[ir.Value] = list(phis)
    unroll = min(UNROLL, k_size)
    for u in range(unroll):
        kk = b.add(k, I32(u)) if u else k
        a_vals = {
            off: extend(load_slot(ctx, a_base, b.add(b.mul(kk, I32(m_size)), row), a_mem))
            for off, row in rows.items()
        }
        b_vals = {
            off: extend(load_slot(ctx, b_base, b.add(b.mul(kk, I32(n_size)), col), a_mem))
            for off, col in cols.items()
        }
        for i, (m_off, n_off) in enumerate(mapping.registers):
            x, y = a_vals[m_off], b_vals[n_off]
            sums[i] = fma(x, y, sums[i])
    k_next = b.add(k, I32(unroll))
    body_end = b.block
    b.cbranch(b.icmp_unsigned("<", k_next, I32(k_size)), loop, done)
    k.add_incoming(I32(0), entry)
    k.add_incoming(k_next, body_end)
    for phi, start, total in zip(phis, starts, sums, strict=True):
        phi.add_incoming(start, entry)
        phi.add_incoming(total, body_end)
    b.position_at_end(done)
    results = [_finish(b, total, old, acc_ll) for total, old in zip(sums, acc.values, strict=True)]
    ctx.set(op.result, LTensor(op.result.type, results))


_FLOAT_BITS = {F16: 16, BF16: 16, F32: 32, F64: 64}


def _compute_type(acc: ir.Type) -> ir.Type:
    if acc in (F16, BF16):
        return F32
    return acc


def _finish(b: ir.IRBuilder, total: ir.Value, acc: ir.Value, acc_type: ir.Type) -> ir.Value:
    if acc_type == F16:
        return b.fadd(b.fptrunc(total, F16), acc)
    if acc_type == BF16:
        return b.fptrunc(b.fadd(total, b.fpext(acc, F32)), BF16)
    return total


def _fma(ctx: LoweringContext, compute: ir.Type):
    b = ctx.builder
    if isinstance(compute, ir.IntType):
        return lambda x, y, z: b.add(b.mul(x, y), z)
    name = f"llvm.fma.{'f64' if compute == F64 else 'f32'}"
    fn = ctx.module.globals.get(name) or ir.Function(
        ctx.module, ir.FunctionType(compute, [compute] * 3), name
    )
    return lambda x, y, z: b.call(fn, [x, y, z])


def _write(
    ctx: LoweringContext, tensor: LTensor, index, base: ir.Value, rounding: bool = False
) -> None:
    """Store every register of a 2-D `tensor` at `index(row, col)` (replicas store the same
    values as their owners), cut to tf32 where `rounding`."""
    for (row, col), value in zip(ctx.element_coords(tensor.mapping), tensor.values, strict=True):
        if rounding:
            value = tf32_truncate(ctx.builder, value)
        store_slot(ctx, base, index(row, col), value)


def _distinct(ctx: LoweringContext, mapping: ThreadMapping, dim: int) -> dict[int, ir.Value]:
    """Per distinct register offset along `dim`, the coordinate it holds."""
    b = ctx.builder
    start = ctx.thread_offsets(mapping)[dim]
    size = mapping.shape[dim]
    offsets = sorted({reg[dim] for reg in mapping.registers})
    return {off: b.urem(b.add(start, I32(off)), I32(size)) for off in offsets}


__all__ = ["UNROLL"]
