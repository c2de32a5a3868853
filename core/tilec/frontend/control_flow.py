"""Control flow: `for` (scf.for or unrolled), `if` (compile-time or scf.if)."""

from __future__ import annotations

import ast
import logging
import warnings
from typing import Any

from tilec.dialects.scf import ConditionOp, ForOp, IfOp, WhileOp, YieldOp
from tilec.frontend import block_pointers, indexing
from tilec.frontend.block_pointers import BlockPointerValue
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.ir.attributes import IntegerAttr, UnitAttr
from tilec.ir.core import Block, Region
from tilec.ir.types import IntegerType, i1, i32, i64
from tilec.language import condition as tl_condition
from tilec.language import constexpr

log = logging.getLogger(__name__)

LOOP_ITERATORS = ("range", "static_range")
"""The `tl` functions a `for` loop iterates over (`for i in tl.range(...)`), compiled here."""


def assigned_names(statements: list[ast.stmt]) -> list[str]:
    """Names assigned anywhere in `statements`, in first-assignment order."""
    names: list[str] = []
    for statement in statements:
        for node in ast.walk(statement):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                targets = [node.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name) and leaf.id not in names:
                        names.append(leaf.id)
    return names


RANGE_HINTS: dict[str, str] = {}
"""`tl.range`'s scheduling hints that have no effect in tilec, and why: each asks the compiler
to try a transformation that leaves the results unchanged, which Triton too skips where it
cannot apply it. They are checked for type and logged (`TILEC_LOG=info`). The other hints are
honoured: `num_stages` becomes the loop's `num_stages` attribute, which `pipeline-loops` takes
instead of the launch's `num_stages` (the interpreter pipelines nothing, as for the launch
option); `loop_unroll_factor=k` (k > 1) unrolls the loop k times (`emit_unrolled_for`);
`disable_licm=True` marks the loop `disable_licm`, which `licm` leaves alone; `flatten=True` marks
it `flatten`, which `fuse-nested-loops` fuses with its inner loop where Triton does;
`warp_specialize=True` marks the loop `warp_specialize`, which `warp-specialize` gives a producer
warpgroup where it applies (`tilec.layout.warp_specialize`, docs/tma.md step 5; elsewhere, as in
Triton, the loop is compiled as without it);
`disallow_acc_multi_buffer` holds either way (tilec never multi-buffers an accumulator)."""

BOOL_HINTS = ("flatten", "warp_specialize", "disable_licm", "disallow_acc_multi_buffer")
INT_HINTS = ("num_stages", "loop_unroll_factor")

DISABLE_LICM_ATTR = "disable_licm"
"""The `scf.for`/`scf.while` flag of `tl.range(disable_licm=True)` / `tl.condition(...)`."""

WARP_SPECIALIZE_ATTR = "warp_specialize"
"""The `scf.for` flag of `tl.range(warp_specialize=True)`."""

NUM_STAGES_ATTR = "num_stages"
"""The `scf.for` attribute holding `tl.range(num_stages=...)`."""

FLATTEN_ATTR = "flatten"
"""The `scf.for` flag of `tl.range(flatten=True)` (`tilec.layout.fuse_nested_loops`)."""


def unwrap(value: Any) -> Any:
    return value.value if isinstance(value, constexpr) else value


def _range(arg1: Any, arg2: Any = None, step: Any = None) -> list[Any]:
    bounds = [0, arg1] if arg2 is None else [arg1, arg2]
    return [*bounds, 1 if step is None else step]


def _static_range(arg1: Any, arg2: Any = None, step: Any = None) -> list[Any]:
    return _range(arg1, arg2, step)


def _python_range(*args: Any) -> list[Any]:
    if not 1 <= len(args) <= 3:
        raise TypeError(f"range expected 1 to 3 arguments, got {len(args)}")
    return _range(*args) if len(args) < 3 else list(args)


