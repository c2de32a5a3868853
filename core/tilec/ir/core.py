"""SSA values, operations, blocks and regions, and the declarative way ops are defined.

An op is a small class in the xDSL style::

    @register_op
    class AddIOp(Operation):
        name = "arith.addi"
        lhs = operand_def(INT_LIKE)
        rhs = operand_def(INT_LIKE)
        result = result_def(INT_LIKE)
        traits = (Pure(), Commutative(), SameOperandsAndResultType())

Operand/result definitions are single, optional (`optional=True`) or variadic (`variadic=True`);
their positions are worked out from the counts, so no segment-size attribute is needed. An op may
declare at most one variadic operand (and one variadic result), or any number of optional ones.
Checks the declaration cannot express go in `verify_()`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar

from tilec.ir.attributes import UNKNOWN_LOC, Attribute, Location
from tilec.ir.types import Type


class VerifyError(Exception):
    """Invalid IR. `op` is the offending operation, if any."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


# Values ----------------------------------------------------------------------------------------


class Value:
    """An SSA value. `uses` maps each (user op, operand index) pair to None, in insertion order."""

    __slots__ = ("name_hint", "type", "uses")

    def __init__(self, type_: Type, name_hint: str | None = None):
        self.type = type_
        self.uses: dict[tuple[Operation, int], None] = {}
        self.name_hint = name_hint

    @property
    def users(self) -> list[Operation]:
        seen: dict[Operation, None] = {}
        for op, _ in self.uses:
            seen[op] = None
        return list(seen)

    def has_uses(self) -> bool:
        return bool(self.uses)

    def replace_all_uses_with(self, new: Value) -> None:
        if new is self:
            return
        for op, index in list(self.uses):
            op.set_operand(index, new)

    @property
    def owner(self) -> Operation | Block:
        raise NotImplementedError

    @property
    def parent_block(self) -> Block | None:
        raise NotImplementedError


class OpResult(Value):
    __slots__ = ("index", "op")

    def __init__(self, type_: Type, op: Operation, index: int):
        super().__init__(type_)
        self.op = op
        self.index = index

    @property
    def owner(self) -> Operation:
        return self.op

    @property
    def parent_block(self) -> Block | None:
        return self.op.parent

    def __repr__(self) -> str:
        return f"<OpResult #{self.index} of {self.op.name}: {self.type}>"


class BlockArgument(Value):
    __slots__ = ("block", "index")

    def __init__(self, type_: Type, block: Block, index: int):
        super().__init__(type_)
        self.block = block
        self.index = index

    @property
    def owner(self) -> Block:
        return self.block

    @property
    def parent_block(self) -> Block:
        return self.block

    def __repr__(self) -> str:
        return f"<BlockArgument #{self.index}: {self.type}>"


# Declarative definitions -----------------------------------------------------------------------


class Constraint:
    """A predicate on types with a description used in error messages ("integer or tensor of integers")."""

    def __init__(self, description: str, predicate: Callable[[Type], bool]):
        self.description = description
        self.predicate = predicate

    def __call__(self, t: Type) -> bool:
        return self.predicate(t)


ANY_TYPE = Constraint("any type", lambda t: True)


class _SlotDef:
    """An operand or result slot of an op class; `__get__` returns the Value(s) it holds."""

    kind_name = ""

    def __init__(
        self, constraint: Constraint = ANY_TYPE, optional: bool = False, variadic: bool = False
    ):
        self.constraint = constraint
        self.optional = optional
        self.variadic = variadic
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def _values(self, op: Operation) -> list[Value]:
        raise NotImplementedError

    def __get__(self, op: Operation | None, owner: type) -> Any:
        if op is None:
            return self
        defs = type(op)._operand_defs if isinstance(self, OperandDef) else type(op)._result_defs
        ranges = segment_ranges(defs, len(self._values(op)))
        start, stop = ranges[defs.index(self)]
        values = self._values(op)[start:stop]
        if self.variadic:
            return tuple(values)
        if self.optional:
            return values[0] if values else None
        return values[0]


class OperandDef(_SlotDef):
    kind_name = "operand"

    def _values(self, op: Operation) -> list[Value]:
        return op._operands


class ResultDef(_SlotDef):
    kind_name = "result"

    def _values(self, op: Operation) -> list[Value]:
        return op.results  # type: ignore[return-value]


def operand_def(
    constraint: Constraint = ANY_TYPE, *, optional: bool = False, variadic: bool = False
) -> Any:
    return OperandDef(constraint, optional, variadic)


def result_def(
    constraint: Constraint = ANY_TYPE, *, optional: bool = False, variadic: bool = False
) -> Any:
    return ResultDef(constraint, optional, variadic)


