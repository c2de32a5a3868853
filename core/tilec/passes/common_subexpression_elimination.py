"""`cse`: replace an op by an identical, earlier one whose results it can use.

Two ops are identical when they have the same name, operands (the same SSA values; in either
order for commutative ops), attributes and result types, and, for pure ops with regions such as
`tile.reduce`, regions of the same structure (the same ops, using values defined inside at the
same positions and the same values from outside).

Scoped: walking the IR in order, each block opens a scope inside the scope of the block that holds
its parent op, so an op in a loop body or `scf.if` branch may reuse one from an enclosing block,
never one from a nested or sibling region. Functions start from an empty scope.

Only `Pure` ops are merged. Loads (`ReadOnly`) are never merged, since memory may change between
them, and neither are ops with side effects or `scf` control flow.
"""

from __future__ import annotations

from collections.abc import Hashable

from tilec.ir.core import Block, Operation, Value
from tilec.ir.rewriting import Rewriter
from tilec.ir.traits import Commutative, IsolatedFromAbove, IsTerminator, Pure
from tilec.passes.base import ALL_ANALYSES, ModulePass, PassContext


class CommonSubexpressionElimination(ModulePass):
    """Merge identical pure ops, with scoped hash tables over nested regions."""

    name = "cse"
    stage = "tir"
    description = "merge identical pure ops (an outer op may replace an inner one, not the reverse)"
    after = ("canonicalize", "licm")
    invalidates = ALL_ANALYSES

    def run(self, module: Operation, context: PassContext) -> bool:
        rewriter = Rewriter()
        _visit_op(module, [], rewriter)
        return rewriter.changed


Scope = dict[Hashable, Operation]


def _visit_block(block: Block, scopes: list[Scope], rewriter: Rewriter) -> None:
    scopes.append({})
    for op in list(block.ops):
        _visit_op(op, scopes, rewriter)
    scopes.pop()


def _visit_op(op: Operation, scopes: list[Scope], rewriter: Rewriter) -> None:
    inner_scopes = [] if op.has_trait(IsolatedFromAbove) else scopes
    for region in op.regions:
        for block in region.blocks:
            _visit_block(block, inner_scopes, rewriter)
    if not scopes or not _is_candidate(op):
        return
    key = op_key(op)
    if key is None:
        return
    for scope in reversed(scopes):
        existing = scope.get(key)
        if existing is not None:
            rewriter.replace_op(op, existing.results)
            return
    scopes[-1][key] = op


def _is_candidate(op: Operation) -> bool:
    return bool(op.results) and op.has_trait(Pure) and not op.has_trait(IsTerminator)


def op_key(op: Operation) -> Hashable | None:
    """What two ops must share to be merged, or None if `op` cannot be keyed (unhashable
    attributes)."""
    operands: tuple = tuple(op.operands)
    if op.has_trait(Commutative):
        operands = tuple(sorted(operands, key=id))
    key = (op.name, operands, _attributes(op), tuple(op.result_types))
    if op.regions:
        key = (*key, _regions_key(op))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _attributes(op: Operation) -> tuple:
    return tuple(sorted(op.attributes.items(), key=lambda item: item[0]))


def _regions_key(op: Operation) -> tuple:
    """The structure of `op`'s regions: values defined inside them are numbered in order, values
    from outside appear as themselves."""
    numbering: dict[Value, int] = {}

    def ref(value: Value) -> object:
        number = numbering.get(value)
        return value if number is None else ("inner", number)

    def block_key(block: Block) -> tuple:
        for arg in block.args:
            numbering[arg] = len(numbering)
        items: list[tuple] = [tuple(arg.type for arg in block.args)]
        for inner in block.ops:
            regions = tuple(tuple(block_key(b) for b in region.blocks) for region in inner.regions)
            operands = tuple(ref(v) for v in inner.operands)
            items.append(
                (inner.name, operands, _attributes(inner), tuple(inner.result_types), regions)
            )
            for result in inner.results:
                numbering[result] = len(numbering)
        return tuple(items)

    return tuple(tuple(block_key(b) for b in region.blocks) for region in op.regions)
