"""Executes tile IR (tir) with NumPy, vectorized over the grid.

Every SSA value is an array whose leading dimension is the program index within a chunk of the
grid: scalars have shape (P,), tensors (P, *shape). Programs are numbered with axis 0 fastest;
the grid runs in chunks of programs so that chunk size x the largest tensor stays under 2**20
elements (fastest in the benchmarks: a chunk's arrays stay in cache) and a chunk's tensors
within a memory budget (`tilec_interp.chunking`). Pointer tensors are kept
as per-program bases plus offsets until an op needs addresses (`tilec_interp.pointers`).
Divergent control flow (a loop bound or `if` condition that differs between programs) runs
under a per-program active mask: stores, atomics, prints and asserts of inactive programs are
masked off, and values merge with `np.where`.

Programs that wait on each other (a spin lock, a flag, a grid barrier: a `while` loop whose exit
reads memory that programs write, found by `tilec_interp.waiting`) would never leave such a loop
in lockstep; a kernel with one runs one program at a time, with fair switching between programs
that wait (`tilec_interp.scheduler`). A `while` loop that no program leaves for
TILEC_INTERP_HANG_TIMEOUT seconds (`tilec.settings`) stops the launch with an error naming it.

    execute(module, "add_kernel", (grid,), [x, y, out, n])

Pointer arguments are NumPy arrays, read and written in place (a bf16 buffer is a uint16 array
of bit patterns); scalar arguments are Python ints and floats.

Handlers are found by the op's class (`type(op)`): element-wise ops in `tilec_interp.ops.HANDLERS`,
the others in `_METHODS` below; `NOT_INTERPRETED` names the ops the interpreter never runs, with
the reason (`NOT_INTERPRETED_KINDS` by base class: the matrix-unit ops backends define), and `tests/interp/test_interp_coverage.py` checks that every registered op is in one
or the other.

Exact: integer ops (wrapping), f16/f32/f64 + - * / and casts, bf16 rounding, compares, min/max
NaN rules, memory and atomics (program-major, then element order; old values returned). Defined
where LLVM says poison: see `tilec_interp.ops`. Approximate (not bit-matched to any GPU): float
sums in `tile.reduce` (NumPy pairwise order; f16/bf16 sums and scans accumulate in f32 and round
once, `tilec_interp.reductions`), `tile.dot` (BLAS order; an f16 accumulator is
computed in f32 and rounded), transcendentals (libm; erf from `tilec_interp.special`), `fma`
(float64 with an exact product, then one rounding; see `tilec_interp.special.fma`). Stores of
several lanes to one address: the last in program-major, element order wins.
"""

from __future__ import annotations

import math
import operator
import sys
import time
from collections.abc import Callable, Iterable

import numpy as np

from tilec import settings
from tilec.dialects import (
    arith,
    func,
    gpu,
    gpu_bulk,
    gpu_shared,
    gpu_warp_specialize,
    inline_asm,
    scf,
    tile,
)
from tilec.errors import GridTypeError, GridValueError, LaunchArgumentError
from tilec.ir.attributes import DenseAttr
from tilec.ir.core import Block, Operation
from tilec.ir.module import ModuleOp
from tilec.ir.types import PointerType, element_type, shape_of
from tilec_interp import chunking, dtypes, ops, pointers
from tilec_interp.atomics import atomic_cas, atomic_rmw
from tilec_interp.context import Context, location_text
from tilec_interp.memory import InterpreterError, Memory
from tilec_interp.pointers import Pointers
from tilec_interp.reductions import reduce_op, scan_op
from tilec_interp.scheduler import Scheduler
from tilec_interp.waiting import waiting_loops

__all__ = [
    "INTERPRETED",
    "NOT_INTERPRETED",
    "NOT_INTERPRETED_KINDS",
    "InterpreterError",
    "execute",
    "uncovered_ops",
]

MAX_CHUNK_ELEMENTS = 1 << 20
MAX_GRID_SIZE = 2**31 - 1
"""The most programs along a grid axis: program ids and `tl.num_programs` are i32."""

# A handler of `_METHODS`: (interpreter, op, env, ctx) -> the op's results, or None for none.
Method = Callable[..., "list | None"]


