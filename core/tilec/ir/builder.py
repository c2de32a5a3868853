"""Build IR at an insertion point, stamping each new op with the builder's current location."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from tilec.ir.attributes import UNKNOWN_LOC, Attribute, Location
from tilec.ir.core import Block, Operation, Region, Value
from tilec.ir.types import Type


class Builder:
    """Inserts ops at the end of a block, or before a given op."""

    def __init__(self, block: Block | None = None, *, before: Operation | None = None):
        self.block = block if before is None else before.parent
        self.before = before
        self.location: Location = UNKNOWN_LOC

    @classmethod
    def at_end(cls, block: Block) -> Builder:
        return cls(block)

    @classmethod
    def before_op(cls, op: Operation) -> Builder:
        return cls(before=op)

    def set_insertion_point_to_end(self, block: Block) -> None:
        self.block, self.before = block, None

    def set_insertion_point_before(self, op: Operation) -> None:
        self.block, self.before = op.parent, op

    def set_insertion_point_after(self, op: Operation) -> None:
        assert op.parent is not None
        if op.next_op is None:
            self.set_insertion_point_to_end(op.parent)
        else:
            self.set_insertion_point_before(op.next_op)

    @contextmanager
    def at(self, block: Block) -> Iterator[Builder]:
        """Temporarily insert at the end of `block`."""
        saved = (self.block, self.before)
        self.block, self.before = block, None
        try:
            yield self
        finally:
            self.block, self.before = saved

    @contextmanager
    def loc(self, location: Location) -> Iterator[Builder]:
        saved = self.location
        self.location = location
        try:
            yield self
        finally:
            self.location = saved

    def insert(self, op: Operation) -> Operation:
        if op.location is UNKNOWN_LOC:
            op.location = self.location
        if self.block is None:
            raise ValueError("builder has no insertion point")
        if self.before is None:
            self.block.append(op)
        else:
            self.block.insert_before(op, self.before)
        return op

    def create(
        self,
        cls: type[Operation],
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        attributes: dict[str, Attribute] | None = None,
        regions: Sequence[Region] = (),
    ) -> Operation:
        """Create an op of class `cls` generically and insert it."""
        return self.insert(cls.create(operands, result_types, attributes, regions, self.location))
