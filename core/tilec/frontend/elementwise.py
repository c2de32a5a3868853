"""`tl.map_elementwise` and Triton's small value classes (`tl.slice`, `tl.tuple`,
`tl.condition`) as they appear in kernels.

`tl.map_elementwise(fn, *args, pack=1)` applies the scalar `@jit` function `fn` to every element
of its (broadcast) arguments. Triton builds a region that runs per element; tilec inlines `fn` on
the whole tensors instead, which gives the same results: `fn` may only compute on its arguments
(arithmetic and math are elementwise), and an `if` on a per-element condition runs both branches
and picks each element's result with `where` (if-conversion: the generator's `lane_mask` holds
the elements a branch applies to); a `while` (or a `for` over `range` bounds) on per-element
values loops while some element does, updating only the elements still looping. That is why
such a branch or loop may not load, store, print or assert (a located error says so), and why an
integer division in it divides by 1 where it does not apply (a division by zero there would be
undefined behaviour on GPUs).

With `pack=k`, `fn` takes k elements of each argument and returns k results of each output, as
in Triton: the packs are k consecutive elements along the last dimension (which k must divide).
"""

from __future__ import annotations

import ast
from typing import Any

from tilec.dialects import arith, tile
from tilec.dialects.scf import ConditionOp, WhileOp, YieldOp
from tilec.frontend.compat_builtins import constant_arg as const
from tilec.frontend.context import TensorValue
from tilec.frontend.control_flow import assigned_names
from tilec.frontend.errors import UserError
from tilec.frontend.kernel import KernelFunction
from tilec.ir.core import Block, Region
from tilec.ir.types import IntegerType, i1, i32
from tilec.language import condition as tl_condition
from tilec.language import slice as tl_slice

EFFECT_BUILTINS = frozenset({
    "load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_and",
    "atomic_or", "atomic_xor", "atomic_cas", "device_print", "device_assert", "debug_barrier",
    "load_tensor_descriptor", "store_tensor_descriptor",
})  # fmt: skip
"""The builtins with effects, refused inside an if-converted branch (they would run for every
element, also those the branch does not apply to)."""


