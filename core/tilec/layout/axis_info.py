"""The `axis-info` analysis: per value and dimension, Triton's contiguity, divisibility, constancy.

For a value `x` (a scalar counts as a one-element tensor) and a dimension `d`:

- `contiguity[d] = c`: along `d`, `x` is made of runs of `c` elements that increase by one
  (for pointers: by one element), each run starting at an index divisible by `c`;
- `divisibility[d] = v`: the first element of every run is a multiple of `v`. For pointers it
  counts *bytes* (the address), as in Triton; for integers, the value;
- `constancy[d] = k`: along `d`, runs of `k` elements are equal.

All three are powers of two (or a tensor extent). The facts come from `tile.make_range`,
constants, `tile.divisibility` on function arguments (16 bytes for pointers, 16 for integers)
and `tile.divisibility` / `tile.contiguity` / `tile.constancy` hints on an op (integer arrays,
one entry per dimension: `tl.multiple_of` / `tl.max_contiguous`), and flow through the integer
and pointer arithmetic (`transfer.py`). Everything else is pessimistic (all ones). Encodings are
ignored, so the analysis answers the same on tir and gir.

Layout assignment uses it to pick coalesced layouts; the lowering asks it how wide a load or
store can be (`vector_width`) and whether a mask is constant across a vector (`mask_constancy`).
"""

from __future__ import annotations

from math import gcd

import attrs

from tilec.dialects.func import FuncOp
from tilec.dialects.scf import ForOp, IfOp, WhileOp
from tilec.ir.attributes import ArrayAttr, IntegerAttr
from tilec.ir.core import Block, BlockArgument, Operation, Value
from tilec.ir.types import IntegerType, PointerType
from tilec.layout.axis_lattice import (
    MAX_DIVISIBILITY,
    AxisInfo,
    element_bytes,
    highest_pow2_divisor,
    rank_of,
)
from tilec.layout.scf_values import forwarded, yielded
from tilec.layout.transfer import transfer
from tilec.passes.base import Analysis, PassContext

__all__ = [
    "MAX_DIVISIBILITY",
    "AxisInfo",
    "AxisInfoAnalysis",
    "AxisInfoResult",
    "analyze_axis_info",
    "axis_info",
    "element_bytes",
    "highest_pow2_divisor",
    "rank_of",
]

HINT_ATTRIBUTES = ("tile.contiguity", "tile.divisibility", "tile.constancy")


