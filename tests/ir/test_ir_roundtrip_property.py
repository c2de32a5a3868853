"""Property test: random well-formed modules verify and print -> parse -> print to the same text.

The modules are built with the Python API (not as text), so the printer sees what passes and the
frontend make: name hints that need cleaning or collide, values without hints, random locations,
and attributes with awkward values (NaN, infinities, -0.0, subnormals, strings with quotes,
backslashes and newlines, nested arrays and dictionaries with keys that need quoting, unit, dense
splats, symbol references, types).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilec.dialects  # noqa: F401  (fills OP_REGISTRY)
from tilec.ir import (
    OP_REGISTRY,
    ArrayAttr,
    Attribute,
    Block,
    DenseAttr,
    DictAttr,
    FileLineColLoc,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Operation,
    PointerType,
    Region,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    Type,
    TypeAttr,
    UnitAttr,
    UnknownLoc,
    Value,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
    parse_module,
    print_module,
    u8,
    u16,
    u32,
    u64,
    verify,
)
from tilec.ir.types import element_type, like

INT_TYPES = [i1, i8, i16, i32, i64, u8, u16, u32, u64]
FLOAT_TYPES = [f16, bf16, f32, f64]
NUMERIC_TYPES = INT_TYPES + FLOAT_TYPES
SHAPES = [(1,), (4,), (8,), (2, 4), (4, 4), (1, 8), (2, 2, 2)]
NAME_HINTS = [None, None, None, "x", "x", "x_1", "acc", "0", "12", "a.b", "$v", "weird name!", ""]

INT_BINARY = [
    "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui", "arith.remsi",
    "arith.remui", "arith.andi", "arith.ori", "arith.xori", "arith.shli", "arith.shrsi",
    "arith.shrui", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui",
]  # fmt: skip
FLOAT_BINARY = [
    "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.maxnumf",
    "arith.minnumf", "arith.maximumf", "arith.minimumf",
]  # fmt: skip
FLOAT_UNARY = [
    "arith.negf", "math.exp", "math.exp2", "math.log", "math.log2", "math.sqrt", "math.rsqrt",
    "math.sin", "math.cos", "math.erf", "math.tanh", "math.floor", "math.ceil", "math.absf",
]  # fmt: skip
INT_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
FLOAT_PREDICATES = ["oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "uno", "true", "false"]
CASTS = [
    ("arith.extsi", i8, i32), ("arith.extui", u16, u64), ("arith.trunci", i64, i16),
    ("arith.trunci", i32, i1), ("arith.extf", f16, f32), ("arith.extf", bf16, f64),
    ("arith.truncf", f64, f16), ("arith.sitofp", i32, f32), ("arith.uitofp", u8, bf16),
    ("arith.fptosi", f32, i64), ("arith.fptoui", f16, u8), ("arith.bitcast", f32, i32),
    ("arith.bitcast", i16, bf16),
]  # fmt: skip


# Attributes ------------------------------------------------------------------------------------

# NaN is drawn only as the canonical quiet NaN: the text form keeps neither a NaN's sign nor its
# payload, so `-nan` would print as `nan` (same text, but a different FloatAttr).
SPECIAL_FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e-300, 5e-324, 1.7976931348623157e308]
floats = st.one_of(st.sampled_from(SPECIAL_FLOATS), st.floats(allow_nan=False))
texts = st.one_of(
    st.sampled_from(["", '"', "\\", '\\"', "\n", 'a "b" \\c\nd', "\\n", "loc(", "}", "%x = 1"]),
    st.text(max_size=12),
)
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_$.]{0,8}", fullmatch=True)
attr_keys = st.one_of(identifiers, texts)
symbol_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_$.]{0,8}", fullmatch=True)


def _int_value(t: IntegerType) -> st.SearchStrategy[int]:
    if t == i1:
        return st.integers(0, 1)
    if t.unsigned:
        return st.integers(0, 2**t.width - 1)
    return st.integers(-(2 ** (t.width - 1)), 2 ** (t.width - 1) - 1)


def _scalar_attr(t: Type) -> st.SearchStrategy[Attribute]:
    if isinstance(t, IntegerType):
        return _int_value(t).map(lambda v: IntegerAttr(v, t))
    return floats.map(lambda v: FloatAttr(v, t))


scalar_types = st.sampled_from(NUMERIC_TYPES)
shapes = st.sampled_from(SHAPES)


@st.composite
def _types(draw: st.DrawFn, allow_function: bool = True) -> Type:
    kind = draw(
        st.sampled_from(["scalar", "tensor", "pointer", "function"][: 4 if allow_function else 3])
    )
    scalar = draw(scalar_types)
    if kind == "scalar":
        return scalar
    if kind == "pointer":
        return PointerType(scalar, draw(st.sampled_from([1, 1, 3])))
    if kind == "tensor":
        inner = draw(st.sampled_from([scalar, PointerType(scalar)]))
        return TensorType(draw(shapes), inner)
    inputs = draw(st.lists(_types(allow_function=False), max_size=2))
    results = draw(st.lists(_types(allow_function=False), max_size=2))
    return FunctionType(inputs, results)


@st.composite
def _dense(draw: st.DrawFn) -> DenseAttr:
    t = TensorType(draw(shapes), draw(scalar_types))
    return DenseAttr(draw(_scalar_attr(t.element_type)), t)


leaf_attributes = st.one_of(
    scalar_types.flatmap(_scalar_attr),
    st.integers(-(2**63), 2**63 - 1).map(IntegerAttr),
    texts.map(StringAttr),
    st.just(UnitAttr()),
    symbol_names.map(SymbolRefAttr),
    _types().map(TypeAttr),
    _dense(),
)


def _unique_items(pairs: list[tuple[str, Attribute]]) -> DictAttr:
    return DictAttr(tuple(dict(pairs).items()))


attribute_values = st.recursive(
    leaf_attributes,
    lambda children: st.one_of(
        st.lists(children, max_size=3).map(ArrayAttr),
        st.lists(st.tuples(attr_keys, children), max_size=3).map(_unique_items),
    ),
    max_leaves=6,
)
# Keys of extra attributes on ops: never one an op declares.
extra_attributes = st.dictionaries(
    identifiers.map(lambda k: "test." + k) | attr_keys.map(lambda k: "test " + k),
    attribute_values,
    max_size=2,
)
locations = st.one_of(
    st.just(UnknownLoc()),
    st.builds(FileLineColLoc, texts, st.integers(0, 10**6), st.integers(0, 500)),
)


# Modules ---------------------------------------------------------------------------------------


class ModuleBuilder:
    """Builds one random, well-formed module from hypothesis draws."""

    def __init__(self, draw: st.DrawFn):
        self.draw = draw
        self.signatures: dict[str, FunctionType] = {}

    # Helpers -----------------------------------------------------------------------------------

    def hint(self, value: Value) -> Value:
        value.name_hint = self.draw(st.sampled_from(NAME_HINTS))
        return value

    def emit(
        self,
        block: Block,
        scope: list[Value],
        name: str,
        operands: list[Value],
        result_types: list[Type],
        attributes: dict[str, Attribute] | None = None,
        regions: Sequence[Region] = (),
    ) -> list[Value]:
        op = OP_REGISTRY[name].create(operands, result_types, attributes or {}, regions)
        op.location = self.draw(locations)
        block.append(op)
        for result in op.results:
            scope.append(self.hint(result))
        return list(op.results)

    def value(self, block: Block, scope: list[Value], t: Type) -> Value:
        """An existing value of type `t`, or a new one (a constant, a splat, an int_to_ptr)."""
        existing = [v for v in scope if v.type == t]
        if existing and self.draw(st.booleans()):
            return self.draw(st.sampled_from(existing))
        if isinstance(t, PointerType):
            address = self.value(block, scope, i64)
            return self.emit(block, scope, "tile.int_to_ptr", [address], [t])[0]
        if isinstance(t, TensorType) and (
            isinstance(t.element_type, PointerType) or self.draw(st.booleans())
        ):
            scalar_value = self.value(block, scope, t.element_type)
            return self.emit(block, scope, "tile.splat", [scalar_value], [t])[0]
        scalar = self.draw(_scalar_attr(element_type(t)))
        value = DenseAttr(scalar, t) if isinstance(t, TensorType) else scalar
        return self.emit(block, scope, "arith.constant", [], [t], {"value": value})[0]

    def shaped(self, element: Type) -> Type:
        """`element` itself or a tensor of it."""
        if self.draw(st.booleans()):
            return element
        return TensorType(self.draw(shapes), element)

    # Ops ---------------------------------------------------------------------------------------

    def op_int_binary(self, block: Block, scope: list[Value], depth: int) -> None:
        t = self.shaped(self.draw(st.sampled_from(INT_TYPES)))
        a, b = self.value(block, scope, t), self.value(block, scope, t)
        self.emit(block, scope, self.draw(st.sampled_from(INT_BINARY)), [a, b], [t])

    def op_float(self, block: Block, scope: list[Value], depth: int) -> None:
        t = self.shaped(self.draw(st.sampled_from(FLOAT_TYPES)))
        kind = self.draw(st.sampled_from(["binary", "unary", "fma"]))
        if kind == "binary":
            name, arity = self.draw(st.sampled_from(FLOAT_BINARY)), 2
        elif kind == "unary":
            name, arity = self.draw(st.sampled_from(FLOAT_UNARY)), 1
        else:
            name, arity = "math.fma", 3
        operands = [self.value(block, scope, t) for _ in range(arity)]
        self.emit(block, scope, name, operands, [t])

    def op_absi(self, block: Block, scope: list[Value], depth: int) -> None:
        t = self.shaped(self.draw(st.sampled_from(INT_TYPES)))
        self.emit(block, scope, "math.absi", [self.value(block, scope, t)], [t])

    def op_compare_select(self, block: Block, scope: list[Value], depth: int) -> None:
        t = self.shaped(self.draw(scalar_types))
        if isinstance(element_type(t), IntegerType):
            name, predicate = "arith.cmpi", self.draw(st.sampled_from(INT_PREDICATES))
        else:
            name, predicate = "arith.cmpf", self.draw(st.sampled_from(FLOAT_PREDICATES))
        a, b = self.value(block, scope, t), self.value(block, scope, t)
        (cond,) = self.emit(
            block, scope, name, [a, b], [like(t, i1)], {"predicate": StringAttr(predicate)}
        )
        if self.draw(st.booleans()):
            if isinstance(t, TensorType) and self.draw(st.booleans()):
                cond = self.value(block, scope, i1)
            x, y = self.value(block, scope, t), self.value(block, scope, t)
            self.emit(block, scope, "arith.select", [cond, x, y], [t])

    def op_cast(self, block: Block, scope: list[Value], depth: int) -> None:
        name, source, result = self.draw(st.sampled_from(CASTS))
        shape = self.draw(st.one_of(st.none(), shapes))
        if shape is not None:
            source, result = TensorType(shape, source), TensorType(shape, result)
        self.emit(block, scope, name, [self.value(block, scope, source)], [result])

    def op_shape(self, block: Block, scope: list[Value], depth: int) -> None:
        element = self.draw(scalar_types)
        kind = self.draw(
            st.sampled_from(["make_range", "broadcast", "expand_dims", "reshape", "trans"])
        )
        if kind == "make_range":
            start = self.draw(st.integers(0, 1000))
            size = self.draw(st.sampled_from([1, 2, 16, 128]))
            attributes = {"start": IntegerAttr(start, i32), "end": IntegerAttr(start + size, i32)}
            self.emit(block, scope, "tile.make_range", [], [TensorType((size,), i32)], attributes)
        elif kind == "broadcast":
            source = self.value(block, scope, TensorType((1, 8), element))
            self.emit(block, scope, "tile.broadcast", [source], [TensorType((4, 8), element)])
        elif kind == "expand_dims":
            axis = self.draw(st.integers(0, 1))
            source = self.value(block, scope, TensorType((8,), element))
            result = TensorType((1, 8) if axis == 0 else (8, 1), element)
            self.emit(
                block,
                scope,
                "tile.expand_dims",
                [source],
                [result],
                {"axis": IntegerAttr(axis, i32)},
            )
        elif kind == "reshape":
            source = self.value(block, scope, TensorType((2, 4), element))
            self.emit(block, scope, "tile.reshape", [source], [TensorType((8,), element)])
        else:
            source = self.value(block, scope, TensorType((2, 4, 8), element))
            order = self.draw(st.permutations([0, 1, 2]))
            result = TensorType(tuple((2, 4, 8)[i] for i in order), element)
            self.emit(
                block,
                scope,
                "tile.trans",
                [source],
                [result],
                {"order": ArrayAttr(IntegerAttr(i) for i in order)},
            )

    def op_memory(self, block: Block, scope: list[Value], depth: int) -> None:
        element = self.draw(scalar_types)
        shape = self.draw(st.one_of(st.none(), shapes))
        ptr_type: Type = PointerType(element)
        mask_type: Type = i1
        if shape is not None:
            ptr_type, mask_type = TensorType(shape, ptr_type), TensorType(shape, i1)
        ptr = self.value(block, scope, ptr_type)
        if self.draw(st.booleans()):
            offset = self.value(
                block, scope, like(ptr_type, self.draw(st.sampled_from([i32, i64])))
            )
            (ptr,) = self.emit(block, scope, "tile.addptr", [ptr, offset], [ptr_type])
        value_type = like(ptr_type, element)
        mask = [self.value(block, scope, mask_type)] if self.draw(st.booleans()) else []
        kind = self.draw(
            st.sampled_from(["load", "store", "atomic_rmw", "atomic_cas", "ptr_to_int"])
        )
        if kind == "load":
            other = (
                [self.value(block, scope, value_type)] if mask and self.draw(st.booleans()) else []
            )
            attributes: dict[str, Attribute] = {}
            if self.draw(st.booleans()):
                attributes["cache"] = StringAttr(
                    self.draw(st.sampled_from(["", ".ca", ".cg", ".cv"]))
                )
                attributes["eviction"] = StringAttr(
                    self.draw(st.sampled_from(["evict_first", "evict_last"]))
                )
                attributes["volatile"] = UnitAttr()
            self.emit(block, scope, "tile.load", [ptr, *mask, *other], [value_type], attributes)
        elif kind == "store":
            value = self.value(block, scope, value_type)
            self.emit(block, scope, "tile.store", [ptr, value, *mask], [])
        elif kind == "atomic_rmw":
            kinds = ["add", "max", "min", "xchg"]
            if isinstance(element, IntegerType):
                kinds += ["umax", "umin", "and", "or", "xor"]
            attributes = {
                "kind": StringAttr(self.draw(st.sampled_from(kinds))),
                "sem": StringAttr(
                    self.draw(st.sampled_from(["relaxed", "acquire", "release", "acq_rel"]))
                ),
                "scope": StringAttr(self.draw(st.sampled_from(["cta", "gpu", "sys"]))),
            }
            value = self.value(block, scope, value_type)
            self.emit(
                block, scope, "tile.atomic_rmw", [ptr, value, *mask], [value_type], attributes
            )
        elif kind == "atomic_cas":
            attributes = {"sem": StringAttr("acq_rel"), "scope": StringAttr("gpu")}
            compare, value = (
                self.value(block, scope, value_type),
                self.value(block, scope, value_type),
            )
            self.emit(
                block, scope, "tile.atomic_cas", [ptr, compare, value], [value_type], attributes
            )
        else:
            self.emit(block, scope, "tile.ptr_to_int", [ptr], [like(ptr_type, i64)])

    def op_dot(self, block: Block, scope: list[Value], depth: int) -> None:
        m, k, n = (self.draw(st.sampled_from([1, 2, 16])) for _ in range(3))
        element = self.draw(st.sampled_from([f16, bf16, f32, i8]))
        acc_element = i32 if element == i8 else f32
        a = self.value(block, scope, TensorType((m, k), element))
        b = self.value(block, scope, TensorType((k, n), element))
        acc = self.value(block, scope, TensorType((m, n), acc_element))
        attributes = {}
        if self.draw(st.booleans()):
            attributes["input_precision"] = StringAttr(
                self.draw(st.sampled_from(["ieee", "tf32", "tf32x3"]))
            )
        self.emit(
            block, scope, "tile.dot", [a, b, acc], [TensorType((m, n), acc_element)], attributes
        )

    def op_reduce_scan(self, block: Block, scope: list[Value], depth: int) -> None:
        shape = self.draw(st.sampled_from([(8,), (2, 4), (4, 1)]))
        elements = self.draw(st.lists(scalar_types, min_size=1, max_size=2))
        sources = [self.value(block, scope, TensorType(shape, e)) for e in elements]
        axis = self.draw(st.integers(0, len(shape) - 1))
        scan = self.draw(st.booleans())
        combiner = Block()
        lhs = [self.hint(combiner.add_arg(e)) for e in elements]
        rhs = [self.hint(combiner.add_arg(e)) for e in elements]
        inner_scope = [*lhs, *rhs]
        combined = []
        for a, b in zip(lhs, rhs, strict=True):
            is_int = isinstance(a.type, IntegerType)
            name = self.draw(
                st.sampled_from(
                    ["arith.addi", "arith.maxsi"] if is_int else ["arith.addf", "arith.maxnumf"]
                )
            )
            combined += self.emit(combiner, inner_scope, name, [a, b], [a.type])
        terminator = "tile.scan.return" if scan else "tile.reduce.return"
        self.emit(combiner, inner_scope, terminator, combined, [])
        attributes: dict[str, Attribute] = {"axis": IntegerAttr(axis, i32)}
        if scan:
            if self.draw(st.booleans()):
                attributes["reverse"] = IntegerAttr(1, i32)
            result_types: list[Type] = [s.type for s in sources]
        else:
            reduced = shape[:axis] + shape[axis + 1 :]
            result_types = [TensorType(reduced, e) if reduced else e for e in elements]
        name = "tile.scan" if scan else "tile.reduce"
        self.emit(block, scope, name, sources, result_types, attributes, [Region([combiner])])

    def op_misc(self, block: Block, scope: list[Value], depth: int) -> None:
        kind = self.draw(
            st.sampled_from(["program_id", "num_programs", "print", "assert", "barrier", "call"])
        )
        if kind in ("program_id", "num_programs"):
            axis = IntegerAttr(self.draw(st.integers(0, 2)), i32)
            self.emit(block, scope, f"tile.{kind}", [], [i32], {"axis": axis})
        elif kind == "print":
            values = self.draw(st.lists(st.sampled_from(scope), max_size=2)) if scope else []
            attributes: dict[str, Attribute] = {"prefix": StringAttr(self.draw(texts))}
            if self.draw(st.booleans()):
                attributes["hex"] = UnitAttr()
            self.emit(block, scope, "tile.print", values, [], attributes)
        elif kind == "assert":
            condition = self.value(block, scope, self.shaped(i1))
            self.emit(
                block,
                scope,
                "tile.assert",
                [condition],
                [],
                {"message": StringAttr(self.draw(texts))},
            )
        elif kind == "barrier":
            self.emit(block, scope, "tile.barrier", [], [], self.draw(extra_attributes))
        elif self.signatures:
            callee = self.draw(st.sampled_from(sorted(self.signatures)))
            signature = self.signatures[callee]
            args = [self.value(block, scope, t) for t in signature.inputs]
            self.emit(
                block,
                scope,
                "tile.call",
                args,
                list(signature.results),
                {"callee": SymbolRefAttr(callee)},
            )

    def op_for(self, block: Block, scope: list[Value], depth: int) -> None:
        bound_type = self.draw(st.sampled_from([i32, i64, u16]))
        bounds = [self.value(block, scope, bound_type) for _ in range(3)]
        carried = self.draw(st.lists(_types(allow_function=False), max_size=2))
        inits = [self.value(block, scope, t) for t in carried]
        body = Block()
        inner = [*scope, self.hint(body.add_arg(bound_type))]
        inner += [self.hint(body.add_arg(t)) for t in carried]
        self.fill(body, inner, depth + 1)
        self.emit(body, inner, "scf.yield", [self.value(body, inner, t) for t in carried], [])
        self.emit(block, scope, "scf.for", bounds + inits, carried, {}, [Region([body])])

    def op_if(self, block: Block, scope: list[Value], depth: int) -> None:
        condition = self.value(block, scope, i1)
        result_types = self.draw(st.lists(_types(allow_function=False), max_size=2))
        regions = []
        for _ in range(2 if result_types or self.draw(st.booleans()) else 1):
            body = Block()
            inner = list(scope)
            self.fill(body, inner, depth + 1)
            self.emit(
                body, inner, "scf.yield", [self.value(body, inner, t) for t in result_types], []
            )
            regions.append(Region([body]))
        if len(regions) == 1 and self.draw(st.booleans()):
            regions.append(Region())  # an else region with no block is printed as no else region
        self.emit(block, scope, "scf.if", [condition], result_types, {}, regions)

    def op_while(self, block: Block, scope: list[Value], depth: int) -> None:
        carried = self.draw(st.lists(_types(allow_function=False), min_size=1, max_size=2))
        inits = [self.value(block, scope, t) for t in carried]
        before = Block()
        inner = [*scope, *(self.hint(before.add_arg(t)) for t in carried)]
        self.fill(before, inner, depth + 1)
        condition = self.value(before, inner, i1)
        forwarded = [self.value(before, inner, t) for t in carried]
        self.emit(before, inner, "scf.condition", [condition, *forwarded], [])
        after = Block()
        inner = [*scope, *(self.hint(after.add_arg(t)) for t in carried)]
        self.fill(after, inner, depth + 1)
        self.emit(after, inner, "scf.yield", [self.value(after, inner, t) for t in carried], [])
        self.emit(
            block, scope, "scf.while", inits, carried, {}, [Region([before]), Region([after])]
        )

    # Blocks, functions, modules ----------------------------------------------------------------

    def fill(self, block: Block, scope: list[Value], depth: int) -> None:
        kinds = [
            self.op_int_binary, self.op_float, self.op_absi, self.op_compare_select, self.op_cast,
            self.op_shape, self.op_memory, self.op_dot, self.op_reduce_scan, self.op_misc,
        ]  # fmt: skip
        if depth < 2:
            kinds += [self.op_for, self.op_if, self.op_while]
        for _ in range(self.draw(st.integers(0, 5 if depth == 0 else 3))):
            self.draw(st.sampled_from(kinds))(block, scope, depth)

    def function(self, name: str) -> Operation:
        inputs = self.draw(st.lists(_types(allow_function=False), max_size=4))
        results = self.draw(st.lists(_types(allow_function=False), max_size=2))
        signature = FunctionType(inputs, results)
        entry = Block()
        scope = [self.hint(entry.add_arg(t)) for t in inputs]
        self.fill(entry, scope, 0)
        self.emit(entry, scope, "tile.return", [self.value(entry, scope, t) for t in results], [])
        attributes: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "function_type": TypeAttr(signature),
            **self.draw(extra_attributes),
        }
        func = OP_REGISTRY["func.func"].create(attributes=attributes, regions=[Region([entry])])
        func.location = self.draw(locations)
        for index, t in enumerate(inputs):
            if isinstance(element_type(t), PointerType) and self.draw(st.booleans()):
                func.set_argument_attribute(index, "tile.divisibility", IntegerAttr(16))
            if self.draw(st.integers(0, 3)) == 0:
                func.set_argument_attribute(
                    index, self.draw(attr_keys), self.draw(attribute_values)
                )
        self.signatures[name] = signature
        return func

    def module(self) -> ModuleOp:
        names = self.draw(st.lists(symbol_names, min_size=1, max_size=3, unique=True))
        module = ModuleOp([self.function(name) for name in names])
        if self.draw(st.integers(0, 3)) == 0:
            module.attributes.update(self.draw(extra_attributes))
        return module


@st.composite
def modules(draw: st.DrawFn) -> ModuleOp:
    return ModuleBuilder(draw).module()


# Comparing IR structurally, so a printer/parser pair that loses information consistently is caught


def _same_ir(a: Operation, b: Operation) -> None:
    ops_a, ops_b = list(a.walk()), list(b.walk())
    assert [op.name for op in ops_a] == [op.name for op in ops_b]
    for x, y in zip(ops_a, ops_b, strict=True):
        assert x.attributes == y.attributes, x.name
        assert x.result_types == y.result_types, x.name
        assert [len(r.blocks) for r in x.regions] == [len(r.blocks) for r in y.regions], x.name
        for rx, ry in zip(x.regions, y.regions, strict=True):
            for bx, by in zip(rx.blocks, ry.blocks, strict=True):
                assert [v.type for v in bx.args] == [v.type for v in by.args], x.name


def _same_locations(a: Operation, b: Operation) -> None:
    for x, y in zip(a.walk(), b.walk(), strict=True):
        if x.name != "builtin.module":
            assert x.location == y.location, x.name


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(modules())
def test_random_modules_round_trip(module: ModuleOp) -> None:
    verify(module)
    text = print_module(module)
    reparsed = parse_module(text, "random.tir")
    verify(reparsed)
    assert print_module(reparsed) == text
    _same_ir(module, reparsed)

    with_locations = print_module(module, locations=True)
    located = parse_module(with_locations, "random.tir")
    verify(located)
    assert print_module(located, locations=True) == with_locations
    assert print_module(located) == text
    _same_locations(module, located)