class ElementwiseMixin:
    """Mixed into `Builtins` (which provides `sem`, `value`, `inline`, `as_bits`, `iota` and
    `pick`)."""

    sem: Any
    inline: Any
    lane_masked: bool = False
    """Set by the generator while it emits an if-converted branch."""
    const_pointers: frozenset = frozenset()
    """The kernel's pointer parameters annotated `tl.const` (their IR values)."""

    def check_effects(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        """Refuse what Triton refuses: stores and atomics through a `tl.const` pointer; and
        what tilec cannot do in an if-converted branch."""
        if name == "store" or name.startswith("atomic_"):
            pointer = args[0] if args else kwargs.get("pointer")
            if isinstance(pointer, TensorValue) and _root(pointer.value) in self.const_pointers:
                raise UserError(
                    f"tl.{name} through a pointer annotated tl.const: Cannot store to a constant "
                    "pointer (as in Triton)",
                    "remove the tl.const annotation from the parameter, or store elsewhere",
                )
        if self.lane_masked and name in EFFECT_BUILTINS:
            raise UserError(
                f"tl.{name} under a per-element condition ('if' or loop) in tl.map_elementwise's "
                "function: tilec runs both branches and every iteration for every element "
                "(if-conversion), so it cannot do this for some elements only",
                "move the memory access or print out of the mapped function, or out of the 'if' "
                "or loop",
            )

    def tl_slice(self, start: Any, stop: Any, step: Any) -> tl_slice:
        return tl_slice(*(const(v, "a tl.slice bound") for v in (start, stop, step)))

    def tl_tuple(self, args: Any = (), type: Any = None) -> tuple:
        return tuple(args)

    def tl_condition(self, arg1: Any, disable_licm: Any = False) -> tl_condition:
        flag = const(disable_licm, "tl.condition's disable_licm")
        if not isinstance(flag, bool):
            raise UserError(f"tl.condition's disable_licm must be a bool, got {flag!r}")
        return tl_condition(arg1, flag)

    def tl_map_elementwise(self, scalar_fn: Any, *args: Any, pack: Any = 1) -> Any:
        fn = const(scalar_fn, "tl.map_elementwise's function")
        if not isinstance(fn, KernelFunction):
            raise UserError(
                f"tl.map_elementwise maps a @jit function, got {fn!r}",
                "decorate the scalar function with @triton.jit (@tilec.jit)",
            )
        count = const(pack, "tl.map_elementwise's pack")
        if type(count) is not int or count < 1:
            raise UserError(f"tl.map_elementwise's pack must be an int >= 1, got {count!r}")
        if not args:
            raise UserError("tl.map_elementwise needs at least 1 input tensor")
        values = self.sem.broadcast_all(*(self.value(a) for a in args))  # type: ignore[attr-defined]
        shape = values[0].shape
        if count > 1 and (not shape or shape[-1] % count):
            raise UserError(
                f"tl.map_elementwise's pack ({count}) must divide the last dimension of the "
                f"inputs, got shape {list(shape)}",
                "pack along a last dimension that is a multiple of pack",
            )
        pieces = [self.unpack(v, count) for v in values] if count > 1 else [[v] for v in values]
        fn_args = [piece for group in pieces for piece in group]
        result = self.inline(fn, fn_args, {}, elementwise=True)
        if result is None:
            raise UserError(f"the function mapped by tl.map_elementwise ({fn.__name__}) returns "
                            "nothing", "return the value(s) computed from the element(s)")  # fmt: skip
        single = not isinstance(result, tuple)
        outputs = [result] if single else list(result)
        if len(outputs) % count:
            raise UserError(
                f"with pack={count}, {fn.__name__} must return a multiple of {count} values "
                f"({count} of each result), got {len(outputs)}"
            )
        piece_shape = fn_args[0].shape
        results = []
        for start in range(0, len(outputs), count):
            group = [
                self.full_value(o, piece_shape, fn.__name__) for o in outputs[start : start + count]
            ]
            if len({g.dtype for g in group}) != 1:
                raise UserError(
                    f"{fn.__name__}'s packed results of one output have different types: "
                    f"{', '.join(str(g.dtype) for g in group)} (type mismatch in unpacked results)"
                )
            results.append(self.repack(group, shape) if count > 1 else group[0])
        return results[0] if single else tuple(results)

    def full_value(self, out: Any, shape: tuple[int, ...], name: str) -> TensorValue:
        if isinstance(out, tuple) or out is None:
            raise UserError(f"{name} must return scalars (one value per result), got {out!r}")
        return self.sem.broadcast_to(self.value(out), shape)  # type: ignore[attr-defined]

    def unpack(self, v: TensorValue, count: int) -> list[TensorValue]:
        """The `count` pieces of `v`: piece j holds the elements whose last index is j mod count."""
        bits, restore = self.as_bits(v)  # type: ignore[attr-defined]
        grouped = self.sem.reshape(bits, (*v.shape[:-1], v.shape[-1] // count, count))
        axis = len(grouped.shape) - 1
        index = self.iota(count, axis, grouped.shape)  # type: ignore[attr-defined]
        return [
            restore(self.pick(grouped, self.sem.binary("==", index, j), axis))  # type: ignore[attr-defined]
            for j in range(count)
        ]

    def repack(self, group: list[TensorValue], shape: tuple[int, ...]) -> TensorValue:
        """`unpack`'s inverse: the pieces of `group` put back in their places of `shape`."""
        wide = (*group[0].shape, len(group))
        axis = len(wide) - 1
        index = self.iota(len(group), axis, wide)  # type: ignore[attr-defined]
        spread = [self.sem.broadcast_to(self.sem.expand_dims(g, axis), wide) for g in group]
        result = spread[0]
        for j, piece in enumerate(spread[1:], start=1):
            chosen = self.sem.binary("==", index, j)
            result = self.sem.create(arith.SelectOp, [chosen, piece, result], piece.type)
        return self.sem.reshape(result, shape)


class IfConversionMixin:
    """Mixed into the code generator: `if` on a per-element condition inside a mapped
    function."""

    def elementwise_if(self, node: ast.If, condition: TensorValue) -> None:
        cond = self.sem.cast(condition, i1)
        outer_scope, outer_mask = self.scope, self.lane_mask
        masks = [cond, self.sem.logical_not(cond)]
        if outer_mask is not None:
            masks = [self.sem.binary("&", outer_mask, m) for m in masks]
        branches = []
        for statements, mask in zip((node.body, node.orelse), masks, strict=True):
            self.scope, self.returned = outer_scope.copy(), None
            self.set_lane_mask(mask)
            self.visit_body(statements)
            branches.append((self.scope, self.returned))
        self.scope, self.returned = outer_scope, None
        self.set_lane_mask(outer_mask)
        (then_scope, then_ret), (else_scope, else_ret) = branches
        if then_ret is not None or else_ret is not None:
            self.returned = self.merge(cond, _returned(then_ret), _returned(else_ret), "returns")
            return
        for name in assigned_names(node.body + node.orelse):
            if name not in then_scope or name not in else_scope:
                continue  # undefined on one path: unusable after the 'if', as in Python
            a, b = then_scope[name], else_scope[name]
            if a is b:
                self.scope[name] = a
                continue
            self.scope[name] = self.merge(cond, a, b, f"'{name}'")

    def elementwise_if_expression(self, node: ast.IfExp, condition: TensorValue) -> Any:
        """`a if c else b` on a per-element condition in a mapped function: each branch runs
        under the mask of its lanes (what it loads off the taken path is not read), then each
        element takes its branch's value."""
        cond = self.sem.cast(condition, i1)
        outer_mask = self.lane_mask
        masks = [cond, self.sem.logical_not(cond)]
        if outer_mask is not None:
            masks = [self.sem.binary("&", outer_mask, m) for m in masks]
        values = []
        for branch, mask in zip((node.body, node.orelse), masks, strict=True):
            self.set_lane_mask(mask)
            values.append(self.visit(branch))
        self.set_lane_mask(outer_mask)
        return self.merge(cond, values[0], values[1], "values")

    def elementwise_while(self, node: ast.While, first: TensorValue) -> None:
        """`while` on a per-element condition: the loop runs while some element's condition
        holds; each iteration updates only the elements still looping (the `active` mask, a
        loop-carried value), as if each element ran its own loop."""
        shape = first.shape
        outer_scope, outer_mask = self.scope, self.lane_mask
        active = self.sem.broadcast_to(self.sem.cast(first, i1), shape)
        if outer_mask is not None:
            active = self.sem.binary("&", self.sem.broadcast_to(outer_mask, shape), active)
        carried = [n for n in assigned_names(node.body) if n in outer_scope]
        inits = [self.per_element(outer_scope[n], shape, n) for n in carried] + [active]
        types = [v.type for v in inits]
        before, after = Block(types), Block(types)
        op = self.builder.create(
            WhileOp, [v.value for v in inits], types, regions=[Region([before]), Region([after])]
        )
        self.scope = self.bind_carried(outer_scope, carried, before.args[:-1])
        with self.builder.at(before):
            test = self.visit(node.test)
            condition = self.sem.broadcast_to(self.sem.cast(self.sem.to_value(test), i1), shape)
            looping = self.sem.binary("&", TensorValue(before.args[-1]), condition)
            count = self.builtins.tl_max(self.sem.cast(looping, i32))
            go_on = self.sem.binary("!=", count, 0)
            carried_now = [self.scope[n] for n in carried]
            self.builder.create(ConditionOp, [go_on.value, *(v.value for v in carried_now),
                                              looping.value])  # fmt: skip
        self.scope = self.bind_carried(outer_scope, carried, after.args[:-1])
        looping = TensorValue(after.args[-1])
        with self.builder.at(after):
            old = {n: self.scope[n] for n in carried}
            self.set_lane_mask(looping)
            self.visit_body(node.body)
            self.check_no_return("a loop")
            updated = [
                self.merge(looping, self.per_element(self.scope[n], shape, n), old[n], f"'{n}'")
                for n in carried
            ]
            for n, value, init in zip(carried, updated, inits, strict=False):
                if value.type != init.type:
                    raise UserError(
                        f"loop-carried variable '{n}' changes type from {init.type} to "
                        f"{value.type} in the while loop body",
                        f"initialize '{n}' before the loop with its final type",
                    )
            self.builder.create(YieldOp, [v.value for v in (*updated, looping)])
        self.set_lane_mask(outer_mask)
        self.scope = self.bind_carried(outer_scope, carried, op.results[:-1])

    def elementwise_for(self, node: ast.For, bounds: list[Any]) -> None:
        """`for` over `range` bounds that differ per element: the `while` loop it is
        (`i = start; while i < stop: body; i += step`, `i > stop` for a negative constant
        step), per element."""
        assert isinstance(node.target, ast.Name)
        name = node.target.id
        stop, step = f"{name} stop (tilec)", f"{name} step (tilec)"  # no Python name clashes
        self.scope[name], self.scope[stop], self.scope[step] = bounds

        def load(n: str) -> ast.Name:
            return ast.copy_location(ast.Name(id=n, ctx=ast.Load()), node)

        down = not isinstance(bounds[2], TensorValue) and bounds[2] < 0
        compare = ast.Gt() if down else ast.Lt()
        test = ast.copy_location(ast.Compare(load(name), [compare], [load(stop)]), node)
        target = ast.copy_location(ast.Name(id=name, ctx=ast.Store()), node)
        advance = ast.copy_location(ast.AugAssign(target, ast.Add(), load(step)), node)
        loop = ast.copy_location(ast.While(test, [*node.body, advance], []), node)
        first = self.visit(test)
        self.elementwise_while(loop, self.sem.broadcast_to(first, first.shape))

    def per_element(self, value: Any, shape: tuple[int, ...], name: str) -> TensorValue:
        """`value` as a tensor of `shape` (each element's own copy of it)."""
        if not isinstance(value, (TensorValue, int, float, bool)) or (
            isinstance(value, TensorValue) and value.is_pointer
        ):
            raise UserError(
                f"'{name}' cannot change per element in a loop on a per-element condition",
                "carry numbers in such loops",
            )
        return self.sem.broadcast_to(self.sem.to_value(value), shape)

    def set_lane_mask(self, mask: TensorValue | None) -> None:
        self.lane_mask = mask
        self.builtins.lane_masked = mask is not None

    def merge(self, cond: TensorValue, a: Any, b: Any, what: str) -> Any:
        """Each element's value from `a` where `cond` holds, else from `b` (tuples pairwise)."""
        if isinstance(a, tuple) or isinstance(b, tuple):
            if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
                raise UserError(
                    f"the branches of this 'if' give {what} of different numbers of values",
                    "return (or assign) as many values on every path",
                )
            if not a:
                return ()
            return tuple(self.merge(cond, x, y, what) for x, y in zip(a, b, strict=True))
        if not isinstance(a, TensorValue) and not isinstance(b, TensorValue) and a == b:
            return a
        if not all(isinstance(v, (TensorValue, int, float, bool)) for v in (a, b)):
            raise UserError(f"the branches of this 'if' give {what} values that cannot be merged "
                            f"per element: {a!r} and {b!r}")  # fmt: skip
        tensors = [v for v in (a, b) if isinstance(v, TensorValue)]
        like = tensors[0] if tensors else self.sem.to_value(a)
        x, y = (self.sem.cast(self.sem.to_value(v, like.dtype), like.dtype) if not
                isinstance(v, TensorValue) else v for v in (a, b))  # fmt: skip
        if x.dtype != y.dtype:
            raise UserError(
                f"this 'if' gives {what} of type {x.dtype} in one branch and {y.dtype} in the "
                "other",
                "give both branches one type, e.g. with .to(tl.float32)",
            )
        return self.builtins.tl_where(cond, x, y)

    def safe_divisor(self, symbol: str, lhs: Any, rhs: Any) -> Any:
        """An integer divisor replaced by 1 where the if-converted branch does not apply."""
        if self.lane_mask is None or symbol not in ("//", "%"):
            return rhs
        types = [v.dtype for v in (lhs, rhs) if isinstance(v, TensorValue)]
        if not types or not all(isinstance(t, IntegerType) for t in types):
            return rhs
        divisor = self.sem.to_value(rhs, rhs.dtype if isinstance(rhs, TensorValue) else types[0])
        return self.builtins.tl_where(self.lane_mask, divisor, 1)


_POINTER_MOVES = (tile.AddPtrOp, tile.SplatOp, tile.BroadcastOp, tile.ExpandDimsOp,
                  tile.ReshapeOp, tile.TransOp)  # fmt: skip


def _root(value: Any) -> Any:
    """The value a pointer is computed from through pointer arithmetic and shape ops."""
    while isinstance(getattr(value, "owner", None), _POINTER_MOVES):
        value = value.owner.operands[0]
    return value


def _returned(value: Any) -> Any:
    return () if value is None else value