class Interpreter:
    def __init__(
        self,
        module: Operation,
        memory: Memory,
        timeout: float = math.inf,
        waiting: frozenset[Operation] = frozenset(),
        scheduler: Scheduler | None = None,
    ):
        self.module = module
        self.memory = memory
        self.timeout = timeout  # seconds a while loop may run with no program leaving it
        self.waiting = waiting  # the waiting loops, where programs pause (with a scheduler)
        self.scheduler = scheduler

    # Blocks ----------------------------------------------------------------------------------

    def run_block(self, block: Block, env: dict, ctx: Context, args: list) -> list:
        """Run `block` with its arguments bound to `args`; returns the terminator's operands."""
        for arg, value in zip(block.args, args, strict=True):
            env[arg] = value
        for op in block.ops:
            kind = type(op)
            handler = ops.HANDLERS.get(kind)
            if handler is not None:
                args = [env[v] for v in op._operands]
                if any(type(a) is Pointers for a in args):
                    args = [_addresses(a) for a in args]
                env[op.results[0]] = handler(op, args)
                continue
            if kind in _TERMINATORS:
                return [env[v] for v in op._operands]
            method = _METHODS.get(kind)
            if method is None:
                raise InterpreterError(
                    f"{location_text(op)}: the interpreter cannot run '{op.name}'"
                )
            if kind not in _POINTER_AWARE:
                for v in op._operands:
                    if type(env[v]) is Pointers:
                        env[v] = env[v].materialize()
            results = method(self, op, env, ctx)
            if results is not None:
                for r, value in zip(op.results, results, strict=True):
                    env[r] = value
        return []

    def call(self, name: str, ctx: Context, args: list) -> list:
        function = self.module.lookup(name)  # type: ignore[attr-defined]
        if function is None:
            raise InterpreterError(f"no function @{name} in the module")
        return self.run_block(function.entry_block, {}, ctx, args)

    # Errors ----------------------------------------------------------------------------------

    def fail(self, op: Operation, ctx: Context, shape: tuple, flat: int, what: str) -> None:
        numel = math.prod(shape)
        p, lane = divmod(flat, numel)
        index = np.unravel_index(lane, shape) if shape else ()
        lane_text = f", element {tuple(int(i) for i in index)}" if shape else ""
        raise InterpreterError(
            f"{location_text(op)}: out-of-bounds {op.name} in program {ctx.pid(p)}{lane_text}: "
            f"{what}"
        )

    # Memory ----------------------------------------------------------------------------------

    def resolve(self, op, ctx, ptr, flat_sel, pointee):
        """The slow, general path: `flat_sel` is the flat selection (mask and active programs)."""
        shape = ptr.shape[1:]
        sel = flat_sel
        addr = np.ascontiguousarray(ptr).reshape(-1)
        dtype = dtypes.storage_dtype(pointee)
        parts = self.memory.resolve(
            addr, flat_sel, dtype, lambda i, what: self.fail(op, ctx, shape, i, what)
        )
        return parts, dtype, addr.size, sel

    def _selection(self, op, env, ctx, shape):
        """The flat selection of lanes (mask and active programs), None when all are selected."""
        mask = env[op.mask] if op.mask is not None else None
        sel = ctx.combine(mask, shape[1:])
        flat_sel = None if sel is None else np.ascontiguousarray(sel).reshape(-1)
        if flat_sel is not None and bool(flat_sel.all()):
            return None
        return flat_sel

    def _fast_pointers(self, op, env, ctx, dtype):
        """(pointer value, flat selection, (buffer, flat indices) or None) for a `Pointers`
        operand whose selected lanes are certainly in bounds; the pointer is materialized in
        `env` otherwise, for the exact path."""
        ptr = env[op.ptr]
        flat_sel = self._selection(op, env, ctx, ptr.shape)
        if type(ptr) is not Pointers:
            return ptr, flat_sel, None
        sel = None if flat_sel is None else flat_sel.reshape(ptr.shape)
        found = pointers.indices(self.memory, ptr, dtype, sel)
        if found is not None:
            return ptr, flat_sel, (found[0], found[1].reshape(-1))
        env[op.ptr] = ptr = ptr.materialize()
        return ptr, flat_sel, None

    def load(self, op, env, ctx):
        pointee = element_type(op.ptr.type).pointee
        dtype = dtypes.storage_dtype(pointee)
        ptr, flat_sel, fast = self._fast_pointers(op, env, ctx, dtype)
        if fast is not None:
            buf, index = fast
            flat = buf.view(dtype).take(index, mode="clip")  # unselected lanes may be out of range
            return [self._finish_load(op, env, flat, flat_sel, ptr.shape, pointee)]
        addr = np.ascontiguousarray(ptr).reshape(-1)
        if flat_sel is None:
            fast = self.memory.resolve_fast(addr, dtype.itemsize)
        elif flat_sel.any():
            # Masked-off lanes read the first selected lane's address: no compaction, and the
            # bounds check still covers exactly the selected lanes.
            safe = np.where(flat_sel, addr, addr[int(flat_sel.argmax())])
            fast = self.memory.resolve_fast(safe, dtype.itemsize)
        if fast is not None:
            buf, index = fast
            flat = buf.view(dtype).take(index)
        else:
            parts, dtype, n, _ = self.resolve(op, ctx, ptr, flat_sel, pointee)
            flat = np.zeros(n, dtype)
            for buf, idx, pos in parts:
                flat[slice(None) if pos is None else pos] = buf.view(dtype)[idx]
        return [self._finish_load(op, env, flat, flat_sel, ptr.shape, pointee)]

    def _finish_load(self, op, env, flat, flat_sel, shape, pointee):
        value = dtypes.from_storage(flat.reshape(shape), pointee)
        if flat_sel is not None:
            other = env[op.other] if op.other is not None else np.zeros((), value.dtype)
            value = np.where(flat_sel.reshape(shape), value, other)
        return value

    def store(self, op, env, ctx):
        pointee = element_type(op.ptr.type).pointee
        dtype = dtypes.storage_dtype(pointee)
        ptr, flat_sel, fast = self._fast_pointers(op, env, ctx, dtype)
        shape = ptr.shape
        value = np.broadcast_to(dtypes.to_storage(env[op.value], pointee), shape).reshape(-1)
        if fast is not None:
            buf, index = fast
            if flat_sel is not None:
                index, value = index[flat_sel], value[flat_sel]
            if index.size:  # a store masked off everywhere writes nothing, also to read-only
                self.writable(op, buf, dtype)[index] = value
            return
        addr = np.ascontiguousarray(ptr).reshape(-1)
        if flat_sel is not None:
            addr, value = addr[flat_sel], value[flat_sel]
        fast = self.memory.resolve_fast(addr, dtype.itemsize)
        if fast is not None:
            buf, index = fast
            self.writable(op, buf, dtype)[index] = value
            return
        parts, dtype, _, _ = self.resolve(op, ctx, ptr, flat_sel, pointee)
        full = np.broadcast_to(dtypes.to_storage(env[op.value], pointee), ptr.shape).reshape(-1)
        for buf, idx, pos in parts:
            self.writable(op, buf, dtype)[idx] = full if pos is None else full[pos]

    def writable(self, op: Operation, buf, dtype: np.dtype) -> np.ndarray:
        """`buf` viewed as `dtype` for a write by `op`; a read-only array (a NumPy array with
        `writeable` off) is an error at `op`, not NumPy's."""
        if not buf.writeable:
            raise InterpreterError(
                f"{location_text(op)}: {op.name} writes to argument '{buf.name}', a read-only "
                "array; pass a writeable array (array.copy())"
            )
        return buf.view(dtype)

    # Control flow ----------------------------------------------------------------------------

    def scf_for(self, op, env, ctx):
        lb, ub, step = env[op.lower_bound], env[op.upper_bound], env[op.step]
        carried = [env[v] for v in op.init_args]
        block = op.body.block
        act = ctx.active
        live = slice(None) if act is None else act
        lbs, ubs, steps = lb[live], ub[live], step[live]
        if lbs.size == 0:
            return carried
        if bool((steps <= 0).any()):
            raise InterpreterError(f"{location_text(op)}: {op.name} step must be positive")
        if (lbs == lbs[0]).all() and (ubs == ubs[0]).all() and (steps == steps[0]).all():
            for i in range(int(lbs[0]), int(ubs[0]), int(steps[0])):
                iv = np.full(ctx.P, i, lb.dtype)
                carried = self.run_block(block, env, ctx, [iv, *carried])
            return carried
        iv = lb.copy()
        while True:
            on = iv < ub
            if act is not None:
                on &= act
            if not on.any():
                return carried
            new = self.run_block(block, env, ctx.with_active(on), [iv, *carried])
            carried = [_merge(on, n, c) for n, c in zip(new, carried, strict=True)]
            iv = np.where(on, iv + step, iv)

    def scf_if(self, op, env, ctx):
        cond = env[op.condition]
        live = cond if ctx.active is None else cond[ctx.active]
        then_block = op.then_region.block
        else_blocks = op.else_region.blocks
        else_block = else_blocks[0] if else_blocks else None
        if live.size == 0 or live.all() or not live.any():
            taken = bool(live.all()) if live.size else False
            block = then_block if taken else else_block
            return [] if block is None else self.run_block(block, env, ctx, [])
        on = cond if ctx.active is None else cond & ctx.active
        off = ~cond if ctx.active is None else ~cond & ctx.active
        then_values = self.run_block(then_block, env, ctx.with_active(on), [])
        if else_block is None:
            return []
        else_values = self.run_block(else_block, env, ctx.with_active(off), [])
        return [_merge(cond, a, b) for a, b in zip(then_values, else_values, strict=True)]

    def scf_while(self, op, env, ctx):
        carried = [env[v] for v in op.init_args]
        before, after = op.before.block, op.after.block
        results = None
        active = ctx.active if ctx.active is not None else np.ones(ctx.P, np.bool_)
        pauses = self.scheduler is not None and op in self.waiting
        left = time.monotonic()  # when a program last left the loop (or it began)
        while True:
            values = self.run_block(before, env, ctx.with_active(active), carried)
            cond, forwarded = values[0], values[1:]
            stopping = active & ~cond
            if results is None:
                results = list(forwarded)
            else:
                results = [_merge(stopping, f, r) for f, r in zip(forwarded, results, strict=True)]
            active = active & cond
            if not active.any():
                if pauses:
                    self.scheduler.progress()  # type: ignore[union-attr]
                return results
            if pauses:
                self.scheduler.pause(op)  # type: ignore[union-attr]
            elif stopping.any():
                left = time.monotonic()
            elif self._stalled(left):
                self._never_ends(op, ctx, active)
            new = self.run_block(after, env, ctx.with_active(active), forwarded)
            carried = [_merge(active, n, c) for n, c in zip(new, carried, strict=True)]

    def _stalled(self, since: float) -> bool:
        """Whether `timeout` seconds passed since `since` and since the last progress of the
        programs that wait on each other (a loop around a waiting loop waits with it)."""
        if self.scheduler is not None:
            since = max(since, self.scheduler.last_progress)
        return time.monotonic() - since > self.timeout

    def _never_ends(self, op, ctx, active) -> None:
        stuck = np.flatnonzero(active)
        shown = ", ".join(str(ctx.pid(int(p))) for p in stuck[:8])
        more = f" and {stuck.size - 8} more" if stuck.size > 8 else ""
        raise InterpreterError(
            f"{location_text(op)}: this while loop never ends: no program left it for "
            f"{self.timeout:g} s; program(s) {shown}{more} still run it. If the loop is only "
            f"slow, raise TILEC_INTERP_HANG_TIMEOUT (seconds)"
        )

    # Other tile ops --------------------------------------------------------------------------

    def constant(self, op, env, ctx):
        attr = op.value
        t = op.results[0].type
        if isinstance(attr, DenseAttr):
            attr = attr.value
        # A read-only broadcast view: no per-chunk fill of a (P, *shape) array.
        return [np.broadcast_to(dtypes.constant(attr.value, t, ()), (ctx.P, *shape_of(t)))]

    def program_id(self, op, env, ctx):
        return [ctx.pids[op.axis.value]]

    def num_programs(self, op, env, ctx):
        axis = op.axis.value
        size = ctx.grid[axis] if axis < len(ctx.grid) else 1
        return [np.full(ctx.P, size, np.int32)]

    def make_range(self, op, env, ctx):
        start, end = op.start.value, op.end.value
        return [np.broadcast_to(np.arange(start, end, dtype=np.int32), (ctx.P, end - start))]

    def splat(self, op, env, ctx):
        x = env[op.source]
        t = op.results[0].type
        shape = (ctx.P, *t.shape)
        if isinstance(t.element_type, PointerType):
            itemsize = dtypes.storage_dtype(t.element_type.pointee).itemsize
            return [pointers.splat(x, itemsize, shape)]
        return [np.broadcast_to(x.reshape((ctx.P,) + (1,) * len(t.shape)), shape)]

    def _shape_op(self, op, env, ctx, fn):
        x = env[op.source]
        shape = (ctx.P, *op.results[0].type.shape)
        return [x.reshaped(fn, shape) if type(x) is Pointers else fn(x)]

    def broadcast(self, op, env, ctx):
        shape = (ctx.P, *op.results[0].type.shape)
        return self._shape_op(op, env, ctx, lambda x: np.broadcast_to(x, shape))

    def expand_dims(self, op, env, ctx):
        axis = op.axis.value + 1
        return self._shape_op(op, env, ctx, lambda x: np.expand_dims(x, axis))

    def reshape(self, op, env, ctx):
        shape = (ctx.P, *op.results[0].type.shape)
        return self._shape_op(op, env, ctx, lambda x: np.reshape(x, shape))

    def trans(self, op, env, ctx):
        order = (0, *(o + 1 for o in op.order.ints()))
        return self._shape_op(op, env, ctx, lambda x: np.transpose(x, order))

    def addptr(self, op, env, ctx):
        pointee = element_type(op.ptr.type).pointee
        size = dtypes.storage_dtype(pointee).itemsize
        ptr, offset = env[op.ptr], np.asarray(env[op.offset])
        if type(ptr) is Pointers and ptr.itemsize == size:
            return [ptr.add(offset, (ctx.P, *shape_of(op.results[0].type)))]
        # One C-ordered int64 result, computed in place: NumPy would lay out `splat + range`
        # column-major (following the broadcast operand), which makes every later pass slow.
        out = np.empty(np.broadcast_shapes(ptr.shape, offset.shape), np.int64)
        out[...] = offset
        if size != 1:
            np.multiply(out, size, out=out)
        np.add(out, ptr, out=out)
        return [out]

    def int_to_ptr(self, op, env, ctx):
        return [np.asarray(env[op.source]).astype(np.int64)]

    def ptr_to_int(self, op, env, ctx):
        return [np.asarray(env[op.source]).astype(dtypes.value_dtype(op.results[0].type))]

    def dot(self, op, env, ctx):
        """`a @ b + acc`, the inputs converted to the compute type (f32 for an f16 accumulator,
        else the accumulator's); f32 inputs with `input_precision` "tf32" are cut to tf32 first
        (`tf32_truncate`, as the tensor cores read them), with "tf32x3" split into a tf32 `big`
        and `small = tf32(x - big)` and multiplied
        as `small_a @ big_b + big_a @ small_b + big_a @ big_b` (Triton's 3xTF32: the term
        `small_a @ small_b` is left out). The products are summed in f64 (exact products for
        inputs up to f32) and rounded once to the compute type, so the sum does not depend on
        the host: NumPy's f32 BLAS adds in an order, and with FMAs, that depend on the CPU it
        picked a kernel for (issue 22). Integer dots wrap, as on GPUs."""
        a, b, acc = env[op.a], env[op.b], env[op.acc]
        acc_type = op.acc.type
        dtype = dtypes.value_dtype(acc_type)
        if np.issubdtype(dtype, np.integer):  # NumPy's own loop (no BLAS): exact, wrapping
            return [(np.matmul(a.astype(dtype), b.astype(dtype)) + acc).astype(dtype)]
        compute = np.float32 if dtype in (np.float16,) else dtype
        a, b = a.astype(compute), b.astype(compute)
        precision = op.precision if compute == np.float32 else "ieee"
        pairs = [(a, b)]
        if precision in ("tf32", "tf32x3"):
            a_big, b_big = dtypes.tf32_truncate(a), dtypes.tf32_truncate(b)
            pairs = [(a_big, b_big)]
            if precision == "tf32x3":
                a_small, b_small = dtypes.tf32_truncate(a - a_big), dtypes.tf32_truncate(b - b_big)
                pairs = [(a_small, b_big), (a_big, b_small), *pairs]
        wide = [np.matmul(x.astype(np.float64), y.astype(np.float64)) for x, y in pairs]
        product = sum(wide[1:], wide[0]).astype(compute)
        if dtypes.is_bf16(acc_type):
            return [dtypes.bf16_round(product.astype(np.float64) + acc)]
        return [(product.astype(dtype) + acc).astype(dtype)]

    def tile_call(self, op, env, ctx):
        return self.call(op.callee.name, ctx, [env[v] for v in op.args])

    def print_(self, op, env, ctx):
        prefix = op.prefix.value
        values = [env[v] for v in op.values]
        for p in range(ctx.P):
            if ctx.active is not None and not ctx.active[p]:
                continue
            shown = " ".join(np.array2string(np.asarray(v[p])) for v in values)
            print(f"pid {ctx.pid(p)} {prefix}{shown}", file=sys.stdout)

    def assert_(self, op, env, ctx):
        cond = np.asarray(env[op.condition])
        bad = ~cond.reshape(ctx.P, -1).all(axis=1)
        if ctx.active is not None:
            bad &= ctx.active
        if bad.any():
            p = int(np.argmax(bad))
            raise InterpreterError(
                f"{location_text(op)}: assertion failed in program {ctx.pid(p)}: {op.message.value}"
            )

    def nothing(self, op, env, ctx):
        return None

    def refuse_inline_asm(self, op, env, ctx):
        """Assembly is the target's text: the interpreter has no machine to run it on (Triton's
        interpreter refuses it too: "inline_asm not supported in interpreter mode")."""
        raise InterpreterError(
            f"{location_text(op)}: the interp backend cannot execute inline assembly "
            "(tl.inline_asm_elementwise); run this kernel on a GPU backend (backend='nvidia' or "
            "'amd'), or write the operation with tl functions"
        )


