"""The `assign-layouts` pass: tir -> gir, a layout on every tensor (the first `gir` pass).

How it decides, per function (see the gir contract in `tilec.dialects.gpu` and DESIGN.md):

1. *Cheap* tensors (constants, `tile.splat`, `tile.make_range`, and element-wise ops, broadcasts
   and `expand_dims` of cheap tensors: offsets, pointers and masks) have no layout of their own:
   each use gets a copy computed directly in the layout it needs (Triton rematerializes these
   rather than convert them).
2. The other tensors fall into classes that must share one layout: the operands and results of
   an element-wise op, a load or store, a scan, a broadcast, a dot's accumulator and result, and
   the init, block argument, yield and result of each loop-carried value.
3. Each class takes the coalesced layout of its first load (Triton's Coalesce pass: the most
   contiguous dimension of the pointer fastest, as many elements a thread as one aligned vector
   access holds), else of its first store or atomic; else, for a reduction's results, the slice
   of the reduced operand's layout; else what an `expand_dims` next to it implies; else
   Triton's default blocked layout for its largest shape.
4. Where a value's layout differs from what a use needs (a load with another coalesced layout,
   a reduction result meeting a loaded tensor, a store whose coalesced layout differs from its
   value's), a `gpu.convert_layout` is inserted after the value's definition.

Each `func.func` gets `gpu.num_warps` and `gpu.threads_per_warp` attributes.
"""

from __future__ import annotations

from tilec.dialects import arith, tile
from tilec.dialects.func import FuncOp
from tilec.dialects.gpu import BlockedEncodingAttr, ConvertLayoutOp, SliceEncodingAttr
from tilec.dialects.inline_asm import ElementwiseInlineAsmOp
from tilec.dialects.scf import ConditionOp, ForOp, IfOp, WhileOp, YieldOp
from tilec.ir.attributes import DenseAttr, IntegerAttr
from tilec.ir.core import BlockArgument, Operation, OpResult, Value
from tilec.ir.traits import Elementwise, MemoryRead, MemoryWrite
from tilec.ir.types import TensorType, i32, shape_of
from tilec.ir.verifier import Diagnostic, KernelDiagnostic, format_diagnostic
from tilec.layout.axis_info import AxisInfoResult
from tilec.layout.blocked import coalesced_layout, default_layout
from tilec.layout.rules import GpuTarget, LayoutRules
from tilec.layout.scf_values import forwarded, yielded
from tilec.passes.base import ModulePass, PassContext

SAME_LAYOUT_OPS = (arith.SelectOp, tile.BroadcastOp, tile.ScanOp, ElementwiseInlineAsmOp)
"""Ops whose tensor operands and results share one layout, as element-wise and memory ops do."""
CHEAP_SOURCES = (arith.ConstantOp, tile.SplatOp, tile.MakeRangeOp)
"""Ops that make a tensor from scalars and attributes: cheap to compute in any layout."""
CHEAP_SHAPE_OPS = (arith.SelectOp, tile.BroadcastOp, tile.ExpandDimsOp)
"""Ops besides element-wise ones that are cheap to compute again when their operands are."""
PINNED_OPS = (tile.ReduceOp, tile.DotOp)
"""Ops whose results are in the layout the op picks, not their class's (so are memory reads')."""


def with_layout(t: TensorType, layout: object) -> TensorType:
    return TensorType(t.shape, t.element_type, layout)  # type: ignore[arg-type]


def is_tensor(value: Value) -> bool:
    return isinstance(value.type, TensorType)


def is_memory_op(op: Operation) -> bool:
    """Loads, stores and atomics: the ops that access memory through their `ptr` operand."""
    return op.has_trait(MemoryRead) or op.has_trait(MemoryWrite)


def memory_pointer(op: Operation) -> Value | None:
    """The `ptr` operand of a load, store or atomic (the memory traits promise one), else None."""
    if not is_memory_op(op):
        return None
    return op.ptr  # type: ignore[attr-defined]


def is_pinned(op: Operation) -> bool:
    """Whether the results of `op` are in the layout the op picks: reductions (a slice of it),
    dots, loads and atomics."""
    return isinstance(op, PINNED_OPS) or op.has_trait(MemoryRead)


