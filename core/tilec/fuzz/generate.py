"""The random kernel generator: a seeded `Program` (see `tilec.fuzz.program`), built
type-directed: `expr(dtype, shape)` returns an expression of that dtype and shape, so every
operation gets operands its semantics defines, and float bounds stay inside the dtype's range.
"""

from __future__ import annotations

import math
import random

import attrs

from tilec.fuzz.program import (
    FLOAT_BINARY,
    INT_BINARY,
    SIGNED,
    UNARY_FLOAT,
    UNARY_INT,
    UNSIGNED,
    Assign,
    Binary,
    Cast,
    Compare,
    Dot,
    Fma,
    For,
    Full,
    If,
    Load,
    Node,
    Program,
    Reduce,
    Store,
    Trans,
    Unary,
    Var,
    Where,
    bits,
    float_bound_ok,
    int_range_max,
    is_float,
    is_int,
)

CORE_DTYPES = (
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint32",
    "float16",
    "float32",
    "float64",
)
ATOMIC_ADD = ("int32", "int64", "uint32", "uint64", "float32")
ATOMIC_INT = ("int32", "int64", "uint32")
"""The dtypes of `tl.atomic_max`, `min`, `and`, `or`, `xor` and `xchg` the fuzzer uses."""


@attrs.define
class Generator:
    """Random programs from `seed`; `bf16` adds bfloat16 (not in the NumPy model)."""

    seed: int
    bf16: bool = False
    rng: random.Random = attrs.field(init=False)
    env: list[Var] = attrs.field(init=False, factory=list)
    program: Program = attrs.field(init=False, default=None)
    counter: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    @property
    def dtypes(self) -> tuple[str, ...]:
        return CORE_DTYPES + (("bfloat16",) if self.bf16 else ())

    def new_name(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    # Programs ----------------------------------------------------------------------------------

    def build(self) -> Program:
        rng = self.rng
        rank = rng.choice((1, 1, 1, 2))
        blocks = (1, 2, 4, 16, 32, 64, 128, 256, 1024) if rank == 1 else (1, 2, 4, 16, 16, 32, 64)
        block = rng.choice(blocks)
        cols = 1
        if rank == 2:
            cols = block if rng.random() < 0.5 else rng.choice((1, 2, 8, 16, 32, 64))
        grid = rng.randint(1, 3)
        total = grid * block
        n = rng.choice((total, total, rng.randint(0, total)))
        m = rng.choice((cols, rng.randint(0, cols))) if rank == 2 else 0
        self.program = Program(rank, block, grid, n, m, [], [], [], self.seed, cols=cols)
        self.program.num_warps = rng.choice((1, 2, 4, 4, 8))
        self.env = [Var("int32", "scalar", name="pid"), Var("int32", "scalar", name="n")]
        body = self.program.body
        for _ in range(rng.randint(1, 3)):
            body.append(self.load())
        for _ in range(rng.randint(1, 7)):
            body.append(self.statement(depth=0))
        body.append(self.store(self.expr(rng.choice(self.dtypes), "tile", 3)))
        return self.program

    def load(self) -> Assign:
        dtype = self.rng.choice(self.dtypes)
        self.program.inputs.append(dtype)
        masked = self.rng.random() < 0.8
        cond = None
        if masked and self.rng.random() < 0.2 and self.vars_of(shape="tile"):
            cond = self.compare("tile", 1)
        other = self.rng.choice((0, 1, -1, 2)) if dtype not in UNSIGNED else 1
        pattern = self.rng.choice(("", "", "", "stride2", "xor1", "half"))
        index = len(self.program.inputs) - 1
        node = Load(dtype, "tile", 4.0, True, index, masked, other, cond, pattern)
        return self.assign(node)

    def assign(self, node: Node) -> Assign:
        name = self.new_name()
        self.env.append(Var(node.dtype, node.shape, node.bound, node.exact, name=name))
        return Assign(name, node)

    def statement(self, depth: int):
        rng = self.rng
        choice = rng.random()
        if choice < 0.15 and depth < 2:
            return self.if_statement(depth)
        if choice < 0.3 and depth < 2:
            return self.for_statement(depth)
        if choice < 0.45:
            return self.store(self.expr(rng.choice(self.dtypes), self.shape(), 3))
        if choice < 0.55:
            return self.atomic()
        prog = self.program
        if choice < 0.7 and prog.rank == 2 and prog.block == prog.cols and prog.block >= 16:
            node = self.dot(rng.choice(tuple(DOT_FORMS)), "tile", 2)
            if node is not None:
                return self.assign(node)
        return self.assign(self.expr(rng.choice(self.dtypes), self.shape(), 3))

    def shape(self) -> str:
        shapes = ("tile", "tile", "scalar") if self.program.rank == 1 else ("tile",) * 3
        return self.rng.choice(shapes + (("row", "col") if self.program.rank == 2 else ()))

    def store(self, value: Node) -> Store:
        if value.shape in ("row", "col"):
            value = Binary(value.dtype, "tile", value.bound, value.exact, "add", value,
                           Full(value.dtype, "tile", 0.0, True, 0))  # fmt: skip
        self.program.outputs.append(value.dtype)
        pattern = self.rng.choice(("", "", "stride2", "xor1"))
        return Store(len(self.program.outputs) - 1, value, self.rng.random() < 0.8, None, pattern)

    def atomic(self) -> Store:
        op = self.rng.choice(("add", "add", "max", "min", "and", "or", "xor", "xchg"))
        dtype = self.rng.choice(ATOMIC_ADD if op == "add" else ATOMIC_INT)
        # on one address the programs' order decides a float sum and an exchange
        unordered = dtype == "float32" or op == "xchg"
        shape = "tile" if unordered else self.rng.choice(("tile", "scalar"))
        value = self.expr(dtype, shape, 2)
        self.program.outputs.append(dtype)
        pattern = self.rng.choice(("", "", "stride2", "xor1"))
        return Store(len(self.program.outputs) - 1, value, self.rng.random() < 0.7, op, pattern)

    def if_statement(self, depth: int) -> _IfWithInit:
        rng = self.rng
        dtype, shape = rng.choice(self.dtypes), self.shape()
        init = self.expr(dtype, shape, 2)
        cond = self.compare("scalar", 1)
        saved = list(self.env)
        then = [self.statement(depth + 1) for _ in range(rng.randint(0, 2))]
        self.env = list(saved)
        orelse = [self.statement(depth + 1) for _ in range(rng.randint(0, 2))]
        self.env = list(saved)
        name = self.new_name()
        a, b = self.expr(dtype, shape, 2), self.expr(dtype, shape, 2)
        bound = max(init.bound, a.bound, b.bound)
        exact = init.exact and a.exact and b.exact
        then.append(Assign(name, a))
        if rng.random() < 0.7:
            orelse.append(Assign(name, b))
        self.env.append(Var(dtype, shape, bound, exact, name=name))
        return _IfWithInit(name, init, cond, then, orelse)

    def for_statement(self, depth: int) -> _Loop:
        rng = self.rng
        dtype, shape = rng.choice(self.dtypes), self.shape()
        start = rng.randint(0, 2)
        stop = start + rng.randint(0, 4)
        var = f"i{depth}"
        init = self.expr(dtype, shape, 2)
        saved = list(self.env)
        self.env.append(Var("int32", "scalar", name=var))
        body = [self.statement(depth + 1) for _ in range(rng.randint(0, 1))]
        step = self.expr(dtype, shape, 2)
        self.env = saved
        name = self.new_name()
        acc = Var(dtype, shape, init.bound, init.exact, name=name)
        op = rng.choice(("add", "maximum", "minimum") if is_float(dtype) else INT_BINARY)
        trips = max(stop - start, 0)
        bound = max(init.bound, step.bound)
        if op == "add":
            bound = init.bound + trips * step.bound
        if is_float(dtype) and not float_bound_ok(bound, dtype):
            op, bound = "maximum", max(init.bound, step.bound)
        update = Binary(dtype, shape, bound, init.exact and step.exact, op, acc, step)
        body.append(Assign(name, update))
        self.env.append(Var(dtype, shape, bound, update.exact, name=name))
        return _Loop(name, init, For(var, start, stop, body, rng.random() < 0.2))

    # Expressions -------------------------------------------------------------------------------

    def vars_of(self, dtype: str | None = None, shape: str | None = None) -> list[Var]:
        return [
            v for v in self.env
            if (dtype is None or v.dtype == dtype) and (shape is None or v.shape == shape)
        ]  # fmt: skip

    def leaf(self, dtype: str, shape: str) -> Node:
        rng = self.rng
        same = self.vars_of(dtype, shape)
        if same and rng.random() < 0.7:
            return rng.choice(same)
        castable = [v for v in self.vars_of(shape=shape) if can_cast(v, dtype)]
        if castable and rng.random() < 0.7:
            return cast(rng.choice(castable), dtype)
        if shape == "tile" or rng.random() < 0.3:
            value = rng.choice((0, 1, 2, 3, -1)) if dtype not in UNSIGNED else rng.randint(0, 3)
            return Full(dtype, shape, abs(float(value)), True, value)
        scalars = [v for v in self.vars_of(shape="scalar") if can_cast(v, dtype)]
        if scalars and shape != "scalar":
            s = rng.choice(scalars)
            s = s if s.dtype == dtype else cast(s, dtype)
            zero = Full(dtype, shape, 0.0, True, 0)
            return Binary(dtype, shape, s.bound, s.exact, "add", zero, s)
        value = rng.randint(0, 3)
        return Full(dtype, shape, float(value), True, value)

    def expr(self, dtype: str, shape: str, depth: int) -> Node:
        if depth <= 0 or self.rng.random() < 0.2:
            return self.leaf(dtype, shape)
        makers = [self.binary, self.binary, self.unary, self.cast, self.where, self.reduce]
        square = self.program.rank == 2 and self.program.block == self.program.cols
        if shape == "tile" and square:
            makers.append(self.trans)
            if self.program.block >= 16:
                makers.append(self.dot)
        if is_float(dtype):
            makers.append(self.fma)
        node = self.rng.choice(makers)(dtype, shape, depth - 1)
        return node if node is not None else self.leaf(dtype, shape)

    def operand_shapes(self, shape: str) -> tuple[str, str]:
        if shape != "tile":
            return shape, shape
        options = [("tile", "tile"), ("tile", "tile"), ("tile", "scalar"), ("scalar", "tile")]
        if self.program.rank == 2:
            options += [("row", "col"), ("tile", "row"), ("col", "tile")]
        return self.rng.choice(options)

    def binary(self, dtype: str, shape: str, depth: int) -> Node | None:
        rng = self.rng
        op = rng.choice(FLOAT_BINARY if is_float(dtype) else INT_BINARY)
        sa, sb = self.operand_shapes(shape)
        a = self.expr(dtype, sa, depth)
        lit = None
        if rng.random() < 0.25 and op not in ("div", "minimum", "maximum"):
            b, lit = None, rng.choice((1, 2, 3)) if op not in ("mul", "shl") else 2
            if is_float(dtype):
                lit = rng.choice((0.5, 1.5, 2.0))
            b_bound = abs(float(lit))
            b_exact = True
            if sa != shape:
                return None
        else:
            b = self.expr(dtype, sb, depth)
            b_bound, b_exact = b.bound, b.exact
        bound, exact = binary_bound(op, a.bound, b_bound)
        if is_float(dtype) and not float_bound_ok(bound, dtype):
            return None
        return Binary(dtype, shape, bound, exact and a.exact and b_exact, op, a, b, lit)

    def unary(self, dtype: str, shape: str, depth: int) -> Node | None:
        if is_int(dtype):
            op = self.rng.choice(tuple(UNARY_INT) if dtype in SIGNED else ("not",))
            a = self.expr(dtype, shape, depth)
            return Unary(dtype, shape, 0.0, True, op, a)
        op = self.rng.choice(tuple(UNARY_FLOAT))
        a = self.expr(dtype, shape, depth)
        if op in ("exp", "exp2"):
            if a.bound > 4:
                return None
            bound = math.exp(a.bound) if op == "exp" else 2.0**a.bound
        elif op in ("sin", "cos") and a.bound > 100:
            return None
        elif op in ("neg", "abs"):
            bound = a.bound
        elif op == "log":
            bound = math.log(a.bound + 1) + 1
        elif op == "sqrt":
            bound = math.sqrt(a.bound) + 1
        elif op == "clamp":
            bound = min(a.bound, 2.0)
        else:
            bound = 1.0
        exact = a.exact and op in ("neg", "abs", "clamp")
        return Unary(dtype, shape, bound, exact, op, a)

    def cast(self, dtype: str, shape: str, depth: int) -> Node | None:
        source = self.expr(self.rng.choice(self.dtypes), shape, depth)
        if source.dtype == dtype or not can_cast(source, dtype):
            return None
        return cast(source, dtype)

    def compare(self, shape: str, depth: int) -> Compare:
        dtype = self.rng.choice(self.dtypes)
        sa, sb = self.operand_shapes(shape)
        a, b = self.expr(dtype, sa, depth), self.expr(dtype, sb, depth)
        if is_float(dtype) and not (a.exact and b.exact):
            a, b = self.leaf(dtype, sa), self.leaf(dtype, sb)
            if not (a.exact and b.exact):
                a = b = Full(dtype, shape, 1.0, True, 1)
        return Compare("int1", shape, 0.0, True, self.rng.choice(tuple(CMP_OPS)), a, b)

    def where(self, dtype: str, shape: str, depth: int) -> Node:
        cond = self.compare(shape, min(depth, 1))
        a, b = self.expr(dtype, shape, depth), self.expr(dtype, shape, depth)
        return Where(dtype, shape, max(a.bound, b.bound), a.exact and b.exact, cond, a, b)

    def reduce(self, dtype: str, shape: str, depth: int) -> Node | None:
        rng = self.rng
        rank = self.program.rank
        if shape == "tile":
            if rank == 1 or rng.random() < 0.5:
                return self._cumsum(dtype, depth)
            return None
        if (rank == 1) != (shape == "scalar"):
            return None
        axis = 0 if rank == 1 or shape == "col" else 1
        op = rng.choice(("sum", "sum", "max", "min", "argmax"))
        if op == "argmax":
            if dtype != "int32":
                return None
            source = self.expr(rng.choice(self.dtypes), "tile", depth)
            if is_float(source.dtype) and not source.exact:
                return None
            return Reduce("int32", shape, 0.0, True, "argmax", source, axis)
        if op == "sum" and is_int(dtype) and bits(dtype) < 32:
            return None
        source_dtype = dtype
        if op == "sum" and dtype in ("int32", "uint32") and rng.random() < 0.5:
            source_dtype = rng.choice(("int8", "int16") if dtype == "int32" else ("uint8",))
        source = self.expr(source_dtype, "tile", depth)
        if op == "sum":
            bound = source.bound * max(self.program.block, self.program.cols)
            if is_float(dtype) and not self.summable(bound, dtype):
                return None
            return Reduce(dtype, shape, bound, not is_float(dtype), "sum", source, axis)
        return Reduce(dtype, shape, source.bound, source.exact, op, source, axis)

    def _cumsum(self, dtype: str, depth: int) -> Node | None:
        if is_int(dtype) and bits(dtype) < 32:
            return None
        source_dtype = dtype
        if dtype in ("int32", "uint32") and self.rng.random() < 0.5:
            source_dtype = "int8" if dtype == "int32" else "uint8"
        source = self.expr(source_dtype, "tile", depth)
        bound = source.bound * max(self.program.block, self.program.cols)
        if is_float(dtype) and not self.summable(bound, dtype):
            return None
        axis = 0 if self.program.rank == 1 else self.rng.randint(0, 1)
        return Reduce(dtype, "tile", bound, not is_float(dtype), "cumsum", source, axis)

    def trans(self, dtype: str, shape: str, depth: int) -> Node:
        a = self.expr(dtype, "tile", depth)
        return Trans(dtype, "tile", a.bound, a.exact, a)

    def fma(self, dtype: str, shape: str, depth: int) -> Node | None:
        a, b, c = (self.expr(dtype, shape, depth) for _ in range(3))
        bound = a.bound * b.bound + c.bound
        if not float_bound_ok(bound, dtype):
            return None
        return Fma(dtype, shape, bound, False, a, b, c)

    def summable(self, bound: float, dtype: str) -> bool:
        """Whether a float sum or scan of a tile of `dtype` stays within the dtype's range. Any
        length: the interpreter accumulates float16 and bfloat16 in float32 and rounds once
        (tests/fuzz/RESULTS.md, finding 5), so a GPU's tree of float16 sums stays within the
        tolerance of it."""
        return float_bound_ok(bound, dtype)

    def dot(self, dtype: str, shape: str, depth: int) -> Node | None:
        """A `tl.dot` whose result is `dtype`, with any operand dtype and `out_dtype` that give
        it in Triton 3.6 (`DOT_FORMS`); with an accumulator, Triton wants `out_dtype` to be the
        accumulator's dtype (float32 by default)."""
        rng = self.rng
        forms = [f for f in DOT_FORMS.get(dtype, ()) if self.bf16 or f[0] != "bfloat16"]
        if not forms:
            return None
        source, outs = rng.choice(forms)
        a, b = self.expr(source, "tile", depth), self.expr(source, "tile", depth)
        bound = a.bound * b.bound * self.program.block
        acc, out = None, rng.choice(outs)
        if rng.random() < 0.3:
            acc = self.expr(dtype, "tile", depth)
            bound += acc.bound
            out = rng.choice((None, dtype)) if dtype == "float32" else dtype
        if is_float(dtype) and not float_bound_ok(bound, dtype):
            return None
        precision = "ieee" if source == "float32" else None  # the model has no tf32
        return Dot(dtype, "tile", bound, not is_float(dtype), a, b, acc, out, precision)


DOT_FORMS: dict[str, tuple[tuple[str, tuple[str | None, ...]], ...]] = {
    "int32": (("int8", (None, "int8", "int16", "int32", "int64", "uint8", "float16", "float32")),),
    "float32": (
        ("float16", (None, "float32")),
        ("float32", (None, "float16", "float32", "float64", "int32")),
        ("bfloat16", (None, "float16", "float32", "float64")),
    ),
    "float16": (("float16", ("float16",)),),
    "float64": (("float64", (None, "float16", "float32", "float64", "int32")),),
}
"""For each result dtype of `tl.dot`, the operand dtypes and the `out_dtype` values (None: left
out) that give it in Triton 3.6's `semantic.dot`: int8 operands give int32 whatever `out_dtype`
says, float32 and bfloat16 operands float32, float64 operands float64, float16 operands
`out_dtype` (float32 or float16; narrower than the accumulator: tilec rounds the float32 sums
once). `out_dtype=tl.bfloat16` is an error there for float operands."""


CMP_OPS = ("lt", "le", "gt", "ge", "eq", "ne")


@attrs.define(eq=False)
class _IfWithInit:
    """`name = init` then `if cond: ... name = a [else: ... name = b]` (two statements)."""

    name: str
    init: Node
    cond: Node
    then: list
    orelse: list


@attrs.define(eq=False)
class _Loop:
    """`name = init` then the loop that updates `name`."""

    name: str
    init: Node
    loop: For


def binary_bound(op: str, a: float, b: float) -> tuple[float, bool]:
    """The bound of `a OP b` for float operands bounded by `a` and `b`, and whether the
    operation is exact (rounds identically everywhere)."""
    if op in ("add", "sub"):
        return a + b, True
    if op == "mul":
        return a * b, False
    if op == "div":
        return a, False
    return max(a, b), True


def can_cast(node: Node, dtype: str) -> bool:
    """Whether `node.to(dtype)` is defined the same everywhere for the values `node` may hold."""
    if node.dtype == dtype:
        return True
    if node.dtype == "int1":
        return True
    if is_float(node.dtype):
        if is_float(dtype):
            return float_bound_ok(node.bound, dtype)
        return dtype in SIGNED and node.exact and node.bound < 100
    if is_float(dtype):
        return float_bound_ok(int_range_max(node.dtype), dtype)
    return True


def cast(node: Node, dtype: str) -> Node:
    if node.dtype == dtype:
        return node
    if is_float(dtype):
        bound = node.bound if is_float(node.dtype) else int_range_max(node.dtype)
        if node.dtype == "int1":
            bound = 1.0
        return Cast(dtype, node.shape, bound, node.exact, node)
    return Cast(dtype, node.shape, 0.0, True, node)


def flatten(body: list) -> list:
    """Turn the generator's compound statements into plain ones, in place and recursively."""
    out: list = []
    for stmt in body:
        if isinstance(stmt, _IfWithInit):
            out.append(Assign(stmt.name, stmt.init))
            out.append(If(stmt.cond, flatten(stmt.then), flatten(stmt.orelse)))
        elif isinstance(stmt, _Loop):
            out.append(Assign(stmt.name, stmt.init))
            stmt.loop.body = flatten(stmt.loop.body)
            out.append(stmt.loop)
        else:
            out.append(stmt)
    return out


def generate(seed: int, *, bf16: bool = False) -> Program:
    """The random program of `seed`."""
    program = Generator(seed, bf16=bf16).build()
    program.body = flatten(program.body)
    return program
