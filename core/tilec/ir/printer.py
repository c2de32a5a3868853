"""Print IR as MLIR-like text that `tilec.ir.parser` reads back to the same text.

Generic form of an op::

    %r = dialect.op %a, %b {attr = 1 : i32} : result-type {
    ^bb0(%x: f32):
      ...
    } loc("kernel.py":3:7)

Unit attributes print as `key = unit`, so an attribute dictionary (`{key = ...`) is never mistaken
for a region. Values keep their name hints (`%offsets`) where unique, else they are numbered per
function. Dialect attributes used as tensor encodings get aliases (`#blocked = #gpu.blocked<...>`).
"""

from __future__ import annotations

import io
import re

from tilec.ir.attributes import (
    ArrayAttr,
    Attribute,
    DenseAttr,
    DialectAttr,
    DictAttr,
    TypeAttr,
    format_attr_dict,
    format_key,
)
from tilec.ir.core import Block, Operation, Region, Value
from tilec.ir.types import FunctionType, MemDescType, PointerType, TensorType, Type

_HINT_RE = re.compile(r"[^A-Za-z0-9_$.]")


def sanitize_hint(hint: str | None) -> str | None:
    """A name hint usable as `%name`: starts with a letter or `_`, never all digits."""
    if not hint:
        return None
    cleaned = _HINT_RE.sub("_", hint)
    if cleaned[0].isdigit() or cleaned[0] in "$.":
        cleaned = "v" + cleaned
    return cleaned