def _addresses(x):
    return x.materialize() if type(x) is Pointers else x


def _merge(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = _addresses(a), _addresses(b)
    c = cond.reshape(cond.shape + (1,) * (np.ndim(a) - 1))
    return np.where(c, a, b)


# The ops that end a block: `run_block` returns their operands to the op that owns the region.
_TERMINATORS = frozenset(
    {tile.ReturnOp, tile.ReduceReturnOp, tile.ScanReturnOp, scf.YieldOp, scf.ConditionOp}
)
# Methods that take `Pointers` operands as they are (the others see int64 addresses).
_POINTER_AWARE = frozenset(
    {
        tile.SplatOp,
        tile.BroadcastOp,
        tile.ExpandDimsOp,
        tile.ReshapeOp,
        tile.TransOp,
        tile.AddPtrOp,
        tile.LoadOp,
        tile.DescriptorLoadOp,
        tile.StoreOp,
        tile.DescriptorStoreOp,
        tile.CallOp,
        scf.ForOp,
        scf.IfOp,
        scf.WhileOp,
    }
)
# The ops that need the environment or the programs' context; element-wise `arith` and `math`
# ops are in `tilec_interp.ops.HANDLERS`.
_METHODS: dict[type[Operation], Method] = {
    arith.ConstantOp: Interpreter.constant,
    tile.ProgramIdOp: Interpreter.program_id,
    tile.NumProgramsOp: Interpreter.num_programs,
    tile.MakeRangeOp: Interpreter.make_range,
    tile.SplatOp: Interpreter.splat,
    tile.BroadcastOp: Interpreter.broadcast,
    tile.ExpandDimsOp: Interpreter.expand_dims,
    tile.ReshapeOp: Interpreter.reshape,
    tile.TransOp: Interpreter.trans,
    tile.AddPtrOp: Interpreter.addptr,
    tile.IntToPtrOp: Interpreter.int_to_ptr,
    tile.PtrToIntOp: Interpreter.ptr_to_int,
    tile.LoadOp: Interpreter.load,
    tile.DescriptorLoadOp: Interpreter.load,  # the masked load of its first three operands
    tile.DescriptorStoreOp: Interpreter.store,  # the masked store of its first three
    tile.StoreOp: Interpreter.store,
    tile.AtomicRMWOp: atomic_rmw,
    tile.AtomicCASOp: atomic_cas,
    tile.DotOp: Interpreter.dot,
    tile.ReduceOp: reduce_op,
    tile.ScanOp: scan_op,
    tile.CallOp: Interpreter.tile_call,
    tile.PrintOp: Interpreter.print_,
    tile.AssertOp: Interpreter.assert_,
    tile.BarrierOp: Interpreter.nothing,
    inline_asm.ElementwiseInlineAsmOp: Interpreter.refuse_inline_asm,
    inline_asm.ElementwiseInlineAsmEffectsOp: Interpreter.refuse_inline_asm,
    scf.ForOp: Interpreter.scf_for,
    scf.IfOp: Interpreter.scf_if,
    scf.WhileOp: Interpreter.scf_while,
}
_GIR_SHARED = "a gir op of pipeline-loops (shared memory, async copies): the interpreter runs tir"
# The ops the interpreter never runs, each with the reason (see `uncovered_ops`).
NOT_INTERPRETED: dict[type[Operation], str] = {
    gpu.ConvertLayoutOp: "a gir op: the interpreter runs tir, before layout assignment",
    gpu_shared.LocalAllocOp: _GIR_SHARED,
    gpu_shared.LocalDeallocOp: _GIR_SHARED,
    gpu_shared.AsyncCopyGlobalToLocalOp: _GIR_SHARED,
    gpu_shared.AsyncCommitGroupOp: _GIR_SHARED,
    gpu_shared.AsyncWaitOp: _GIR_SHARED,
    gpu_shared.LocalLoadOp: _GIR_SHARED,
    gpu_shared.LocalStoreOp: _GIR_SHARED,
    gpu_bulk.InitBarriersOp: _GIR_SHARED,
    gpu_bulk.BarrierExpectOp: _GIR_SHARED,
    gpu_bulk.AsyncBulkCopyGlobalToLocalOp: _GIR_SHARED,
    gpu_bulk.WaitBarrierOp: _GIR_SHARED,
    gpu_bulk.InvalBarriersOp: _GIR_SHARED,
    gpu_warp_specialize.ArriveBarrierOp: _GIR_SHARED,
    gpu_warp_specialize.WarpSpecializeOp: _GIR_SHARED,
    gpu_warp_specialize.WarpReturnOp: _GIR_SHARED,
    func.FuncOp: "structure: `execute` and `tile.call` run a function's entry block",
    ModuleOp: "structure: `execute` and `tile.call` look functions up in it",
}
NOT_INTERPRETED_KINDS: dict[type[Operation], str] = {
    gpu_shared.MatrixUnitOp: "a gir op of a backend's matrix unit: the interpreter runs tir",
}
"""The ops the interpreter never runs by base class: those the backends' plugins define."""
INTERPRETED = frozenset(ops.HANDLERS) | frozenset(_METHODS) | _TERMINATORS


def uncovered_ops(op_classes: Iterable[type[Operation]]) -> list[type[Operation]]:
    """The classes among `op_classes` with no interpreter handler and no entry in
    NOT_INTERPRETED (or NOT_INTERPRETED_KINDS): each needs one or the other."""
    kinds = tuple(NOT_INTERPRETED_KINDS)
    return [
        c
        for c in op_classes
        if c not in INTERPRETED and c not in NOT_INTERPRETED and not issubclass(c, kinds)
    ]


def _register(memory: Memory, arg: object, param: str | None, function_name: str) -> int:
    """`memory.register`, with an argument it cannot address (on a GPU, of no array type, with
    strides between element boundaries) refused as a LaunchArgumentError naming it."""
    try:
        return memory.register(arg, param)
    except TypeError as error:
        raise LaunchArgumentError(f"argument '{param}' of {function_name}: {error}") from None


def execute(module: Operation, function_name: str, grid: tuple[int, ...], args: list) -> None:
    """Run `@function_name` of `module` over `grid` (1 to 3 axes) with `args`.

    Pointer arguments are NumPy arrays (strided views too), CPU torch tensors or DLPack
    producers, read and written in place; scalars are Python numbers.
    Raises InterpreterError for out-of-bounds accesses, failed asserts and `while` loops that
    never end (TILEC_INTERP_HANG_TIMEOUT).
    """
    function = module.lookup(function_name)  # type: ignore[attr-defined]
    if function is None:
        raise InterpreterError(f"no function @{function_name} in the module")
    try:
        grid = tuple(operator.index(g) for g in grid)  # ints and NumPy integers, not 2.9
    except TypeError:
        raise GridTypeError(f"the grid of @{function_name} must hold ints, got {grid!r}") from None
    if not 1 <= len(grid) <= 3 or any(g < 0 for g in grid):
        raise GridValueError(
            f"the grid of @{function_name} must have 1 to 3 non-negative sizes, got {grid}"
        )
    for axis, size in enumerate(grid):
        if size > MAX_GRID_SIZE:
            raise GridValueError(
                f"the grid of @{function_name} is {size} programs along axis {axis}; the interp "
                f"backend runs at most {MAX_GRID_SIZE} (2**31 - 1) along an axis (program ids "
                "are i32): launch fewer programs, each doing more (a larger BLOCK)"
            )
    inputs = list(function.signature.inputs)
    if len(args) != len(inputs):
        raise LaunchArgumentError(
            f"@{function_name} takes {len(inputs)} arguments, got {len(args)}"
        )
    memory = Memory()
    scalars = []
    parameters = function.entry_block.args
    for t, arg, parameter in zip(inputs, args, parameters, strict=True):
        if isinstance(t, PointerType):
            scalars.append((t, _register(memory, arg, parameter.name_hint, function_name)))
        else:
            scalars.append((t, arg))
    total = math.prod(grid)
    timeout = settings.interp_hang_timeout()
    full = grid + (1,) * (3 - len(grid))
    waiting = waiting_loops(module)
    if waiting:
        # Programs that wait on each other run one at a time (see tilec_interp.scheduler); they
        # must all be live at once, so they are not chunked.
        chunking.check_fits(chunking.ProgramFootprint(module), function_name)
        interpreter = Interpreter(module, memory, timeout, waiting)

        def run_program(index: int) -> None:
            _run_programs(interpreter, function, full, grid, scalars, index, index + 1)

        def describe(index: int) -> tuple[int, ...]:
            return _context(full, grid, index, index + 1).pid(0)

        interpreter.scheduler = Scheduler(total, run_program, describe, timeout)
        interpreter.scheduler.run()
        return
    chunk = chunking.chunk_size(module, function_name, total, MAX_CHUNK_ELEMENTS)
    interpreter = Interpreter(module, memory, timeout)
    with np.errstate(all="ignore"):
        for start in range(0, total, chunk):
            _run_programs(
                interpreter, function, full, grid, scalars, start, min(start + chunk, total)
            )


def _context(full: tuple, grid: tuple, start: int, stop: int) -> Context:
    """The programs `start` to `stop` (linear ids, axis 0 fastest), all active."""
    linear = np.arange(start, stop, dtype=np.int64)
    pids = (
        (linear % full[0]).astype(np.int32),
        (linear // full[0] % full[1]).astype(np.int32),
        (linear // (full[0] * full[1])).astype(np.int32),
    )
    return Context(linear.size, pids, grid, None)


def _run_programs(interpreter, function, full, grid, scalars, start: int, stop: int) -> None:
    ctx = _context(full, grid, start, stop)
    values = [dtypes.constant(v, t, (ctx.P,)) for t, v in scalars]
    interpreter.run_block(function.entry_block, {}, ctx, values)