def loop_bounds(iterator: str | None, args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
    """`[start, stop, step]` of `range(...)` (`iterator` None), `tl.range(...)` or
    `tl.static_range(...)`, every keyword checked: unknown ones and hint values tilec cannot
    honour are rejected by name (`loop_stages` reads the honoured `num_stages`)."""
    name = {None: "range", "range": "tl.range", "static_range": "tl.static_range"}[iterator]
    if iterator is None and kwargs:
        raise UserError(f"range() takes no keyword arguments, got {', '.join(kwargs)}")
    hints = {k: v for k, v in kwargs.items() if k in (*RANGE_HINTS, *BOOL_HINTS, *INT_HINTS)}
    if iterator != "range" and hints:
        raise UserError(f"{name} takes no {', '.join(hints)}", "use tl.range for loop hints")
    for hint, value in hints.items():
        _check_range_hint(hint, value.value if isinstance(value, constexpr) else value)
    parse = {None: _python_range, "range": _range, "static_range": _static_range}[iterator]
    try:
        bounds = parse(*args, **{k: v for k, v in kwargs.items() if k not in hints})
    except TypeError as err:
        text = str(err).replace(f"{parse.__name__}()", f"{name}()")
        raise UserError(f"bad arguments to {name}: {text}") from None
    return [b.value if isinstance(b, constexpr) else b for b in bounds]


def _check_range_hint(hint: str, value: Any) -> None:
    if isinstance(value, TensorValue):
        raise UserError(f"tl.range's {hint} must be a compile-time constant")
    if hint in BOOL_HINTS:
        if not isinstance(value, bool):
            raise UserError(f"tl.range's {hint} must be a bool, got {value!r}")
    elif value is not None and type(value) is not int:  # as Triton, below 2 means none
        raise UserError(
            f"tl.range's {hint} must be an int or None, got {value!r}",
            "give the number of stages to pipeline the loop's loads in (below 2: none)"
            if hint == NUM_STAGES_ATTR
            else "give how many times to unroll the loop (below 2: not at all)",
        )
    if hint in RANGE_HINTS and value not in (None, False, 0, 1):
        log.info("tl.range(%s=%r) has no effect: %s", hint, value, RANGE_HINTS[hint])


class ControlFlowMixin:
    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise UserError("for/else is not supported in kernels", "remove the else clause")
        if not isinstance(node.iter, ast.Call):
            raise UserError("kernels loop only over range(...)", "write for i in range(a, b, step)")
        iterator = getattr(self.visit(node.iter.func), "__tilec_builtin__", None)
        if iterator not in LOOP_ITERATORS and (iterator or self.visit(node.iter.func) is not range):
            raise UserError("kernels loop only over range(...)", "write for i in range(a, b, step)")
        args = [self.visit(a) for a in node.iter.args]
        kwargs = {k.arg: self.visit(k.value) for k in node.iter.keywords if k.arg is not None}
        if len(kwargs) != len(node.iter.keywords):
            raise UserError("**kwargs cannot be passed to a loop iterator", "name each keyword")
        bounds = loop_bounds(iterator, args, kwargs)
        stages = kwargs.get(NUM_STAGES_ATTR)
        stages = stages.value if isinstance(stages, constexpr) else stages
        stages = None if stages is None else max(stages, 1)  # Triton: below 2 pipelines nothing
        if not isinstance(node.target, ast.Name):
            raise UserError("the loop variable must be a single name")
        static = all(not isinstance(b, TensorValue) for b in bounds)
        if iterator == "static_range":
            if not static:
                raise UserError("tl.static_range needs constexpr bounds", "use range(...)")
            for i in range(*bounds):
                self.scope[node.target.id] = i
                self.visit_body(node.body)
            return
        if not isinstance(bounds[2], TensorValue) and bounds[2] == 0:
            raise UserError("loop step must not be zero", "count by a nonzero step")
        if self.elementwise and any(  # type: ignore[attr-defined]
            isinstance(b, TensorValue) and b.is_tensor for b in bounds
        ):
            self.elementwise_for(node, bounds)  # type: ignore[attr-defined]
            return
        reverse = None
        if not isinstance(bounds[2], TensorValue) and bounds[2] < 0:  # as Triton: counts up
            bounds = [bounds[1], bounds[0], -bounds[2]]  # from the end, i = stop + start - iv
            reverse = self.loop_values(bounds)[:2]
        disable_licm = unwrap(kwargs.get(DISABLE_LICM_ATTR)) is True
        unroll = unwrap(kwargs.get("loop_unroll_factor")) or 1
        if unroll > 1:
            self.emit_unrolled_for(node, bounds, unroll, stages, disable_licm, reverse)
            return
        specialize = unwrap(kwargs.get(WARP_SPECIALIZE_ATTR)) is True
        flatten = unwrap(kwargs.get(FLATTEN_ATTR)) is True  # an unrolled loop holds k inner loops
        self.emit_for(node, bounds, stages, disable_licm, reverse=reverse, specialize=specialize,
                      flatten=flatten)  # fmt: skip

    def loop_values(self, bounds: list[Any]) -> list[TensorValue]:
        """The bounds as integer scalars of one type (i64 if one is, else i32)."""
        widest = i64 if any(isinstance(b, TensorValue) and b.dtype == i64 for b in bounds) else i32
        values = []
        for bound in bounds:
            value = self.sem.to_value(bound, widest)
            if not isinstance(value.dtype, IntegerType) or value.is_tensor:
                raise UserError("loop bounds must be integer scalars")
            values.append(self.sem.cast(value, widest))
        return values

    def emit_unrolled_for(
        self,
        node: ast.For,
        bounds: list[Any],
        unroll: int,
        stages: Any,
        disable_licm: bool,
        reverse: list[TensorValue] | None = None,
    ) -> None:
        """`tl.range(..., loop_unroll_factor=k)`: a loop whose body is the loop body k times
        (counters i, i + step, ...) over the first multiple of k iterations, then the loop
        over the remaining ones, as Triton's loop unroller does."""
        start, stop, step = self.loop_values(bounds)
        wide = [self.sem.cast(v, i64) for v in (start, stop, step)]
        span = self.sem.binary("-", wide[1], wide[0])
        trips = self.sem.binary(
            "+", self.sem.binary("//", self.sem.binary("-", span, 1), wide[2]), 1
        )
        trips = self.builtins.tl_where(self.sem.binary(">", span, 0), trips, 0)  # type: ignore[attr-defined]
        whole = self.sem.binary("-", trips, self.sem.binary("%", trips, unroll))
        middle = self.sem.binary("+", wide[0], self.sem.binary("*", whole, wide[2]))
        middle = self.sem.cast(middle, start.dtype)
        self.emit_for(node, [start, middle, self.sem.binary("*", step, unroll)], stages,
                      disable_licm, copies=(unroll, step), reverse=reverse)  # fmt: skip
        self.emit_for(node, [middle, stop, step], None, disable_licm, reverse=reverse)

    def emit_for(
        self,
        node: ast.For,
        bounds: list[Any],
        stages: int | None = None,
        disable_licm: bool = False,
        copies: tuple[int, TensorValue] | None = None,
        reverse: list[TensorValue] | None = None,
        specialize: bool = False,
        flatten: bool = False,
    ) -> None:
        """The `scf.for` of `node` (`specialize`: marked `warp_specialize`); with `copies` (k, step), its body is `node`'s body k times,
        for the counter and the k - 1 values after it; with `reverse` (lb, ub), the loop variable
        is `ub + lb - counter` (a negative constant step, counted up as Triton does)."""
        values = self.loop_values(bounds)
        widest = values[0].dtype
        assigned = [
            n
            for n in assigned_names(node.body)
            if n in self.scope and n != node.target.id  # type: ignore[attr-defined]
        ]
        carried = self.carried_names(assigned)
        inits = self.carried_inits(carried)
        body = Block([widest, *(v.type for v in inits)])
        op = self.builder.create(
            ForOp,
            [v.value for v in [*values, *inits]],
            [v.type for v in inits],
            regions=[Region([body])],
        )
        if stages is not None:
            op.attributes[NUM_STAGES_ATTR] = IntegerAttr(stages, i32)
        if disable_licm:
            op.attributes[DISABLE_LICM_ATTR] = UnitAttr()
        if flatten:
            op.attributes[FLATTEN_ATTR] = UnitAttr()
        if specialize:
            op.attributes[WARP_SPECIALIZE_ATTR] = UnitAttr()
        outer = self.scope
        self.scope = self.bind_carried(outer, carried, body.args[1:])
        self.scope[node.target.id] = TensorValue(body.args[0])  # type: ignore[attr-defined]
        body.args[0].name_hint = node.target.id  # type: ignore[attr-defined]
        with self.builder.at(body):
            counter = self.scope[node.target.id]  # type: ignore[attr-defined]
            count, step = copies or (1, None)
            for copy in range(count):
                value = counter
                if copy:
                    value = self.sem.binary("+", counter, self.sem.binary("*", step, copy))
                if reverse is not None:
                    lower, upper = reverse
                    value = self.sem.binary("+", self.sem.binary("-", upper, value), lower)
                self.scope[node.target.id] = value  # type: ignore[attr-defined]
                self.visit_body(node.body)
                self.check_no_return("a loop")
            self.check_nones_kept(assigned, carried, "loop")
            yielded = self.carried_values(outer, carried, inits, "loop")
            self.builder.create(YieldOp, [v.value for v in yielded])
        self.scope = self.bind_carried(outer, carried, op.results)

    def emit_returning_if(self, condition: TensorValue, blocks: list[Block], returns: list) -> Any:
        """The `scf.if` of an `if` whose branches end in `return` (`lift_returns` moved the
        statements after it into the branch that falls through): it yields what each branch
        returns; that is what the function returns."""
        # a branch that reaches the end of the function returns nothing, as `return` does
        returns = [() if r is None else r for r in returns]
        if sum(isinstance(r, tuple) and not r for r in returns) == 1:
            raise UserError(
                "one path through this 'if' returns a value and another returns nothing",
                "return a value on every path",
            )
        then, other = ([*r] if isinstance(r, tuple) else [r] for r in returns)
        if isinstance(returns[0], tuple) != isinstance(returns[1], tuple) or len(then) != len(
            other
        ):
            raise UserError("the branches of this 'if' return different numbers of values")
        yields: list[list[TensorValue]] = [[], []]
        constants: dict[int, Any] = {}
        for k, pair in enumerate(zip(then, other, strict=True)):
            if not any(isinstance(v, TensorValue) for v in pair) and pair[0] == pair[1]:
                constants[k] = pair[0]  # the same compile-time value on both paths
                continue
            if any(isinstance(v, BlockPointerValue) for v in pair):
                raise UserError(
                    "returning a block pointer from an 'if' on a runtime value is not supported",
                    "assign it to a variable in both branches and return that after the 'if'",
                )
            tensors = [v for v in pair if isinstance(v, TensorValue)]
            like = tensors[0] if tensors else self.sem.to_value(pair[0])
            for side, (block, value) in enumerate(zip(blocks, pair, strict=True)):
                with self.builder.at(block):  # Python numbers take the other side's dtype
                    if not isinstance(value, TensorValue):
                        value = self.sem.cast(self.sem.to_value(value, like.dtype), like.dtype)
                    yields[side].append(value)
            if yields[0][-1].type != yields[1][-1].type:
                raise UserError(
                    f"this 'if' returns {yields[0][-1].type} from one branch and "
                    f"{yields[1][-1].type} from the other",
                    "return one type from both, e.g. with .to(tl.float32)",
                )
        op = self.create_if(condition, blocks, yields)
        results = iter(TensorValue(r) for r in op.results)
        merged = [constants[k] if k in constants else next(results) for k in range(len(then))]
        return tuple(merged) if isinstance(returns[0], tuple) else merged[0]

    def visit_If(self, node: ast.If) -> None:
        condition = self.visit(node.test)
        if not isinstance(condition, TensorValue):
            self.visit_body(node.body if condition else node.orelse)
            return
        if condition.is_tensor and self.elementwise:  # type: ignore[attr-defined]
            self.elementwise_if(node, condition)  # type: ignore[attr-defined]
            return
        if condition.is_tensor and condition.type.numel == 1:  # type: ignore[attr-defined]
            loc = self.location(node)  # type: ignore[attr-defined]
            warnings.warn_explicit(  # Triton's warning, and its implicit x.item()
                "If conditional called with multidimensional Tensor instead of scalar; please "
                f'use "if ({ast.unparse(node.test)}).item()" instead',
                UserWarning,
                loc.file,
                loc.line,
            )
            condition = indexing.item(self.builtins, condition)  # type: ignore[attr-defined]
        if condition.is_tensor:
            raise UserError(
                "Boolean value of Tensor with more than one value is ambiguous: 'if' needs a "
                "scalar condition",
                "use tl.where(condition, x, y) for elementwise choices",
            )
        condition = self.sem.cast(condition, i1)
        outer = self.scope
        branches = []
        returns = []
        for statements in (node.body, node.orelse):
            block = Block()
            self.scope = outer.copy()
            with self.builder.at(block):
                self.visit_body(statements)
            returns.append(self.returned)
            self.returned = None
            branches.append((block, self.scope))
        self.scope = outer
        if any(r is not None for r in returns):
            self.returned = self.emit_returning_if(condition, [b for b, _ in branches], returns)
            return
        names = [
            n
            for n in assigned_names(node.body + node.orelse)
            if all(n in s for _, s in branches)
            and any(s[n] is not outer.names.get(n) for _, s in branches)
        ]
        pointers = [
            n for n in names if any(isinstance(s[n], BlockPointerValue) for _, s in branches)
        ]
        names = [n for n in names if n not in pointers]
        results = []
        for block, scope in branches:
            with self.builder.at(block):
                values = []
                for n in names:
                    # a Python value takes the dtype of the other branch's tensor, else of the
                    # first branch's Python value (a `tl.static_range` variable assigned in both
                    # branches); tensors keep theirs: two that differ are an error, as in Triton
                    if isinstance(scope[n], TensorValue):
                        values.append(scope[n])
                        continue
                    tensors = [s[n] for _, s in branches if isinstance(s[n], TensorValue)]
                    other = tensors[0] if tensors else self.sem.to_value(branches[0][1][n])
                    values.append(
                        self.sem.cast(self.sem.to_value(scope[n], other.dtype), other.dtype)
                    )
                results.append(values)
        for n, (a, b) in zip(names, zip(*results, strict=True), strict=True):
            if a.type != b.type:
                raise UserError(
                    f"'{n}' has type {a.type} in the then branch and {b.type} in the else branch",
                    "give it one type in both branches, e.g. with .to(tl.float32)",
                )
        merged = self.yield_block_pointers(pointers, branches, results)
        op = self.create_if(condition, [block for block, _ in branches], results)
        remaining = iter(op.results)
        for n in names:
            result = next(remaining)
            result.name_hint = n
            self.scope[n] = TensorValue(result)
        for n, (template, parts) in merged.items():
            for k, hint in enumerate(part_names(n, template.rank)):
                if parts[k] is None:
                    parts[k] = TensorValue(next(remaining))
                    parts[k].value.name_hint = hint
            self.scope[n] = template.with_parts(parts)

    def create_if(self, condition: TensorValue, blocks: list[Block], yields: list) -> IfOp:
        """The `scf.if` on the i1 scalar `condition` whose then and else regions are `blocks`,
        each ending in a yield of its list of `yields` (empty lists: an `if` without results)."""
        for block, values in zip(blocks, yields, strict=True):
            with self.builder.at(block):
                self.builder.create(YieldOp, [v.value for v in values])
        return self.builder.create(
            IfOp, [condition.value], [v.type for v in yields[0]],
            regions=[Region([blocks[0]]), Region([blocks[1]])],
        )  # fmt: skip

    def yield_block_pointers(self, names: list[str], branches: list, results: list) -> dict:
        """For the block pointers `names` an `if` assigns: append to each branch's `results`
        the parts that differ between the branches (as values of the parts' types); returns
        each name's pointer and its parts, None where the `if` yields it."""
        merged = {}
        for n in names:
            pair = [scope[n] for _, scope in branches]
            if not (isinstance(pair[0], BlockPointerValue) and pair[0].same_kind(pair[1])):
                raise UserError(
                    f"'{n}' is {describe(pair[0])} in the then branch and {describe(pair[1])} "
                    "in the else branch",
                    "give it a block pointer of one element type, block shape and order in "
                    "both branches",
                )
            parts = pair[0].parts()
            types = pair[0].part_types()
            for k, (a, b) in enumerate(zip(parts, pair[1].parts(), strict=True)):
                if same_part(a, b):
                    continue
                parts[k] = None
                for (block, _), part, values in zip(branches, (a, b), results, strict=True):
                    with self.builder.at(block):
                        values.append(self.sem.cast(self.sem.to_value(part, types[k]), types[k]))
            merged[n] = (pair[0], parts)
        return merged

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise UserError("while/else is not supported in kernels", "remove the else clause")
        if self.elementwise:  # type: ignore[attr-defined]
            first = self.visit(node.test)  # a per-element condition loops per element
            first = first.condition if isinstance(first, tl_condition) else first
            if isinstance(first, TensorValue) and first.is_tensor:
                self.elementwise_while(node, first)  # type: ignore[attr-defined]
                return
        assigned = [n for n in assigned_names(node.body) if n in self.scope]
        carried = self.carried_names(assigned)
        inits = self.carried_inits(carried)
        types = [v.type for v in inits]
        before, after = Block(types), Block(types)
        op = self.builder.create(
            WhileOp,
            [v.value for v in inits],
            types,
            regions=[Region([before]), Region([after])],
        )
        outer = self.scope
        self.scope = self.bind_carried(outer, carried, before.args)
        with self.builder.at(before):
            condition = self.visit(node.test)
            if isinstance(condition, tl_condition):  # `while tl.condition(c, disable_licm)`
                if condition.disable_licm:
                    op.attributes[DISABLE_LICM_ATTR] = UnitAttr()
                condition = condition.condition
            condition = self.sem.to_value(condition, i1)
            if condition.is_tensor:
                raise UserError(
                    "'while' needs a scalar condition, got a tensor",
                    "reduce it first, e.g. tl.max(mask, axis=0)",
                )
            condition = self.sem.cast(condition, i1)
            self.builder.create(ConditionOp, [condition.value, *before.args])
        self.scope = self.bind_carried(outer, carried, after.args)
        with self.builder.at(after):
            self.visit_body(node.body)
            self.check_no_return("a loop")
            self.check_nones_kept(assigned, carried, "while loop")
            yielded = self.carried_values(outer, carried, inits, "while loop")
            self.builder.create(YieldOp, [v.value for v in yielded])
        self.scope = self.bind_carried(outer, carried, op.results)

    def carried_names(self, assigned: list[str]) -> list[str]:
        """The loop-carried names of those a loop body assigns: not those that are None before
        the loop (a None is a compile-time value, as in Triton, whose loops carry only kernel
        values; such a name is assigned only under a false constexpr branch, or is an error:
        `check_nones_kept`)."""
        return [n for n in assigned if self.scope[n] is not None]

    def check_nones_kept(self, assigned: list[str], carried: list[str], what: str) -> None:
        """A name None before the loop that its body set to a value is a located error."""
        for name in assigned:
            if name not in carried and self.scope[name] is not None:
                raise UserError(
                    f"'{name}' is None before the {what} and gets a value in its body",
                    f"a loop carries kernel values only: set '{name}' before the loop to a value "
                    "of its type, e.g. tl.zeros([...], dtype=tl.float32)",
                )

    def carried_inits(self, carried: list[str]) -> list[TensorValue]:
        """The initial values of the loop-carried names, a block pointer as its parts."""
        inits = []
        for name in carried:
            value = self.scope[name]
            if isinstance(value, BlockPointerValue):
                inits.extend(block_pointers.materialize(self.sem, value))
            else:
                inits.append(self.sem.to_value(value))
        return inits

    def bind_carried(self, outer: Any, carried: list[str], args: list[Any]) -> Any:
        """`outer` with the carried names bound to `args` (block arguments or results), a block
        pointer rebuilt from as many of them as it has parts."""
        scope = outer.copy()
        remaining = iter(args)
        for name in carried:
            template = outer[name]
            if isinstance(template, BlockPointerValue):
                parts = [next(remaining) for _ in template.parts()]
                for part, hint in zip(parts, part_names(name, template.rank), strict=True):
                    part.name_hint = hint
                scope[name] = template.with_parts([TensorValue(p) for p in parts])
                continue
            arg = next(remaining)
            arg.name_hint = name
            scope[name] = TensorValue(arg)
        return scope

    def carried_values(
        self, outer: Any, carried: list[str], inits: list[TensorValue], what: str
    ) -> list:
        """The values of the loop-carried names at the end of the body, checked against inits."""
        values = []
        remaining = iter(inits)
        for name in carried:
            template, value = outer[name], self.scope[name]
            if isinstance(template, BlockPointerValue) or isinstance(value, BlockPointerValue):
                if not isinstance(template, BlockPointerValue) or not template.same_kind(value):
                    raise UserError(
                        f"loop-carried variable '{name}' changes from {describe(template)} to "
                        f"{describe(value)} in the {what} body",
                        "a loop carries a block pointer of one element type, block shape and "
                        "order: move it with tl.advance",
                    )
                parts = block_pointers.materialize(self.sem, value)
                values.extend(parts)
                for _ in parts:
                    next(remaining)
                continue
            init = next(remaining)
            value = self.sem.to_value(value, init.dtype)
            if value.type != init.type:
                raise UserError(
                    f"loop-carried variable '{name}' changes type from {init.type} to "
                    f"{value.type} in the {what} body",
                    f"initialize '{name}' before the loop with its final type, "
                    "e.g. tl.zeros([...], dtype=tl.float32)",
                )
            values.append(value)
        return values


def part_names(name: str, rank: int) -> list[str]:
    """Name hints of the parts of block pointer `name` (`BlockPointerValue.parts`)."""
    dims = range(rank)
    return [f"{name}_base", *(f"{name}_shape{d}" for d in dims),
            *(f"{name}_stride{d}" for d in dims), *(f"{name}_offset{d}" for d in dims)]  # fmt: skip


def describe(value: Any) -> str:
    return str(value.type) if isinstance(value, TensorValue) else repr(value)


def same_part(a: Any, b: Any) -> bool:
    """Whether two parts of block pointers are one value (then an `if` need not yield it)."""
    if isinstance(a, TensorValue) and isinstance(b, TensorValue):
        return a.value is b.value
    return not isinstance(a, TensorValue) and not isinstance(b, TensorValue) and a == b