class AxisInfoResult:
    """The analysis result: `get(value)` gives the `AxisInfo` of any SSA value of the module."""

    def __init__(self, infos: dict[Value, AxisInfo]):
        self._infos = infos

    def get(self, value: Value) -> AxisInfo:
        info = self._infos.get(value)
        return info if info is not None else AxisInfo.unknown(rank_of(value))

    def __contains__(self, value: Value) -> bool:
        return value in self._infos

    def vector_width(self, ptr: Value, dim: int, max_vector_bytes: int = 16) -> int:
        """How many consecutive elements along `dim` one access through `ptr` may cover: the
        contiguity, capped by the alignment (divisibility in bytes over the element size) and
        the widest access. The lowering caps it further by the elements a thread holds."""
        info = self.get(ptr)
        size = element_bytes(ptr)
        alignment = max(info.divisibility[dim] // size, 1)
        return max(1, min(info.contiguity[dim], alignment, max(max_vector_bytes // size, 1)))

    def mask_constancy(self, mask: Value, dim: int) -> int:
        """How many consecutive elements along `dim` a mask is known to be equal over."""
        return self.get(mask).constancy[dim]


def analyze_axis_info(module: Operation) -> AxisInfoResult:
    """Compute the axis info of every value of `module` (a module, or one function)."""
    infos: dict[Value, AxisInfo] = {}
    solver = _Solver(infos, transfer)
    for op in _functions(module):
        solver.function(op)
    return AxisInfoResult(infos)


def axis_info(source: Operation | AxisInfoResult, value: Value) -> AxisInfo:
    """The `AxisInfo` of `value`; `source` is an analysis result or the module (analyzed anew:
    call `analyze_axis_info` once when asking about many values)."""
    if not isinstance(source, AxisInfoResult):
        source = analyze_axis_info(source)
    return source.get(value)


class AxisInfoAnalysis(Analysis):
    name = "axis-info"
    stage = "tir"
    description = "contiguity, divisibility and constancy of every value (Triton's AxisInfo)"

    def analyze(self, module: Operation, context: PassContext) -> AxisInfoResult:
        return analyze_axis_info(module)


def _functions(module: Operation) -> list[FuncOp]:
    if isinstance(module, FuncOp):
        return [module]
    return [op for op in module.walk() if isinstance(op, FuncOp)]


def _hints(op: Operation, info: AxisInfo) -> AxisInfo:
    """Apply `tile.contiguity` / `tile.divisibility` / `tile.constancy` hints set on `op`."""
    fields = {}
    for key, field in zip(
        HINT_ATTRIBUTES, ("contiguity", "divisibility", "constancy"), strict=True
    ):
        hint = op.attributes.get(key)
        if isinstance(hint, IntegerAttr):
            fields[field] = (hint.value,) * info.rank
        elif isinstance(hint, ArrayAttr) and len(hint.elements) == info.rank:
            fields[field] = tuple(hint.ints())
    return attrs.evolve(info, **fields) if fields else info


class _Solver:
    """Walks functions in order; loop-carried values iterate to a fixed point of `join`."""

    def __init__(self, infos: dict[Value, AxisInfo], transfer):
        self.infos = infos
        self.transfer = transfer

    def get(self, value: Value) -> AxisInfo:
        info = self.infos.get(value)
        return info if info is not None else AxisInfo.unknown(rank_of(value))

    def function(self, func: FuncOp) -> None:
        block = func.entry_block
        for index, arg in enumerate(block.args):
            self.infos[arg] = _argument_info(func, index, arg)
        self.block(block)

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        if isinstance(op, ForOp):
            self._for(op)
        elif isinstance(op, IfOp):
            self._if(op)
        elif isinstance(op, WhileOp):
            self._while(op)
        else:
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.args:
                        self.infos[arg] = AxisInfo.unknown(rank_of(arg))
                    self.block(block)
            infos = self.transfer(op, [self.get(v) for v in op.operands])
            for result, info in zip(op.results, infos, strict=True):
                self.infos[result] = _hints(op, info)

    def _fixpoint(self, args: list[BlockArgument], inits: list[AxisInfo], body) -> list[AxisInfo]:
        """Iterate `body` (which returns the values fed back to `args`) until nothing changes."""
        current = list(inits)
        for _ in range(64):
            for arg, info in zip(args, current, strict=True):
                self.infos[arg] = info
            fed_back = body()
            joined = [c.join(f) for c, f in zip(current, fed_back, strict=True)]
            if joined == current:
                return current
            current = joined
        pessimistic = [AxisInfo.unknown(rank_of(a)) for a in args]
        for arg, info in zip(args, pessimistic, strict=True):
            self.infos[arg] = info
        body()
        return pessimistic

    def _for(self, op: ForOp) -> None:
        block = op.body.block
        lower, step = op.lower_bound, op.step
        divisibility = gcd(self.get(lower).divisibility[0], self.get(step).divisibility[0])
        self.infos[block.args[0]] = AxisInfo((1,), (divisibility,), (1,))
        inits = [self.get(v) for v in op.init_args]

        def body() -> list[AxisInfo]:
            self.block(block)
            return [self.get(v) for v in yielded(block)]

        final = self._fixpoint(block.args[1:], inits, body)
        for result, info in zip(op.results, final, strict=True):
            self.infos[result] = info

    def _if(self, op: IfOp) -> None:
        branches = []
        for region in op.regions:
            if region.blocks:
                self.block(region.block)
                branches.append([self.get(v) for v in yielded(region.block)])
        for index, result in enumerate(op.results):
            infos = [y[index] for y in branches]
            joined = infos[0]
            for other in infos[1:]:
                joined = joined.join(other)
            self.infos[result] = joined

    def _while(self, op: WhileOp) -> None:
        before, after = op.before.block, op.after.block
        inits = [self.get(v) for v in op.init_args]

        def body() -> list[AxisInfo]:
            self.block(before)
            passed = [self.get(v) for v in forwarded(before)]
            for arg, info in zip(after.args, passed, strict=True):
                self.infos[arg] = info
            self.block(after)
            return [self.get(v) for v in yielded(after)]

        self._fixpoint(before.args, inits, body)
        passed = [self.get(v) for v in forwarded(before)]
        for result, info in zip(op.results, passed, strict=True):
            self.infos[result] = info


def _argument_info(func: FuncOp, index: int, arg: Value) -> AxisInfo:
    attributes = func.argument_attributes(index)
    divisibility = attributes.get("tile.divisibility")
    value = divisibility.value if isinstance(divisibility, IntegerAttr) else 1
    info = AxisInfo.unknown(rank_of(arg), value)
    if isinstance(arg.type, (IntegerType, PointerType)):
        return info
    return AxisInfo.unknown(rank_of(arg))