class Printer:
    def __init__(
        self, stream: io.StringIO | None = None, *, locations: bool = False, indent: int = 2
    ):
        self.stream = stream or io.StringIO()
        self.locations = locations
        self.indent_width = indent
        self.level = 0
        self.aliases: dict[Attribute, str] = {}
        self._names: dict[Value, str] = {}
        self._used: set[str] = set()
        self._counter = 0
        # per hint, the suffix to try first: names are never freed within a scope, so the first
        # free suffix only grows, and naming n values of one hint stays linear in n
        self._next_suffix: dict[str, int] = {}

    # Values ----------------------------------------------------------------------------------

    def begin_scope(self) -> tuple:
        saved = (self._names, self._used, self._counter, self._next_suffix)
        self._names, self._used, self._counter, self._next_suffix = {}, set(), 0, {}
        return saved

    def end_scope(self, saved: tuple) -> None:
        self._names, self._used, self._counter, self._next_suffix = saved

    def define(self, value: Value) -> str:
        hint = sanitize_hint(value.name_hint)
        if hint is None:
            while str(self._counter) in self._used:
                self._counter += 1
            name = str(self._counter)
            self._counter += 1
        else:
            suffix = self._next_suffix.get(hint, 0)
            name = f"{hint}_{suffix}" if suffix else hint
            while name in self._used:
                suffix += 1
                name = f"{hint}_{suffix}"
            self._next_suffix[hint] = suffix + 1
        self._used.add(name)
        self._names[value] = name
        return "%" + name

    def value(self, value: Value) -> str:
        name = self._names.get(value)
        return "%" + name if name is not None else "%<<UNKNOWN>>"

    # Types and attributes --------------------------------------------------------------------

    def type(self, t: Type) -> str:
        if isinstance(t, TensorType):
            dims = "".join(f"{d}x" for d in t.shape)
            if t.encoding is None:
                return f"tensor<{dims}{self.type(t.element_type)}>"
            return f"tensor<{dims}{self.type(t.element_type)}, {self.attr(t.encoding)}>"
        if isinstance(t, PointerType):
            space = "" if t.address_space == 1 else f", {t.address_space}"
            return f"!tile.ptr<{self.type(t.pointee)}{space}>"
        if isinstance(t, MemDescType) and t.encoding is not None:
            dims = "".join(f"{d}x" for d in t.shape)
            return f"!gpu.memdesc<{dims}{self.type(t.element_type)}, {self.attr(t.encoding)}>"
        if isinstance(t, FunctionType):
            ins = ", ".join(map(self.type, t.inputs))
            outs = ", ".join(map(self.type, t.results))
            return f"({ins}) -> ({outs})"
        return str(t)

    def types(self, types: list[Type]) -> str:
        return ", ".join(self.type(t) for t in types)

    def attr(self, a: Attribute) -> str:
        if a in self.aliases:
            return "#" + self.aliases[a]
        if isinstance(a, TypeAttr):
            return self.type(a.type)
        if isinstance(a, ArrayAttr):
            return "[" + ", ".join(self.attr(e) for e in a.elements) + "]"
        if isinstance(a, DictAttr):
            return self.attr_dict(dict(a.items)) or "{}"
        if isinstance(a, DenseAttr):
            inner = str(a.value).split(" : ")[0]
            return f"dense<{inner}> : {self.type(a.type)}"
        if isinstance(a, DialectAttr):
            return f"#{a.name}<{self.attr_dict(a.parameters()) or '{}'}>"
        return str(a)

    def attr_dict(self, attributes: dict[str, Attribute]) -> str:
        if not attributes:
            return ""
        return (
            "{"
            + ", ".join(f"{format_key(k)} = {self.attr(v)}" for k, v in attributes.items())
            + "}"
        )

    # Structure -------------------------------------------------------------------------------

    def write(self, text: str) -> None:
        self.stream.write(text)

    def newline(self) -> None:
        self.stream.write("\n" + " " * (self.level * self.indent_width))

    def print_module(self, module: Operation) -> str:
        self._collect_aliases(module)
        for attr, alias in self.aliases.items():
            self.write(f"#{alias} = {self._attr_without_alias(attr)}\n")
        if module.attributes:
            self.write(f"module attributes {self.attr_dict(module.attributes)} {{")
            self.level += 1
            for op in module.regions[0].block.ops:
                self.newline()
                self.print_op(op)
            self.level -= 1
            self.write("\n}\n")
        else:
            for index, op in enumerate(module.regions[0].block.ops):
                if index:
                    self.write("\n")
                self.print_op(op)
                self.write("\n")
        return self.stream.getvalue()

    def print_op(self, op: Operation) -> None:
        custom = getattr(type(op), "print_custom", None)
        if custom is not None:
            custom(op, self)
        else:
            self._print_generic(op)
        if self.locations:
            self.write(" " + str(op.location))

    def _print_generic(self, op: Operation) -> None:
        if op.results:
            self.write(", ".join(self.define(r) for r in op.results) + " = ")
        self.write(op.name)
        if op.operands:
            self.write(" " + ", ".join(self.value(v) for v in op.operands))
        if op.attributes:
            self.write(" " + self.attr_dict(op.attributes))
        if op.results:
            self.write(" : " + self.types(op.result_types))
        regions = list(op.regions)
        while regions and not regions[-1].blocks:
            regions.pop()
        for region in regions:
            self.write(" ")
            self.print_region(region)

    def print_region(self, region: Region, *, entry_args: bool = True) -> None:
        self.write("{")
        for index, block in enumerate(region.blocks):
            self.print_block(
                block, label=index > 0 or (entry_args and bool(block.args)), index=index
            )
        self.newline()
        self.write("}")

    def print_block(self, block: Block, *, label: bool, index: int) -> None:
        if label:
            self.newline()
            args = ", ".join(f"{self.define(a)}: {self.type(a.type)}" for a in block.args)
            self.write(f"^bb{index}({args}):" if block.args else f"^bb{index}:")
        self.level += 1
        for op in block.ops:
            self.newline()
            self.print_op(op)
        self.level -= 1

    # Aliases ---------------------------------------------------------------------------------

    def _collect_aliases(self, module: Operation) -> None:
        counts: dict[str, int] = {}

        def visit_encoding(encoding: DialectAttr) -> None:
            if encoding in self.aliases:
                return
            # Layouts nested in this one (a slice's parent) get their aliases first, so this
            # one's definition can refer to them.
            for param in encoding.parameters().values():
                if isinstance(param, DialectAttr) and hasattr(param, "alias_prefix"):
                    visit_encoding(param)
            prefix = getattr(encoding, "alias_prefix", encoding.name.split(".")[-1])
            n = counts.get(prefix, 0)
            counts[prefix] = n + 1
            self.aliases[encoding] = prefix if n == 0 else f"{prefix}{n}"

        def visit_type(t: Type) -> None:
            if isinstance(t, TensorType):
                visit_type(t.element_type)
                if isinstance(t.encoding, DialectAttr):
                    visit_encoding(t.encoding)
            elif isinstance(t, MemDescType) and isinstance(t.encoding, DialectAttr):
                visit_encoding(t.encoding)
            elif isinstance(t, FunctionType):
                for inner in (*t.inputs, *t.results):
                    visit_type(inner)

        for op in module.walk():
            for value in op.results:
                visit_type(value.type)
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.args:
                        visit_type(arg.type)
            for a in op.attributes.values():
                if isinstance(a, TypeAttr):
                    visit_type(a.type)

    def _attr_without_alias(self, a: Attribute) -> str:
        """`a` spelled out (its own alias aside), for its alias definition."""
        saved = self.aliases
        self.aliases = {k: v for k, v in saved.items() if k != a}
        try:
            return self.attr(a)
        finally:
            self.aliases = saved


def print_module(module: Operation, *, locations: bool = False) -> str:
    """The text of a whole module."""
    return Printer(locations=locations).print_module(module)


def print_op(op: Operation, *, locations: bool = False) -> str:
    """The text of one op (with its regions), for diagnostics. Values outside it print by number."""
    printer = Printer(locations=locations)
    _predefine_outside_values(printer, op)
    printer.print_op(op)
    return printer.stream.getvalue()


def _predefine_outside_values(printer: Printer, op: Operation) -> None:
    """Name the values `op` uses but does not define, in the order its function defines them."""
    root = op
    while root.parent_op is not None and root.parent_op.name != "builtin.module":
        root = root.parent_op
    if root is op:
        return
    for inner in root.walk():
        if inner is op:
            return
        for result in inner.results:
            printer.define(result)
        for region in inner.regions:
            for block in region.blocks:
                for arg in block.args:
                    printer.define(arg)


__all__ = ["Printer", "format_attr_dict", "print_module", "print_op"]