class AttrDef:
    """An attribute of an op class: its Python class (or classes), and whether it may be absent."""

    def __init__(self, kind: type | tuple[type, ...], optional: bool = False):
        self.kind = kind
        self.optional = optional
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, op: Operation | None, owner: type) -> Any:
        if op is None:
            return self
        return op.attributes.get(self.name)


def attr_def(kind: type | tuple[type, ...], *, optional: bool = False) -> Any:
    return AttrDef(kind, optional)


class RegionDef:
    def __init__(self, optional: bool = False):
        self.optional = optional
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, op: Operation | None, owner: type) -> Any:
        if op is None:
            return self
        return op.regions[type(op)._region_defs.index(self)]


def region_def(*, optional: bool = False) -> Any:
    """A region; an `optional` one may have no block (like `scf.if`'s else region)."""
    return RegionDef(optional)


def segment_ranges(defs: Sequence[_SlotDef], count: int) -> list[tuple[int, int]]:
    """Split `count` values among `defs`: singles take one, the variadic the rest, optionals in order."""
    singles = sum(1 for d in defs if not d.optional and not d.variadic)
    spare = max(count - singles, 0)
    ranges = []
    position = 0
    for d in defs:
        if d.variadic:
            size = spare
        elif d.optional:
            size = 1 if spare > 0 else 0
            spare -= size
        else:
            size = 1
        ranges.append((position, position + size))
        position += size
    return ranges


class Trait:
    """A property of an op class. `verify(op)` raises VerifyError when the op breaks it."""

    def verify(self, op: Operation) -> None:
        pass


OP_REGISTRY: dict[str, type[Operation]] = {}


def register_op(cls: type[Operation]) -> type[Operation]:
    """Make an op class known to the parser under its `name`."""
    if cls.name in OP_REGISTRY and OP_REGISTRY[cls.name] is not cls:
        raise ValueError(f"operation '{cls.name}' is registered twice")
    OP_REGISTRY[cls.name] = cls
    return cls


# Operations ------------------------------------------------------------------------------------