def shares_layout(op: Operation) -> bool:
    """Whether the tensor operands and results of `op` must all have one layout."""
    return op.has_trait(Elementwise) or isinstance(op, SAME_LAYOUT_OPS) or is_memory_op(op)


def recomputes_cheaply(op: Operation) -> bool:
    """Whether `op` is cheap to compute again per use when its tensor operands are: a shape
    op, a select, or an element-wise op other than the (costly) `math` dialect functions."""
    if isinstance(op, CHEAP_SHAPE_OPS):
        return True
    return op.has_trait(Elementwise) and not op.name.startswith("math.")


class AssignLayouts(ModulePass):
    name = "assign-layouts"
    stage = "gir"
    description = "give every tensor a blocked or slice layout, coalesced for memory accesses"
    requires = ("axis-info",)

    def run(self, module: Operation, context: PassContext) -> bool:
        target = context.target
        if not isinstance(target, GpuTarget):
            target = GpuTarget(LayoutRules(), arch="")
        info = context.get_analysis("axis-info")
        funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
        for func in funcs:
            _check_kernel_signature(func)
            _check_elements_per_thread(func, target.num_warps, target.rules.threads_per_warp)
            _Assigner(func, target, info).run()
        return bool(funcs)


MAX_ELEMENTS_PER_THREAD = 1024
"""The most elements of one tensor a thread may hold. LLVM's code generation for a kernel grows
about as the square of it (a masked f32 vector add for sm_90a: 0.1, 1.05 and 15.8 s at 32, 128
and 512 elements a thread), so a block of 2**20 elements on 4 warps (8192 a thread) would not
finish compiling; Triton's limit of 2**20 elements a tensor alone does not bound it."""


def _check_elements_per_thread(func: FuncOp, num_warps: int, lanes: int) -> None:
    threads = num_warps * lanes
    for op in func.walk():
        for value in op.results:
            if not isinstance(value.type, TensorType):
                continue
            per_thread = value.type.numel // threads
            if per_thread <= MAX_ELEMENTS_PER_THREAD:
                continue
            raise KernelDiagnostic(
                op,
                f"a tensor of {value.type.numel} elements on {num_warps} warps of {lanes} "
                f"threads is {per_thread} elements a thread, more than the limit of "
                f"{MAX_ELEMENTS_PER_THREAD} (compile time grows as its square)",
                f"use a smaller block and loop over the data, or more warps (num_warps="
                f"{_warps_for(value.type.numel, lanes)})",
            )


def _warps_for(numel: int, lanes: int) -> int:
    warps = 1
    while numel // (warps * lanes) > MAX_ELEMENTS_PER_THREAD:
        warps *= 2
    return warps


def _check_kernel_signature(func: FuncOp) -> None:
    """A function that reaches layout assignment is a kernel (inline has removed the helpers):
    its arguments and results are scalars and pointers. A tensor argument would get a layout that
    its signature does not have, which the verifier then blames on this pass; one that has a
    layout already (gir given again) would get another one than its signature's."""
    signature = func.signature
    for what, types in (("argument", signature.inputs), ("result", signature.results)):
        for index, t in enumerate(types):
            if not isinstance(t, TensorType):
                continue
            laid_out = (
                " (assign-layouts chooses every tensor's layout, and cannot keep a signature's)"
                if t.encoding is not None
                else ""
            )
            raise Diagnostic(
                format_diagnostic(
                    func,
                    f"{what} #{index} is a tensor ({t}); a kernel takes and returns scalars "
                    f"and pointers{laid_out}: pass a pointer and tl.load the tensor, or mark the "
                    "function private so that inline removes it",
                ),
                func,
            )


