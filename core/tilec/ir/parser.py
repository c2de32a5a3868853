"""Parse the MLIR-like text that `tilec.ir.printer` writes.

Ops are found by name in `OP_REGISTRY` (filled when op modules are imported) and dialect attributes
in `ATTRIBUTE_REGISTRY`, so this module imports no dialect. An op class with a `parse_custom`
classmethod parses its own syntax (e.g. `func.func`). Errors are `ParseError`s that carry
`line:col`, say what was expected, and show the offending line.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import Any

from tilec.ir.attributes import (
    ATTRIBUTE_REGISTRY,
    UNKNOWN_LOC,
    ArrayAttr,
    Attribute,
    DenseAttr,
    DictAttr,
    FileLineColLoc,
    FloatAttr,
    IntegerAttr,
    Location,
    StringAttr,
    SymbolRefAttr,
    TypeAttr,
    UnitAttr,
    integer_bounds,
)
from tilec.ir.core import OP_REGISTRY, Block, Operation, Region, Value
from tilec.ir.module import ModuleOp
from tilec.ir.types import (
    SCALAR_TYPES,
    FloatType,
    FunctionType,
    IntegerType,
    MemDescType,
    PointerType,
    TensorType,
    Type,
    f64,
    i1,
    i64,
)

UNKNOWN_NAME_HOOKS: list[Callable[[str], str | None]] = []
"""Asked in turn about an attribute (`#gpu.mma`) or op (`gpu.warp_group_dot`) name that no
registered class has. A hook may register it (the plugin host loads the plugins, whose backends
register their layouts and ops as they load), and may return a sentence the error then adds
(why no plugin defined it); the parser looks the name up again after each."""


def _unknown_name_notes(name: str, registry: dict[str, Any]) -> tuple[Any, str]:
    """(the class registered for `name` after `UNKNOWN_NAME_HOOKS` ran, or None; their notes)."""
    notes = []
    for hook in UNKNOWN_NAME_HOOKS:
        note = hook(name)
        if name in registry:
            return registry[name], ""
        if note:
            notes.append(note)
    return None, "".join(f"; {note}" for note in notes)


class ParseError(Exception):
    """A syntax or name error at `line:col` of the parsed text."""

    def __init__(self, message: str, source: str, position: int, filename: str = "<input>"):
        self.line = source.count("\n", 0, position) + 1
        line_start = source.rfind("\n", 0, position) + 1
        self.col = position - line_start + 1
        line_end = source.find("\n", position)
        self.source_line = source[line_start : line_end if line_end != -1 else len(source)]
        self.message = message
        self.filename = filename
        shown, at = _window(self.source_line, self.col - 1)
        caret = " " * at + "^"
        super().__init__(f"{filename}:{self.line}:{self.col}: error: {message}\n{shown}\n{caret}")


SHOWN_LINE = 160
"""The most characters of the offending line a ParseError shows (around the column)."""


def _window(line: str, column: int) -> tuple[str, int]:
    """`line` cut to `SHOWN_LINE` characters around `column` ('...' where cut), and the
    column's place in it."""
    if len(line) <= SHOWN_LINE:
        return line, column
    start = max(0, min(column - SHOWN_LINE // 2, len(line) - SHOWN_LINE))
    shown = line[start : start + SHOWN_LINE]
    prefix = "..." if start else ""
    suffix = "..." if start + SHOWN_LINE < len(line) else ""
    return prefix + shown + suffix, column - start + len(prefix)


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
_SUFFIX_ID = re.compile(r"[A-Za-z0-9_$.]+")
_NUMBER = re.compile(r"[-+]?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")
_RESULT_NAMES = re.compile(r"%[A-Za-z0-9_$.]+(?:\s*,\s*%[A-Za-z0-9_$.]+)*\s*=(?!=)")
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


MAX_NESTING = 64
"""How deep types and attributes may nest in IR text (deeper text is a ParseError, not a
RecursionError of the parser, the verifier or a pass)."""
MAX_REGION_NESTING = 220
"""How deep regions may nest (ops inside ops): deep enough for any kernel, and shallow enough
for the printer and the passes, which recurse by region, to stay within Python's recursion
limit."""
MAX_DIMENSION = 2**63 - 1
"""The largest tensor dimension the text may give (a 64-bit signed count)."""
MAX_INTEGER_DIGITS = 100
"""The longest integer literal (a 128-bit value has 39 digits)."""


class _Nesting:
    """One level of nesting of `limit` (a context manager; its own counter per kind)."""

    def __init__(self, parser: Parser, limit: int, what: str):
        self.parser, self.limit, self.what = parser, limit, what

    def __enter__(self) -> None:
        depth = self.parser._depths.get(self.what, 0)
        if depth >= self.limit:
            raise self.parser.error(f"{self.what} nested deeper than {self.limit} levels")
        self.parser._depths[self.what] = depth + 1

    def __exit__(self, *exc: object) -> None:
        self.parser._depths[self.what] -= 1


class Parser:
    def __init__(self, text: str, filename: str = "<input>"):
        self.text = text
        self.pos = 0
        self._depths: dict[str, int] = {}
        self.filename = filename
        self.aliases: dict[str, Attribute] = {}
        # Value names by scope, innermost last; a scope is a region. Names are visible in nested
        # regions but not past an isolated scope (a function), and never shadowed.
        self._scopes: list[dict[str, Value]] = [{}]
        self._isolated: list[bool] = [True]
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def text_location(self, position: int) -> FileLineColLoc:
        """The location of `position` in the parsed text (ops without `loc(...)` get this)."""
        line = bisect.bisect_right(self._line_starts, position)
        return FileLineColLoc(self.filename, line, position - self._line_starts[line - 1] + 1)

    # Low-level scanning ----------------------------------------------------------------------

    def error(self, message: str, position: int | None = None) -> ParseError:
        return ParseError(
            message, self.text, self.pos if position is None else position, self.filename
        )

    def skip_ws(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in " \t\r\n":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end == -1 else end
            else:
                break

    def peek(self, literal: str) -> bool:
        self.skip_ws()
        return self.text.startswith(literal, self.pos)

    def peek_keyword(self, word: str) -> bool:
        self.skip_ws()
        match = _IDENT.match(self.text, self.pos)
        return match is not None and match.group() == word

    def accept(self, literal: str) -> bool:
        if self.peek(literal):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str, what: str | None = None) -> None:
        if not self.accept(literal):
            raise self.error(f"expected {what or repr(literal)}, got {self._found()}")

    def accept_keyword(self, word: str) -> bool:
        if self.peek_keyword(word):
            self.pos += len(word)
            return True
        return False

    def _found(self) -> str:
        self.skip_ws()
        if self.pos >= len(self.text):
            return "end of input"
        token = re.match(r"[A-Za-z0-9_$.%@#^!]+|.", self.text[self.pos :])
        return repr(token.group()) if token else "end of input"

    def at_end(self) -> bool:
        self.skip_ws()
        return self.pos >= len(self.text)

    def identifier(self, what: str = "identifier") -> str:
        self.skip_ws()
        match = _IDENT.match(self.text, self.pos)
        if match is None:
            raise self.error(f"expected {what}, got {self._found()}")
        self.pos = match.end()
        return match.group()

    def prefixed_name(self, sigil: str, what: str) -> str:
        self.skip_ws()
        if not self.text.startswith(sigil, self.pos):
            raise self.error(f"expected {what}, got {self._found()}")
        match = _SUFFIX_ID.match(self.text, self.pos + 1)
        if match is None:
            raise self.error(f"expected {what} after '{sigil}'")
        self.pos = match.end()
        return match.group()

    def integer(self, what: str = "integer") -> int:
        self.skip_ws()
        match = re.compile(r"[-+]?(?:0x[0-9a-fA-F]+|\d+)").match(self.text, self.pos)
        if match is None:
            raise self.error(f"expected {what}, got {self._found()}")
        self.pos = match.end()
        return self._int(match.group(), 0, match.start())

    def string(self) -> str:
        self.skip_ws()
        match = _STRING.match(self.text, self.pos)
        if match is None:
            if self.text.startswith('"', self.pos):
                raise self.error(
                    "unterminated string literal (expected a closing '\"' on this line)"
                )
            raise self.error(f"expected string literal, got {self._found()}")
        self.pos = match.end()
        return re.sub(
            r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), match.group(1)
        )

    def comma_list(self, parse_item, close: str | None = None) -> list[Any]:
        """Items separated by commas; with `close`, the list may be empty and ends at `close`."""
        items: list[Any] = []
        if close is not None and self.accept(close):
            return items
        items.append(parse_item())
        while self.accept(","):
            items.append(parse_item())
        if close is not None:
            self.expect(close, f"',' or '{close}'")
        return items

    # Values ----------------------------------------------------------------------------------

    def push_scope(self, *, isolated: bool = True) -> None:
        """Start a scope of value names; an isolated one (a function) sees no outer names."""
        self._scopes.append({})
        self._isolated.append(isolated)

    def pop_scope(self) -> None:
        self._scopes.pop()
        self._isolated.pop()

    def _lookup(self, name: str) -> Value | None:
        for scope, isolated in zip(reversed(self._scopes), reversed(self._isolated), strict=True):
            if name in scope:
                return scope[name]
            if isolated:
                break
        return None

    def value_name(self) -> tuple[str, int]:
        position = self.pos
        self.skip_ws()
        position = self.pos
        return self.prefixed_name("%", "value name like '%x'"), position

    def define_value(self, name: str, value: Value, position: int) -> None:
        if self._lookup(name) is not None:
            raise self.error(f"redefinition of value %{name}", position)
        self._scopes[-1][name] = value
        if not name.isdigit():
            value.name_hint = name

    def use_value(self) -> Value:
        name, position = self.value_name()
        value = self._lookup(name)
        if value is None:
            raise self.error(f"use of undefined value %{name}", position)
        return value

    # Types -----------------------------------------------------------------------------------

    def type(self) -> Type:
        with self._nesting(MAX_NESTING, "types"):
            return self._type()

    def _nesting(self, limit: int, what: str) -> _Nesting:
        return _Nesting(self, limit, what)

    def _type(self) -> Type:
        self.skip_ws()
        start = self.pos
        if self.accept("!tile.ptr"):
            self.expect("<")
            pointee = self.type()
            space = self.integer("address space") if self.accept(",") else 1
            self.expect(">")
            return PointerType(pointee, space)
        if self.accept("!gpu.memdesc"):
            shaped = self._tensor_type()
            if shaped.rank < 2:
                raise self.error("a !gpu.memdesc is slots x tile dims x element")
            return MemDescType(shaped.shape, shaped.element_type, shaped.encoding)
        if self.peek("("):
            return self.function_type()
        word = _IDENT.match(self.text, self.pos)
        if word is None:
            raise self.error(f"expected type, got {self._found()}")
        name = word.group()
        if name in SCALAR_TYPES:
            self.pos = word.end()
            return SCALAR_TYPES[name]
        if name == "tensor":
            self.pos = word.end()
            return self._tensor_type()
        raise self.error(f"unknown type '{name}'", start)

    def _tensor_type(self) -> TensorType:
        self.expect("<")
        shape = []
        while True:
            self.skip_ws()
            match = re.compile(r"(\d+)x").match(self.text, self.pos)
            if match is None:
                break
            shape.append(self._dimension(match.group(1), match.start()))
            self.pos = match.end()
        if not shape:
            raise self.error("expected tensor dimensions like '128x' (tensors are ranked)")
        element = self.type()
        encoding = self.attribute() if self.accept(",") else None
        self.expect(">")
        return TensorType(tuple(shape), element, encoding)

    def _dimension(self, text: str, position: int) -> int:
        if len(text) > len(str(MAX_DIMENSION)) or int(text) > MAX_DIMENSION:
            shown = text if len(text) <= 24 else f"of {len(text)} digits"
            raise self.error(
                f"tensor dimension {shown} is larger than {MAX_DIMENSION} (2**63 - 1)", position
            )
        return int(text)

    def function_type(self) -> FunctionType:
        self.expect("(")
        inputs = self.comma_list(self.type, ")")
        self.expect("->")
        if self.accept("("):
            results = self.comma_list(self.type, ")")
        else:
            results = [self.type()]
        return FunctionType(inputs, results)

    def type_list(self) -> list[Type]:
        return self.comma_list(self.type)

    def _at_type(self) -> bool:
        self.skip_ws()
        if self.peek("!tile.ptr") or self.peek("!gpu.memdesc") or self.peek("("):
            return True
        word = _IDENT.match(self.text, self.pos)
        return word is not None and (word.group() in SCALAR_TYPES or word.group() == "tensor")

    # Attributes ------------------------------------------------------------------------------

    def attribute(self) -> Attribute:
        with self._nesting(MAX_NESTING, "attributes"):
            return self._attribute()

    def _attribute(self) -> Attribute:
        self.skip_ws()
        start = self.pos
        if self.peek('"'):
            return StringAttr(self.string())
        if self.accept("["):
            return ArrayAttr(self.comma_list(self.attribute, "]"))
        if self.peek("{"):
            return DictAttr(tuple(self.attr_dict().items()))
        if self.peek("@"):
            return SymbolRefAttr(self.prefixed_name("@", "symbol name"))
        if self.peek("#"):
            return self._hash_attribute()
        for word, value in (("true", 1), ("false", 0)):
            if self.accept_keyword(word):
                return IntegerAttr(value, i1)
        if self.accept_keyword("unit"):
            return UnitAttr()
        if self.accept_keyword("dense"):
            self.expect("<")
            self.skip_ws()
            inner_start = self.pos
            if self.accept_keyword("true") or self.accept_keyword("false"):
                literal: int | float = int(self.text.startswith("true", inner_start))
            else:
                literal = self._number_literal()
            self.expect(">")
            self.expect(":")
            tensor = self.type()
            if not isinstance(tensor, TensorType):
                raise self.error("dense attribute needs a tensor type", inner_start)
            return DenseAttr(self._typed_number(literal, tensor.element_type, inner_start), tensor)
        if self._at_type():
            return TypeAttr(self.type())
        if re.compile(r"[-+]?(\d|inf|nan)").match(self.text, self.pos):
            literal = self._number_literal()
            if self.accept(":"):
                self.skip_ws()
                type_start = self.pos
                return self._typed_number(literal, self.type(), type_start, start)
            if isinstance(literal, float):
                return FloatAttr(literal, f64)
            return self._integer_attr(literal, i64, start)
        raise self.error(f"expected attribute value, got {self._found()}", start)

    def _number_literal(self) -> int | float:
        self.skip_ws()
        special = re.compile(r"[-+]?(inf|nan)\b").match(self.text, self.pos)
        if special is not None:
            self.pos = special.end()
            return float(special.group())
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            raise self.error(f"expected number, got {self._found()}")
        self.pos = match.end()
        text = match.group()
        if text.lstrip("+-").startswith("0x"):
            return self._int(text, 16, match.start())
        if any(c in text for c in ".eE"):
            return float(text)
        return self._int(text, 10, match.start())

    def _int(self, text: str, base: int, position: int) -> int:
        if len(text) > MAX_INTEGER_DIGITS:
            raise self.error(
                f"integer literal of {len(text)} characters (at most {MAX_INTEGER_DIGITS})",
                position,
            )
        return int(text, base)

    def _typed_number(
        self, literal: int | float, type_: Type, position: int, literal_position: int | None = None
    ) -> Attribute:
        if isinstance(type_, FloatType):
            return FloatAttr(float(literal), type_)
        if isinstance(type_, IntegerType):
            if isinstance(literal, float):
                raise self.error(f"expected integer literal for type {type_}", position)
            at = position if literal_position is None else literal_position
            return self._integer_attr(literal, type_, at)
        raise self.error(f"a number literal cannot have type {type_}", position)

    def _integer_attr(self, value: int, type_: IntegerType, position: int) -> IntegerAttr:
        low, high = integer_bounds(type_)
        if not low <= value <= high:
            raise self.error(
                f"integer {value} is out of range for {type_} ({low} to {high}): give a value "
                f"that fits, or a wider type",
                position,
            )
        return IntegerAttr(value, type_)

    def _hash_attribute(self) -> Attribute:
        start = self.pos
        name = self.prefixed_name("#", "attribute alias or '#dialect.attr<...>'")
        if not self.peek("<"):
            if name not in self.aliases:
                raise self.error(f"undefined attribute alias #{name}", start)
            return self.aliases[name]
        cls = ATTRIBUTE_REGISTRY.get(name)
        if cls is None:
            cls, notes = _unknown_name_notes(name, ATTRIBUTE_REGISTRY)
        if cls is None:
            raise self.error(
                f"unknown attribute '#{name}' (is its dialect imported?){notes}", start
            )
        self.expect("<")
        params = self.attr_dict() if self.peek("{") else {}
        self.expect(">")
        try:
            return cls.from_parameters(params)
        except ValueError as exc:
            raise self.error(f"invalid #{name}: {exc}", start) from None

    def attr_dict(self) -> dict[str, Attribute]:
        self.expect("{")
        result: dict[str, Attribute] = {}

        def entry() -> None:
            self.skip_ws()
            key_start = self.pos
            key = self.string() if self.peek('"') else self.identifier("attribute name")
            if key in result:
                raise self.error(f"duplicate attribute '{key}'", key_start)
            self.expect("=", f"'=' after attribute name '{key}'")
            result[key] = self.attribute()

        self.comma_list(entry, "}")
        return result

    def at_attr_dict(self) -> bool:
        """`{` starts an attribute dictionary (not a region) if `}` or `name =` follows."""
        self.skip_ws()
        if not self.text.startswith("{", self.pos):
            return False
        return (
            re.compile(r'\{\s*(\}|("(?:[^"\\\n]|\\.)*"|[A-Za-z_][A-Za-z0-9_$.]*)\s*=)').match(
                self.text, self.pos
            )
            is not None
        )

    def location(self) -> Location | None:
        if not self.peek_keyword("loc"):
            return None
        self.accept_keyword("loc")
        self.expect("(")
        if self.accept_keyword("unknown"):
            self.expect(")")
            return UNKNOWN_LOC
        filename = self.string()
        self.expect(":")
        line = self.integer("line number")
        self.expect(":")
        col = self.integer("column number")
        self.expect(")")
        return FileLineColLoc(filename, line, col)

    # Operations ------------------------------------------------------------------------------

    def module(self) -> Operation:
        while self.peek("#"):
            start = self.pos
            alias = self.prefixed_name("#", "attribute alias")
            self.expect("=", f"'=' after alias #{alias}")
            if alias in self.aliases:
                raise self.error(f"redefinition of attribute alias #{alias}", start)
            self.aliases[alias] = self.attribute()
        module = ModuleOp()
        block = module.body
        if self.accept_keyword("module"):
            if self.accept_keyword("attributes"):
                module.attributes.update(self.attr_dict())
            self.expect("{")
            while not self.accept("}"):
                if self.at_end():
                    raise self.error("expected '}' to close the module")
                block.append(self.operation())
        while not self.at_end():
            block.append(self.operation())
        return module

    def operation(self) -> Operation:
        self.skip_ws()
        result_names: list[tuple[str, int]] = []
        if self.peek("%"):
            result_names = self.comma_list(self.value_name)
            self.expect("=", "'=' after result names")
        self.skip_ws()
        name_start = self.pos
        name = self.identifier("operation name")
        cls = OP_REGISTRY.get(name)
        if cls is None:
            cls, notes = _unknown_name_notes(name, OP_REGISTRY)
        if cls is None:
            raise self.error(
                f"unknown operation '{name}' (is its dialect imported?){notes}", name_start
            )
        custom = getattr(cls, "parse_custom", None)
        if custom is not None:
            op = custom(self)
        else:
            op = self._generic_operation(cls, len(result_names), name_start)
        if len(op.results) != len(result_names):
            raise self.error(
                f"'{name}' defines {len(op.results)} result(s) but {len(result_names)} name(s) "
                "are given",
                name_start,
            )
        for (result_name, position), result in zip(result_names, op.results, strict=True):
            self.define_value(result_name, result, position)
        loc = self.location()
        op.location = loc if loc is not None else self.text_location(name_start)
        return op

    def _generic_operation(self, cls: type[Operation], n_results: int, start: int) -> Operation:
        # `%a, %b =` starts the next op (`tile.barrier` then `%x = ...`), not this op's operands.
        at_operands = self.peek("%") and _RESULT_NAMES.match(self.text, self.pos) is None
        operands = self.comma_list(self.use_value) if at_operands else []
        attributes = self.attr_dict() if self.at_attr_dict() else {}
        result_types = self.type_list() if self.accept(":") else []
        if n_results and len(result_types) != n_results:
            raise self.error(
                f"'{cls.name}' has {n_results} result name(s) but {len(result_types)} result type(s)",
                start,
            )
        regions = []
        while self.peek("{"):
            regions.append(self.region())
        return cls.create(operands, result_types, attributes, regions)

    def region(self, entry_args: list[tuple[str, Type, int]] | None = None) -> Region:
        """`{ [^bb0(%a: T, ...):] ops }`; `entry_args` are arguments declared outside (functions)."""
        # counted in place (no wrapper frame): regions nest deeply, and every frame counts
        nesting = self._nesting(MAX_REGION_NESTING, "regions")
        nesting.__enter__()
        try:
            self.expect("{", "'{' to start a region")
            self.push_scope(isolated=False)
            region = Region()
            block = region.add_block(Block())
            for name, type_, position in entry_args or []:
                self.define_value(name, block.add_arg(type_), position)
            first = True
            while not self.accept("}"):
                if self.at_end():
                    raise self.error("expected '}' to close the region")
                if self.peek("^"):
                    if not first or block.args:
                        block = region.add_block(Block())
                    self.prefixed_name("^", "block label")
                    if self.accept("("):
                        for name, type_, position in self.comma_list(self.typed_value_name, ")"):
                            self.define_value(name, block.add_arg(type_), position)
                    self.expect(":", "':' after block label")
                first = False
                block.append(self.operation())
            self.pop_scope()
            return region
        finally:
            nesting.__exit__()

    def typed_value_name(self) -> tuple[str, Type, int]:
        name, position = self.value_name()
        self.expect(":", f"':' and a type after %{name}")
        return name, self.type(), position


def parse_module(text: str, filename: str = "<input>") -> Operation:
    """Parse a whole module. Raises ParseError."""
    return Parser(text, filename).module()