class Operation:
    """An operation: operands, results, attributes, regions and a source location."""

    name: ClassVar[str] = ""
    traits: ClassVar[tuple[Trait, ...]] = ()
    _operand_defs: ClassVar[list[OperandDef]] = []
    _result_defs: ClassVar[list[ResultDef]] = []
    _attr_defs: ClassVar[list[AttrDef]] = []
    _region_defs: ClassVar[list[RegionDef]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        members: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            members.update(vars(klass))
        cls._operand_defs = [v for v in members.values() if isinstance(v, OperandDef)]
        cls._result_defs = [v for v in members.values() if isinstance(v, ResultDef)]
        cls._attr_defs = [v for v in members.values() if isinstance(v, AttrDef)]
        cls._region_defs = [v for v in members.values() if isinstance(v, RegionDef)]

    def __init__(
        self,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        attributes: dict[str, Attribute] | None = None,
        regions: Sequence[Region] = (),
        location: Location | None = None,
    ):
        self._operands: list[Value] = []
        self.results: list[OpResult] = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        self.attributes: dict[str, Attribute] = dict(attributes or {})
        self.regions: list[Region] = []
        self.location: Location = location or UNKNOWN_LOC
        self.parent: Block | None = None
        self._prev: Operation | None = None
        self._next: Operation | None = None
        for value in operands:
            self._append_operand(value)
        for region in regions:
            self.add_region(region)
        missing = len(type(self)._region_defs) - len(self.regions)
        for _ in range(max(missing, 0)):
            self.add_region(Region())

    # Operands --------------------------------------------------------------------------------

    @property
    def operands(self) -> tuple[Value, ...]:
        return tuple(self._operands)

    def _append_operand(self, value: Value) -> None:
        if not isinstance(value, Value):
            raise TypeError(f"operand of '{self.name}' must be a Value, got {value!r}")
        value.uses[(self, len(self._operands))] = None
        self._operands.append(value)

    def set_operand(self, index: int, value: Value) -> None:
        old = self._operands[index]
        old.uses.pop((self, index), None)
        self._operands[index] = value
        value.uses[(self, index)] = None

    def set_operands(self, values: Sequence[Value]) -> None:
        self.drop_operand_uses()
        self._operands = []
        for value in values:
            self._append_operand(value)

    def drop_operand_uses(self) -> None:
        for index, value in enumerate(self._operands):
            value.uses.pop((self, index), None)

    # Results and regions ---------------------------------------------------------------------

    @property
    def result(self) -> OpResult:
        if len(self.results) != 1:
            raise ValueError(f"'{self.name}' has {len(self.results)} results, not one")
        return self.results[0]

    @property
    def result_types(self) -> list[Type]:
        return [r.type for r in self.results]

    def add_region(self, region: Region) -> Region:
        if region.parent is not None:
            raise ValueError("region already belongs to an operation")
        region.parent = self
        self.regions.append(region)
        return region

    # Structure -------------------------------------------------------------------------------

    @classmethod
    def has_trait(cls, trait_type: type[Trait]) -> bool:
        return any(isinstance(t, trait_type) for t in cls.traits)

    @classmethod
    def get_trait(cls, trait_type: type[Trait]) -> Trait | None:
        return next((t for t in cls.traits if isinstance(t, trait_type)), None)

    @property
    def parent_op(self) -> Operation | None:
        if self.parent is None or self.parent.parent is None:
            return None
        return self.parent.parent.parent

    @property
    def next_op(self) -> Operation | None:
        return self._next

    @property
    def prev_op(self) -> Operation | None:
        return self._prev

    def walk(self, *, post_order: bool = False) -> Iterator[Operation]:
        """This op and every op nested in it, parents before children (or after, if post_order)."""
        if not post_order:
            yield self
        for region in self.regions:
            for block in region.blocks:
                for op in list(block.ops):
                    yield from op.walk(post_order=post_order)
        if post_order:
            yield self

    def is_ancestor_of(self, other: Operation) -> bool:
        op: Operation | None = other
        while op is not None:
            if op is self:
                return True
            op = op.parent_op
        return False

    def detach(self) -> Operation:
        if self.parent is not None:
            self.parent.remove(self)
        return self

    def erase(self, *, check_uses: bool = True) -> None:
        """Remove this op from its block and drop every use it makes (also of nested ops)."""
        if check_uses:
            for result in self.results:
                if result.has_uses():
                    raise ValueError(
                        f"cannot erase '{self.name}': result #{result.index} is still used"
                    )
        self.detach()
        for op in self.walk(post_order=True):
            op.drop_operand_uses()

    @classmethod
    def create(
        cls,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        attributes: dict[str, Attribute] | None = None,
        regions: Sequence[Region] = (),
        location: Location | None = None,
    ) -> Operation:
        """Make an op of this class generically, without running a convenience `__init__`."""
        op = cls.__new__(cls)
        Operation.__init__(op, operands, result_types, attributes, regions, location)
        return op

    def clone(self, value_map: dict[Value, Value] | None = None) -> Operation:
        """A deep copy; operands found in `value_map` are remapped, and the map learns the new results."""
        value_map = {} if value_map is None else value_map
        regions = [region.clone(value_map) for region in self.regions]
        new = type(self).create(
            [value_map.get(v, v) for v in self._operands],
            [r.type for r in self.results],
            dict(self.attributes),
            regions,
            self.location,
        )
        for old_result, new_result in zip(self.results, new.results, strict=True):
            new_result.name_hint = old_result.name_hint
            value_map[old_result] = new_result
        return new

    # Verification ----------------------------------------------------------------------------

    def verify_(self) -> None:
        """Checks the declaration cannot express; raise VerifyError."""

    def verify_structure(self) -> None:
        """Check counts, type constraints, attributes, regions and traits of this op alone."""
        cls = type(self)
        _verify_slots(self, cls._operand_defs, self._operands)
        _verify_slots(self, cls._result_defs, self.results)
        for attr in cls._attr_defs:
            value = self.attributes.get(attr.name)
            if value is None:
                if not attr.optional:
                    raise VerifyError(f"requires attribute '{attr.name}'", self)
                continue
            if not isinstance(value, attr.kind):
                kinds = attr.kind if isinstance(attr.kind, tuple) else (attr.kind,)
                expected = " or ".join(k.__name__ for k in kinds)
                raise VerifyError(f"attribute '{attr.name}' must be {expected}, got {value}", self)
        if len(self.regions) != len(cls._region_defs):
            raise VerifyError(
                f"expects {len(cls._region_defs)} region(s), got {len(self.regions)}", self
            )
        for region_def, region in zip(cls._region_defs, self.regions, strict=True):
            if len(region.blocks) > 1:
                raise VerifyError(f"region '{region_def.name}' must have a single block", self)
            if not region.blocks and not region_def.optional:
                raise VerifyError(f"region '{region_def.name}' must not be empty", self)
        for trait in cls.traits:
            trait.verify(self)
        self.verify_()

    # Folding hooks used by canonicalization --------------------------------------------------

    def fold(self, constants: list[Attribute | None]) -> list[Attribute | Value] | None:
        """Fold this op given the constant values of its operands (None where not constant).

        Returns one Attribute (a new constant) or Value (an existing value) per result, or None.
        """
        return None

    @classmethod
    def canonicalization_patterns(cls) -> list[Any]:
        """Rewrite patterns (see `tilec.ir.rewriting.RewritePattern`) applied by canonicalize."""
        return []

    def __repr__(self) -> str:
        return f"<{self.name} at {self.location}>"


def _verify_slots(op: Operation, defs: Sequence[_SlotDef], values: Sequence[Value]) -> None:
    kind = "operand" if defs is type(op)._operand_defs else "result"
    singles = sum(1 for d in defs if not d.optional and not d.variadic)
    optionals = sum(1 for d in defs if d.optional)
    variadic = any(d.variadic for d in defs)
    if len(values) < singles or (not variadic and len(values) > singles + optionals):
        expected = f"{singles}" if not optionals and not variadic else f"at least {singles}"
        if optionals and not variadic:
            expected = f"{singles} to {singles + optionals}"
        raise VerifyError(f"expects {expected} {kind}(s), got {len(values)}", op)
    for slot, (start, stop) in zip(defs, segment_ranges(defs, len(values)), strict=True):
        for position in range(start, stop):
            value_type = values[position].type
            if not slot.constraint(value_type):
                raise VerifyError(
                    f"{kind} #{position} ('{slot.name}') must be {slot.constraint.description}, "
                    f"got {value_type}",
                    op,
                )


# Blocks and regions ----------------------------------------------------------------------------


class Block:
    """A list of operations (kept as a doubly linked list) with typed block arguments."""

    def __init__(self, arg_types: Iterable[Type] = ()):
        self.args: list[BlockArgument] = []
        self.parent: Region | None = None
        self._first: Operation | None = None
        self._last: Operation | None = None
        self._count = 0
        for t in arg_types:
            self.add_arg(t)

    def add_arg(self, type_: Type, name_hint: str | None = None) -> BlockArgument:
        arg = BlockArgument(type_, self, len(self.args))
        arg.name_hint = name_hint
        self.args.append(arg)
        return arg

    def erase_arg(self, arg: BlockArgument) -> None:
        if arg.has_uses():
            raise ValueError("cannot erase a block argument that is still used")
        self.args.remove(arg)
        for index, a in enumerate(self.args):
            a.index = index

    @property
    def ops(self) -> Iterator[Operation]:
        """Iterate the ops; the current op may be removed or erased while iterating."""
        op = self._first
        while op is not None:
            following = op._next
            yield op
            op = following

    def __len__(self) -> int:
        return self._count

    @property
    def first_op(self) -> Operation | None:
        return self._first

    @property
    def last_op(self) -> Operation | None:
        return self._last

    @property
    def parent_op(self) -> Operation | None:
        return self.parent.parent if self.parent is not None else None

    def _link(self, op: Operation, prev: Operation | None, nxt: Operation | None) -> None:
        if op.parent is not None:
            raise ValueError(f"'{op.name}' already belongs to a block; detach it first")
        op.parent = self
        op._prev, op._next = prev, nxt
        if prev is None:
            self._first = op
        else:
            prev._next = op
        if nxt is None:
            self._last = op
        else:
            nxt._prev = op
        self._count += 1

    def append(self, op: Operation) -> Operation:
        self._link(op, self._last, None)
        return op

    def insert_before(self, op: Operation, anchor: Operation) -> Operation:
        assert anchor.parent is self
        self._link(op, anchor._prev, anchor)
        return op

    def insert_after(self, op: Operation, anchor: Operation) -> Operation:
        assert anchor.parent is self
        self._link(op, anchor, anchor._next)
        return op

    def remove(self, op: Operation) -> None:
        assert op.parent is self
        if op._prev is None:
            self._first = op._next
        else:
            op._prev._next = op._next
        if op._next is None:
            self._last = op._prev
        else:
            op._next._prev = op._prev
        op.parent = op._prev = op._next = None
        self._count -= 1

    def index_map(self) -> dict[Operation, int]:
        return {op: i for i, op in enumerate(self.ops)}

    def clone(self, value_map: dict[Value, Value]) -> Block:
        new = Block()
        for arg in self.args:
            value_map[arg] = new.add_arg(arg.type, arg.name_hint)
        for op in self.ops:
            new.append(op.clone(value_map))
        return new


class Region:
    """The body of an op: a list of blocks (tilec's structured ops use exactly one)."""

    def __init__(self, blocks: Iterable[Block] = ()):
        self.blocks: list[Block] = []
        self.parent: Operation | None = None
        for block in blocks:
            self.add_block(block)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The single block of this region."""
        if len(self.blocks) != 1:
            raise ValueError(f"region has {len(self.blocks)} blocks, expected exactly one")
        return self.blocks[0]

    def clone(self, value_map: dict[Value, Value]) -> Region:
        return Region(block.clone(value_map) for block in self.blocks)