class _Assigner:
    def __init__(self, func: Operation, target: GpuTarget, info: AxisInfoResult):
        self.func = func
        self.num_warps = target.num_warps
        self.lanes = target.rules.threads_per_warp
        self.max_vector_bytes = target.rules.max_vector_bytes
        self.info = info
        self.ops = list(func.walk())[1:]
        self.values: list[Value] = []
        self.cheap: set[Value] = set()
        self.parent: dict[Value, Value] = {}
        self.anchors: dict[Operation, BlockedEncodingAttr] = {}
        self.strong: set[Operation] = set()
        self.class_layouts: dict[Value, object] = {}
        self.resolving: set[Value] = set()
        self.memo: dict[tuple[Value, object], Value] = {}

    # Steps -----------------------------------------------------------------------------------

    def run(self) -> None:
        self.values = self._values()
        self._find_cheap()
        self._build_classes()
        self._find_anchors()
        values = [v for v in self.values if is_tensor(v) and v not in self.cheap]
        layouts = {v: self.layout(v) for v in values}
        for value, layout in layouts.items():
            value.type = with_layout(value.type, layout)  # type: ignore[arg-type]
        # Every op's requirements are read before any operand is rewritten: a layout found
        # through an operand (a reduction's) must be that operand's class's, not a rewritten
        # copy's (a reduction of constants got a new constant, of no class, as its operand).
        requirements = [
            (op, self._requirements(op)) for op in self.ops if not self._is_cheap_op(op)
        ]
        for op, required in requirements:
            self._fix_operands(op, required)
        for op in reversed(self.ops):
            if self._is_cheap_op(op) and not any(r.has_uses() for r in op.results):
                op.erase()
        self.func.attributes["gpu.num_warps"] = IntegerAttr(self.num_warps, i32)
        self.func.attributes["gpu.threads_per_warp"] = IntegerAttr(self.lanes, i32)

    def _values(self) -> list[Value]:
        values: list[Value] = []
        for op in [self.func, *self.ops]:
            if op is not self.func:
                values.extend(op.results)
            for region in op.regions:
                for block in region.blocks:
                    values.extend(block.args)
        return values

    def _is_cheap_op(self, op: Operation) -> bool:
        return bool(op.results) and all(r in self.cheap for r in op.results)

    def _find_cheap(self) -> None:
        for op in self.ops:
            if len(op.results) != 1 or not is_tensor(op.results[0]):
                continue
            if isinstance(op, CHEAP_SOURCES):
                self.cheap.add(op.results[0])
                continue
            if recomputes_cheaply(op) and all(v in self.cheap for v in op.operands if is_tensor(v)):
                self.cheap.add(op.results[0])

    # Classes ---------------------------------------------------------------------------------

    def find(self, value: Value) -> Value:
        root = value
        while self.parent.get(root, root) is not root:
            root = self.parent[root]
        while value is not root:
            value, self.parent[value] = self.parent[value], root
        return root

    def union(self, values: list[Value]) -> None:
        kept = [v for v in values if is_tensor(v) and v not in self.cheap]
        for other in kept[1:]:
            a, b = self.find(kept[0]), self.find(other)
            if a is not b:
                self.parent[b] = a

    def _build_classes(self) -> None:
        for op in self.ops:
            if shares_layout(op):
                self.union([*op.operands, *op.results])
            elif isinstance(op, tile.ReduceOp):
                self.union(list(op.srcs))
            elif isinstance(op, tile.DotOp):
                self.union([op.acc, op.result])
            elif isinstance(op, ForOp):
                block = op.body.block
                carried = zip(op.init_args, block.args[1:], yielded(block), op.results, strict=True)
                for init, arg, next_value, result in carried:
                    self.union([init, arg, next_value, result])
            elif isinstance(op, IfOp):
                branches = [yielded(r.block) for r in op.regions if r.blocks]
                for i, result in enumerate(op.results):
                    self.union([result, *(values[i] for values in branches)])
            elif isinstance(op, WhileOp):
                before, after = op.before.block, op.after.block
                carried = zip(op.init_args, before.args, yielded(after), strict=True)
                for init, arg, next_value in carried:
                    self.union([init, arg, next_value])
                exits = zip(forwarded(before), after.args, op.results, strict=True)
                for value, arg, result in exits:
                    self.union([value, arg, result])

    def _find_anchors(self) -> None:
        for op in self.ops:
            ptr = memory_pointer(op)
            if ptr is not None and is_tensor(ptr):
                self.anchors[op] = coalesced_layout(
                    ptr, self.info, self.num_warps, self.lanes, self.max_vector_bytes
                )
                if max(self.info.get(ptr).contiguity) > 1:
                    self.strong.add(op)

    # Layouts ---------------------------------------------------------------------------------

    def default(self, value: Value) -> BlockedEncodingAttr:
        return default_layout(shape_of(value.type), self.num_warps, self.lanes)

    def layout(self, value: Value) -> object:
        """The layout `value` is defined in (a pinned result's own, else its class's)."""
        op = value.op if isinstance(value, OpResult) else None
        if op is None or not is_pinned(op):
            return self.class_layout(self.find(value))
        if isinstance(op, tile.ReduceOp):
            return SliceEncodingAttr(op.axis.value, self.op_layout(op))
        return self.op_layout(op)

    def op_layout(self, op: Operation) -> object:
        """The one layout the tensor operands of `op` (and its results, where pinned) have."""
        if op in self.strong:
            return self.anchors[op]
        if op in self.anchors:
            # No contiguity to coalesce for (a gather, a scatter): take the class's layout.
            tensors = [
                v for v in (*op.results, *op.operands) if is_tensor(v) and v not in self.cheap
            ]
            layout = self.class_layout(self.find(tensors[0])) if tensors else None
            return layout if layout is not None else self.anchors[op]
        if isinstance(op, tile.ReduceOp):
            srcs = [v for v in op.srcs if v not in self.cheap]
            if srcs:
                layout = self.class_layout(self.find(srcs[0]))
                if layout is not None:
                    return layout
            return self.default(op.srcs[0])
        if isinstance(op, tile.DotOp):
            layout = self.class_layout(self.find(op.result))
            if isinstance(layout, BlockedEncodingAttr):
                return layout
            return self.default(op.result)
        tensors = [v for v in op.results if is_tensor(v)]
        return self.layout(tensors[0]) if tensors else None

    def class_layout(self, root: Value) -> object:
        if root in self.class_layouts:
            return self.class_layouts[root]
        if root in self.resolving:
            return None
        self.resolving.add(root)
        layout = self._choose(root)
        self.resolving.discard(root)
        self.class_layouts[root] = layout
        return layout

    def _members(self, root: Value) -> list[Value]:
        return [
            v for v in self.values if is_tensor(v) and v not in self.cheap and self.find(v) is root
        ]

    def _choose(self, root: Value) -> object:
        members = self._members(root)
        ops = [op for op in self.ops if self._op_in_class(op, root)]
        memory = [op for op in ops if op in self.strong]
        loads = [op for op in memory if not op.has_trait(MemoryWrite)]
        writes = [op for op in memory if op.has_trait(MemoryWrite)]
        for group in (loads, writes):
            candidates = [self.anchors[op] for op in group]
            if candidates:
                return max(candidates, key=lambda a: self._anchor_score(a, memory))
        for value in members:
            if isinstance(value, OpResult) and isinstance(value.op, tile.ReduceOp):
                return self.layout(value)
        expands = [op for op in ops if isinstance(op, tile.ExpandDimsOp)]
        for op in expands:
            if self.find(op.result) is not root or op.source in self.cheap:
                continue
            layout = self.class_layout(self.find(op.source))
            if isinstance(layout, SliceEncodingAttr) and layout.dim == op.axis.value:
                return layout.parent
        for op in expands:
            if op.source in self.cheap or self.find(op.source) is not root:
                continue
            parent = self.class_layout(self.find(op.result))
            if parent is not None:
                return SliceEncodingAttr(op.axis.value, parent)
        weak = [self.anchors[op] for op in ops if op in self.anchors]
        if weak:
            return weak[0]
        largest = max(members, key=lambda v: v.type.numel)  # type: ignore[attr-defined]
        return self.default(largest)

    def _anchor_score(self, layout: BlockedEncodingAttr, memory: list[Operation]) -> tuple:
        """Prefer the layout most memory ops of the class want, then the widest accesses
        (`max` keeps the first of equals: program order)."""
        uses = sum(1 for op in memory if self.anchors[op] == layout)
        per_thread = 1
        for size in layout.size_per_thread:
            per_thread *= size
        return (uses, per_thread)

    def _op_in_class(self, op: Operation, root: Value) -> bool:
        return any(
            is_tensor(v) and v not in self.cheap and self.find(v) is root
            for v in (*op.operands, *op.results)
        )

    # Rewriting -------------------------------------------------------------------------------

    def _fix_operands(self, op: Operation, requirements: list[tuple[int, object]]) -> None:
        for index, required in requirements:
            value = op.operands[index]
            new = self.materialize(value, required)
            if new is not value:
                op.set_operand(index, new)

    def _requirements(self, op: Operation) -> list[tuple[int, object]]:
        tensors = [i for i, v in enumerate(op.operands) if is_tensor(v)]
        if shares_layout(op) or isinstance(op, tile.ReduceOp):
            layout = self.op_layout(op)
            return [(i, layout) for i in tensors]
        if isinstance(op, tile.ExpandDimsOp):
            return [(0, SliceEncodingAttr(op.axis.value, op.result.type.encoding))]
        if isinstance(op, tile.DotOp):
            return [(2, self.op_layout(op)), (0, self._own(op.a)), (1, self._own(op.b))]
        if isinstance(op, ForOp):
            args = op.body.block.args
            return [(i, args[i - 2].type.encoding) for i in tensors if i >= 3]  # type: ignore[attr-defined]
        if isinstance(op, WhileOp):
            args = op.before.block.args
            return [(i, args[i].type.encoding) for i in tensors]  # type: ignore[attr-defined]
        if isinstance(op, (YieldOp, ConditionOp)):
            targets = self._yield_targets(op)
            return [(i, targets[i].type.encoding) for i in tensors]  # type: ignore[union-attr]
        return [(i, self._own(op.operands[i])) for i in tensors]

    def _yield_targets(self, op: YieldOp | ConditionOp) -> list[Value | None]:
        """The value each operand of a yield or condition flows into (None for the flag)."""
        parent = op.parent_op
        if isinstance(parent, WhileOp) and isinstance(op, ConditionOp):
            return [None, *parent.after.block.args]
        if isinstance(parent, ForOp):
            return list(parent.body.block.args[1:])
        if isinstance(parent, WhileOp):
            return list(parent.before.block.args)
        assert parent is not None
        return list(parent.results)

    def _own(self, value: Value) -> object:
        if value in self.cheap:
            return self.default(value)
        return value.type.encoding  # type: ignore[attr-defined]

    def materialize(self, value: Value, layout: object) -> Value:
        """`value` in `layout`: itself, a copy of a cheap value's computation, or a conversion."""
        if value not in self.cheap and value.type.encoding == layout:  # type: ignore[attr-defined]
            return value
        key = (value, layout)
        if key in self.memo:
            return self.memo[key]
        if value in self.cheap:
            new = self._recompute(value, layout)
        else:
            convert = ConvertLayoutOp(value, with_layout(value.type, layout))  # type: ignore[arg-type]
            convert.location = _location(value) or convert.location
            _insert_after_definition(value, convert)
            new = convert.results[0]
        new.name_hint = value.name_hint
        self.memo[key] = new
        return new

    def _recompute(self, value: Value, layout: object) -> Value:
        op = value.op  # type: ignore[attr-defined]
        result_type = with_layout(value.type, layout)  # type: ignore[arg-type]
        operands = []
        for operand in op.operands:
            if not is_tensor(operand):
                operands.append(operand)
            elif isinstance(op, tile.ExpandDimsOp):
                slice_layout = SliceEncodingAttr(op.axis.value, layout)  # type: ignore[arg-type]
                operands.append(self.materialize(operand, slice_layout))
            else:
                operands.append(self.materialize(operand, layout))
        attributes = dict(op.attributes)
        if isinstance(attributes.get("value"), DenseAttr):
            attributes["value"] = DenseAttr(attributes["value"].value, result_type)
        clone = type(op).create(operands, [result_type], attributes, location=op.location)
        op.parent.insert_after(clone, op)
        return clone.results[0]


def _location(value: Value):
    if isinstance(value, BlockArgument):
        return value.block.parent_op.location if value.block.parent_op else None
    return value.op.location  # type: ignore[attr-defined]


def _insert_after_definition(value: Value, op: Operation) -> None:
    if isinstance(value, BlockArgument):
        block = value.block
        if block.first_op is None:
            block.append(op)
        else:
            block.insert_before(op, block.first_op)
    else:
        value.op.parent.insert_after(op, value.op)  # type: ignore[attr-defined]
