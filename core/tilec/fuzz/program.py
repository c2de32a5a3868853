"""The fuzzer's program model: expressions and statements of a random kernel, printed as tilec
source text and evaluated with NumPy under Triton's semantics.

A program is one kernel over a 1-D tile `[BLOCK]` or a square 2-D tile `[BLOCK, BLOCK]` with
`grid` programs. Every binary operation has operands of one dtype (the generator casts), so the
only promotions the NumPy model needs are Triton's own: a Python literal takes the other
operand's dtype, comparisons give `int1`, `tl.sum`/`tl.cumsum` of integers narrower than 32 bits
give 32 bits, `tl.dot` gives Triton's result type (`Dot`), `tl.argmax` gives int32.

Each node carries a bound on the magnitude of its float values (the generator keeps every float
well inside its dtype's range, so no infinity or NaN arises) and whether it is exact: computed
with operations that round the same way everywhere (no product, which a GPU may contract into
an FMA, no division, transcendental, float reduction or dot). Float comparisons and float-to-int
casts take exact operands only, so a last-bit difference never flips a branch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from tilec.ir.type_names import SIGNATURE_BY_TORCH

FLOATS = ("float16", "bfloat16", "float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
LIMIT = {"float16": 1e4, "bfloat16": 1e30, "float32": 1e30, "float64": 1e200}
"""The largest magnitude the generator lets a float value of each dtype reach."""
RTOL = {"float16": 2e-2, "bfloat16": 6e-2, "float32": 1e-4, "float64": 1e-9}
"""Relative tolerance (of a value's bound) for inexact float results."""


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def is_int(dtype: str) -> bool:
    return dtype in SIGNED or dtype in UNSIGNED


def bits(dtype: str) -> int:
    return 1 if dtype == "int1" else int("".join(c for c in dtype if c.isdigit()))


def storage(dtype: str) -> np.dtype:
    """The NumPy dtype of a buffer of `dtype` (bfloat16: uint16 bit patterns)."""
    return np.dtype(np.uint16 if dtype == "bfloat16" else dtype)


def np_dtype(dtype: str) -> np.dtype:
    return np.dtype(bool) if dtype == "int1" else np.dtype(dtype)


def tl_name(dtype: str) -> str:
    return f"tl.{dtype}"


def int_range_max(dtype: str) -> float:
    return float(np.iinfo(np.dtype(dtype)).max)


def literal(value: Any, dtype: str) -> str:
    return repr(float(value)) if is_float(dtype) else str(int(value))


# Expressions -----------------------------------------------------------------------------------


@attrs.define(eq=False)
class Node:
    """An expression: its dtype, shape kind (`tile`, `row` [R,1], `col` [1,C], `scalar`), float
    bound and exactness."""

    dtype: str
    shape: str
    bound: float = 0.0
    exact: bool = True

    def children(self) -> tuple[Node, ...]:
        return ()

    def replace(self, old: Node, new: Node) -> Node:
        """This node with child `old` (by identity) replaced by `new`, anywhere below."""
        if self is old:
            return new
        changes = {}
        for field in attrs.fields(type(self)):
            value = getattr(self, field.name)
            if isinstance(value, Node):
                replaced = value.replace(old, new)
                if replaced is not value:
                    changes[field.name] = replaced
        return attrs.evolve(self, **changes) if changes else self

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children():
            yield from child.walk()


@attrs.define(eq=False)
class Var(Node):
    name: str = ""

    def src(self, prog: Program) -> str:
        return self.name

    def eval(self, env: dict) -> np.ndarray:
        return env[self.name]


@attrs.define(eq=False)
class Full(Node):
    """`tl.full(shape, value, dtype)`."""

    value: float = 0

    def src(self, prog: Program) -> str:
        return f"tl.full({prog.shape_src(self.shape)}, {literal(self.value, self.dtype)}, {tl_name(self.dtype)})"

    def eval(self, env: dict) -> np.ndarray:
        return np.full(env["__shapes"][self.shape], self.value, np_dtype(self.dtype))


@attrs.define(eq=False)
class Load(Node):
    """`tl.load(inK + offs[, mask=..., other=...])` of a tile."""

    input: int = 0
    masked: bool = True
    other: float = 0
    cond: Node | None = None
    pattern: str = ""

    def children(self) -> tuple[Node, ...]:
        return () if self.cond is None else (self.cond,)

    def src(self, prog: Program) -> str:
        text = f"tl.load(in{self.input} + {ADDRESS[self.pattern][0]}"
        if self.masked:
            mask = "mask" if self.cond is None else f"mask & ({self.cond.src(prog)})"
            text += f", mask={mask}, other={literal(self.other, self.dtype)}"
        return text + ")"

    def eval(self, env: dict) -> np.ndarray:
        offs = ADDRESS[self.pattern][1](env["offs"])
        values = env["__inputs"][self.input][offs].astype(np_dtype(self.dtype))
        if not self.masked:
            return values
        mask = env["mask"] if self.cond is None else env["mask"] & self.cond.eval(env)
        return np.where(mask, values, np.asarray(self.other, np_dtype(self.dtype)))


ADDRESS = {
    "": ("offs", lambda offs: offs),
    "stride2": ("offs * 2", lambda offs: offs * 2),
    "xor1": ("(offs ^ 1)", lambda offs: offs ^ 1),
    "half": ("offs // 2", lambda offs: offs // 2),
}
"""Address patterns of tile loads and stores (`half` loads only: it repeats addresses); every
buffer of tiles has twice the elements of the programs' tiles, so all stay in bounds."""


UNARY_FLOAT = {
    "neg": ("-({0})", np.negative),
    "abs": ("tl.abs({0})", np.abs),
    "exp": ("tl.exp({0})", np.exp),
    "exp2": ("tl.exp2({0})", np.exp2),
    "log": ("tl.log(tl.abs({0}) + 1.0)", lambda x: np.log(np.abs(x) + np.asarray(1, x.dtype))),
    "sqrt": ("tl.sqrt(tl.abs({0}))", lambda x: np.sqrt(np.abs(x))),
    "sin": ("tl.sin({0})", np.sin),
    "cos": ("tl.cos({0})", np.cos),
    "clamp": ("tl.clamp({0}, -1.5, 2.0)", lambda x: np.clip(x, -1.5, 2.0).astype(x.dtype)),
    "sigmoid": (
        "tl.sigmoid({0})",
        lambda x: (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype),
    ),
}
UNARY_INT = {
    "neg": ("-({0})", np.negative),
    "abs": ("tl.abs({0})", np.abs),
    "not": ("~({0})", np.invert),
}


@attrs.define(eq=False)
class Unary(Node):
    op: str = ""
    a: Node = None  # type: ignore[assignment]

    def children(self) -> tuple[Node, ...]:
        return (self.a,)

    def _table(self) -> dict:
        return UNARY_FLOAT if is_float(self.dtype) else UNARY_INT

    def src(self, prog: Program) -> str:
        return self._table()[self.op][0].format(self.a.src(prog))

    def eval(self, env: dict) -> np.ndarray:
        return np.asarray(self._table()[self.op][1](self.a.eval(env)), np_dtype(self.dtype))


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C division (Triton's `//` on integers) for a positive divisor."""
    q = a // b
    return q + ((a % b != 0) & (a < 0)).astype(q.dtype)


def _trunc_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a - _trunc_div(a, b) * b


BINARY = {
    "add": ("({0} + {1})", np.add),
    "sub": ("({0} - {1})", np.subtract),
    "mul": ("({0} * {1})", np.multiply),
    "div": ("({0} / (tl.abs({1}) + 1.0))", lambda a, b: a / (np.abs(b) + np.asarray(1, b.dtype))),
    "floordiv": ("({0} // (({1} & 7) + 1))", lambda a, b: _trunc_div(a, (b & 7) + 1)),
    "mod": ("({0} % (({1} & 7) + 1))", lambda a, b: _trunc_mod(a, (b & 7) + 1)),
    "and": ("({0} & {1})", np.bitwise_and),
    "or": ("({0} | {1})", np.bitwise_or),
    "xor": ("({0} ^ {1})", np.bitwise_xor),
    "shl": ("({0} << ({1} & 3))", lambda a, b: np.left_shift(a, b & 3)),
    "shr": ("({0} >> ({1} & 3))", lambda a, b: np.right_shift(a, b & 3)),
    "minimum": ("tl.minimum({0}, {1})", np.minimum),
    "maximum": ("tl.maximum({0}, {1})", np.maximum),
}
FLOAT_BINARY = ("add", "sub", "mul", "div", "minimum", "maximum")
INT_BINARY = tuple(op for op in BINARY if op != "div")


@attrs.define(eq=False)
class Binary(Node):
    """`a OP b`; `b` is a node or, with `lit` set, a Python literal of `a`'s dtype."""

    op: str = ""
    a: Node = None  # type: ignore[assignment]
    b: Node | None = None
    lit: float | None = None

    def children(self) -> tuple[Node, ...]:
        return (self.a,) if self.b is None else (self.a, self.b)

    def src(self, prog: Program) -> str:
        rhs = literal(self.lit, self.dtype) if self.b is None else self.b.src(prog)
        return BINARY[self.op][0].format(self.a.src(prog), rhs)

    def eval(self, env: dict) -> np.ndarray:
        a = self.a.eval(env)
        b = np.asarray(self.lit, a.dtype) if self.b is None else self.b.eval(env)
        return np.asarray(BINARY[self.op][1](a, b), np_dtype(self.dtype))


CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@attrs.define(eq=False)
class Compare(Node):
    op: str = ""
    a: Node = None  # type: ignore[assignment]
    b: Node = None  # type: ignore[assignment]

    def children(self) -> tuple[Node, ...]:
        return (self.a, self.b)

    def src(self, prog: Program) -> str:
        return f"({self.a.src(prog)} {CMP[self.op]} {self.b.src(prog)})"

    def eval(self, env: dict) -> np.ndarray:
        a, b = self.a.eval(env), self.b.eval(env)
        return np.asarray(getattr(np, {"lt": "less", "le": "less_equal", "gt": "greater",
                                       "ge": "greater_equal", "eq": "equal",
                                       "ne": "not_equal"}[self.op])(a, b))  # fmt: skip


@attrs.define(eq=False)
class Cast(Node):
    a: Node = None  # type: ignore[assignment]

    def children(self) -> tuple[Node, ...]:
        return (self.a,)

    def src(self, prog: Program) -> str:
        return f"({self.a.src(prog)}).to({tl_name(self.dtype)})"

    def eval(self, env: dict) -> np.ndarray:
        return np.asarray(self.a.eval(env).astype(np_dtype(self.dtype)))


@attrs.define(eq=False)
class Where(Node):
    cond: Node = None  # type: ignore[assignment]
    a: Node = None  # type: ignore[assignment]
    b: Node = None  # type: ignore[assignment]

    def children(self) -> tuple[Node, ...]:
        return (self.cond, self.a, self.b)

    def src(self, prog: Program) -> str:
        return f"tl.where({self.cond.src(prog)}, {self.a.src(prog)}, {self.b.src(prog)})"

    def eval(self, env: dict) -> np.ndarray:
        return np.asarray(
            np.where(self.cond.eval(env), self.a.eval(env), self.b.eval(env)),
            np_dtype(self.dtype),
        )


@attrs.define(eq=False)
class Trans(Node):
    """`tl.trans(a)` of a square 2-D tile."""

    a: Node = None  # type: ignore[assignment]

    def children(self) -> tuple[Node, ...]:
        return (self.a,)

    def src(self, prog: Program) -> str:
        return f"tl.trans({self.a.src(prog)})"

    def eval(self, env: dict) -> np.ndarray:
        return np.ascontiguousarray(self.a.eval(env).T)


@attrs.define(eq=False)
class Fma(Node):
    """`tl.fma(a, b, c)` of floats."""

    a: Node = None  # type: ignore[assignment]
    b: Node = None  # type: ignore[assignment]
    c: Node = None  # type: ignore[assignment]

    def children(self) -> tuple[Node, ...]:
        return (self.a, self.b, self.c)

    def src(self, prog: Program) -> str:
        return f"tl.fma({self.a.src(prog)}, {self.b.src(prog)}, {self.c.src(prog)})"

    def eval(self, env: dict) -> np.ndarray:
        a, b, c = (x.eval(env).astype(np.float64) for x in (self.a, self.b, self.c))
        return np.asarray((a * b + c).astype(np_dtype(self.dtype)))


@attrs.define(eq=False)
class Reduce(Node):
    """`tl.sum|max|min|argmax|cumsum(a, axis)`; a 2-D reduction is expanded back (`[:, None]`)."""

    op: str = ""
    a: Node = None  # type: ignore[assignment]
    axis: int = 0

    def children(self) -> tuple[Node, ...]:
        return (self.a,)

    def src(self, prog: Program) -> str:
        text = f"tl.{self.op}({self.a.src(prog)}, axis={self.axis})"
        if self.dtype == "bfloat16":  # Triton reduces and scans bfloat16 in float32
            text = f"({text}).to(tl.bfloat16)"
        if self.op == "cumsum" or prog.rank == 1:
            return text
        return text + ("[None, :]" if self.axis == 0 else "[:, None]")

    def eval(self, env: dict) -> np.ndarray:
        a = self.a.eval(env)
        out = np_dtype(self.dtype)
        # float16 sums accumulate in float32 and round once, as the interpreter does (a GPU
        # rounds every step, in a tree whose error stays within the tolerance)
        acc = np.dtype(np.float32) if self.dtype == "float16" else out
        if self.op == "cumsum":
            return np.cumsum(a, axis=self.axis, dtype=acc).astype(out)
        keep = a.ndim == 2
        if self.op == "sum":
            return np.asarray(np.sum(a, axis=self.axis, dtype=acc, keepdims=keep)).astype(out)
        if self.op == "argmax":
            return np.asarray(np.argmax(a, axis=self.axis, keepdims=keep), out)
        fn = np.max if self.op == "max" else np.min
        return np.asarray(fn(a, axis=self.axis, keepdims=keep), out)


@attrs.define(eq=False)
class Dot(Node):
    """`tl.dot(a, b[, acc][, out_dtype=...][, input_precision=...])`: its dtype is Triton's
    result type (int32 for int8 operands whatever `out_dtype` says, float32 for float32 and
    bfloat16 operands, float64 for float64, `out_dtype` for float16)."""

    a: Node = None  # type: ignore[assignment]
    b: Node = None  # type: ignore[assignment]
    acc: Node | None = None
    out_dtype: str | None = None
    precision: str | None = None

    def children(self) -> tuple[Node, ...]:
        return (self.a, self.b) if self.acc is None else (self.a, self.b, self.acc)

    def src(self, prog: Program) -> str:
        acc = "" if self.acc is None else f", {self.acc.src(prog)}"
        if self.out_dtype is not None:
            acc += f", out_dtype={tl_name(self.out_dtype)}"
        if self.precision is not None:
            acc += f", input_precision={self.precision!r}"
        return f"tl.dot({self.a.src(prog)}, {self.b.src(prog)}{acc})"

    def eval(self, env: dict) -> np.ndarray:
        """The exact sums rounded once to the result's dtype (a float16 result: tilec
        accumulates in float32 and rounds once; the tolerance covers either)."""
        wide = np.float64 if is_float(self.dtype) else np.int64
        product = self.a.eval(env).astype(wide) @ self.b.eval(env).astype(wide)
        if self.acc is not None:
            product = product + self.acc.eval(env).astype(wide)
        return np.asarray(product.astype(np_dtype(self.dtype)))


# Statements ------------------------------------------------------------------------------------


@attrs.define(eq=False)
class Assign:
    name: str
    value: Node


@attrs.define(eq=False)
class Store:
    """`tl.store(outK + offs, value[, mask=mask])` of a tile, `tl.store(outK + pid, value)` of
    a scalar; with `atomic` set, `tl.atomic_<atomic>` instead."""

    output: int
    value: Node
    masked: bool = True
    atomic: str | None = None
    pattern: str = ""


@attrs.define(eq=False)
class If:
    cond: Node
    then: list
    orelse: list


@attrs.define(eq=False)
class For:
    var: str
    start: int
    stop: int
    body: list
    static: bool = False


Statement = Assign | Store | If | For


@attrs.define(eq=False)
class Program:
    """A random kernel: its rank (1 or 2), BLOCK, grid, element count(s), input and output
    dtypes, and statements."""

    rank: int
    block: int
    grid: int
    n: int
    m: int
    inputs: list[str]
    outputs: list[str]
    """Output dtypes; a scalar store's buffer has `grid` elements, a scalar atomic's one."""
    body: list
    seed: int = 0
    num_warps: int = 4
    cols: int = 1
    """The columns of a 2-D tile (`COLS`); its rows are `BLOCK`."""

    # Printing ----------------------------------------------------------------------------------

    def shape_src(self, shape: str) -> str:
        if shape == "scalar":
            return "[]"
        if self.rank == 1:
            return "[BLOCK]"
        return {"tile": "[BLOCK, COLS]", "row": "[BLOCK, 1]", "col": "[1, COLS]"}[shape]

    def used(self) -> tuple[list[int], list[int]]:
        """The inputs and outputs the statements use, in order."""
        inputs, outputs = set(), set()
        for stmt in walk_statements(self.body):
            if isinstance(stmt, Store):
                outputs.add(stmt.output)
            for node in statement_nodes(stmt):
                for sub in node.walk():
                    if isinstance(sub, Load):
                        inputs.add(sub.input)
        return sorted(inputs), sorted(outputs)

    def params(self) -> list[str]:
        inputs, outputs = self.used()
        names = [f"in{i}" for i in inputs] + [f"out{i}" for i in outputs] + ["n"]
        return names + (["m"] if self.rank == 2 else [])

    def signature(self) -> dict[str, str]:
        inputs, outputs = self.used()
        sig = {f"in{i}": "*" + SIGNATURE_BY_TORCH[self.inputs[i]] for i in inputs}
        sig.update({f"out{i}": "*" + SIGNATURE_BY_TORCH[self.outputs[i]] for i in outputs})
        sig["n"] = "i32"
        if self.rank == 2:
            sig["m"] = "i32"
        return sig

    def source(self, name: str = "kernel") -> str:
        lines = [
            "import tilec",
            "import tilec.language as tl",
            "",
            "",
            "@tilec.jit",
            f"def {name}({', '.join(self.params() + [f'{c}: tl.constexpr' for c in self.constexprs()])}):",
            "    pid = tl.program_id(0)",
        ]
        if self.rank == 1:
            lines += [
                "    offs = pid * BLOCK + tl.arange(0, BLOCK)",
                "    mask = offs < n",
            ]
        else:
            lines += [
                "    rows = pid * BLOCK + tl.arange(0, BLOCK)",
                "    cols = tl.arange(0, COLS)",
                "    offs = rows[:, None] * COLS + cols[None, :]",
                "    mask = (rows[:, None] < n) & (cols[None, :] < m)",
            ]
        self._emit(self.body, lines, "    ")
        return "\n".join(lines) + "\n"

    def _emit(self, body: list, lines: list[str], indent: str) -> None:
        for stmt in body:
            if isinstance(stmt, Assign):
                lines.append(f"{indent}{stmt.name} = {stmt.value.src(self)}")
            elif isinstance(stmt, Store):
                scalar = stmt.value.shape == "scalar"
                where = f"out{stmt.output} + " + ("pid" if scalar else ADDRESS[stmt.pattern][0])
                if scalar and stmt.atomic:
                    where = f"out{stmt.output}"
                mask = ", mask=mask" if stmt.masked and not scalar else ""
                fn = f"tl.atomic_{stmt.atomic}" if stmt.atomic else "tl.store"
                lines.append(f"{indent}{fn}({where}, {stmt.value.src(self)}{mask})")
            elif isinstance(stmt, If):
                lines.append(f"{indent}if {stmt.cond.src(self)}:")
                self._emit(stmt.then or [], lines, indent + "    ")
                if not stmt.then:
                    lines.append(f"{indent}    pass")
                if stmt.orelse:
                    lines.append(f"{indent}else:")
                    self._emit(stmt.orelse, lines, indent + "    ")
            else:
                if stmt.static:  # a static_range variable is a Python int: make it a tensor
                    header = f"for {stmt.var}_ in tl.static_range({stmt.start}, {stmt.stop}):"
                    lines.append(indent + header)
                    lines.append(f"{indent}    {stmt.var} = tl.full([], {stmt.var}_, tl.int32)")
                else:
                    lines.append(f"{indent}for {stmt.var} in range({stmt.start}, {stmt.stop}):")
                self._emit(stmt.body, lines, indent + "    ")
                if not stmt.body and not stmt.static:
                    lines.append(f"{indent}    pass")

    # Data and the NumPy model ------------------------------------------------------------------

    def constexprs(self) -> dict[str, int]:
        return {"BLOCK": self.block} | ({"COLS": self.cols} if self.rank == 2 else {})

    def numel(self) -> int:
        return self.grid * self.block * (self.cols if self.rank == 2 else 1)

    def output_size(self, index: int) -> int:
        for stmt in walk_statements(self.body):
            if isinstance(stmt, Store) and stmt.output == index and stmt.value.shape == "scalar":
                return 1 if stmt.atomic else self.grid
        return 2 * self.numel()

    def make_inputs(self, rng: np.random.Generator) -> tuple[list, list]:
        """Random input buffers and initial outputs (values within [-4, 4] for floats), as
        storage arrays."""
        inputs = [random_array(rng, dtype, 2 * self.numel()) for dtype in self.inputs]
        outputs = [random_array(rng, d, self.output_size(i)) for i, d in enumerate(self.outputs)]
        return inputs, outputs

    def arguments(self, inputs: list, outputs: list) -> list:
        used_in, used_out = self.used()
        args = [inputs[i] for i in used_in] + [outputs[i] for i in used_out] + [self.n]
        return args + ([self.m] if self.rank == 2 else [])

    def evaluate(self, inputs: list, outputs: list) -> None:
        """Run the program on NumPy over every program id, writing `outputs` in place."""
        b, c = self.block, self.cols
        if self.rank == 1:
            shapes = {"tile": (b,), "scalar": ()}
        else:
            shapes = {"tile": (b, c), "row": (b, 1), "col": (1, c), "scalar": ()}
        with np.errstate(all="ignore"):
            for pid in range(self.grid):
                env: dict[str, Any] = {"__shapes": shapes, "__inputs": inputs}
                env["pid"] = np.asarray(pid, np.int32)
                env["n"], env["m"] = np.asarray(self.n, np.int32), np.asarray(self.m, np.int32)
                if self.rank == 1:
                    offs = pid * b + np.arange(b)
                    env["offs"], env["mask"] = offs, offs < self.n
                else:
                    rows, cols = pid * b + np.arange(b), np.arange(c)
                    env["offs"] = rows[:, None] * c + cols[None, :]
                    env["mask"] = (rows[:, None] < self.n) & (cols[None, :] < self.m)
                self._run(self.body, env, outputs)

    def _run(self, body: list, env: dict, outputs: list) -> None:
        for stmt in body:
            if isinstance(stmt, Assign):
                env[stmt.name] = stmt.value.eval(env)
            elif isinstance(stmt, Store):
                self._store(stmt, env, outputs)
            elif isinstance(stmt, If):
                self._run(stmt.then if bool(stmt.cond.eval(env)) else stmt.orelse, env, outputs)
            else:
                for i in range(stmt.start, stmt.stop):
                    env[stmt.var] = np.asarray(i, np.int32)
                    self._run(stmt.body, env, outputs)

    def _store(self, stmt: Store, env: dict, outputs: list) -> None:
        buffer = outputs[stmt.output]
        value = np.asarray(stmt.value.eval(env), np_dtype(self.outputs[stmt.output]))
        if stmt.value.shape == "scalar":
            index = 0 if stmt.atomic else int(env["pid"])
            current = buffer[index]
            buffer[index] = _combine(stmt.atomic, current, value)
            return
        offs = ADDRESS[stmt.pattern][1](env["offs"])
        sel = env["mask"] if stmt.masked else np.ones(offs.shape, bool)
        value = np.broadcast_to(value, offs.shape)
        buffer[offs[sel]] = _combine(stmt.atomic, buffer[offs[sel]], value[sel])


def _combine(atomic: str | None, current: Any, value: Any) -> Any:
    if atomic is None:
        return value
    combine = {
        "add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
        "or": np.bitwise_or, "xor": np.bitwise_xor, "xchg": lambda _, new: new,
    }  # fmt: skip
    return combine[atomic](current, value)


def random_array(rng: np.random.Generator, dtype: str, size: int) -> np.ndarray:
    """Random values of `dtype` as its storage: floats in [-4, 4] in steps of 1/8 (exact in
    every float dtype), integers over their whole range."""
    if is_float(dtype):
        values = rng.integers(-32, 33, size) / 8.0
        if dtype == "bfloat16":
            return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return values.astype(dtype)
    info = np.iinfo(np.dtype(dtype))
    return rng.integers(info.min, info.max, size, dtype=np.dtype(dtype), endpoint=True)


def walk_statements(body: list) -> Iterator:
    for stmt in body:
        yield stmt
        if isinstance(stmt, If):
            yield from walk_statements(stmt.then)
            yield from walk_statements(stmt.orelse)
        elif isinstance(stmt, For):
            yield from walk_statements(stmt.body)


def statement_nodes(stmt: Any) -> tuple[Node, ...]:
    if isinstance(stmt, Assign | Store):
        return (stmt.value,)
    if isinstance(stmt, If):
        return (stmt.cond,)
    return ()


def tolerances(program: Program) -> dict[int, float]:
    """The relative tolerance (of the stored value's bound) of each output: the loosest `RTOL`
    of a float dtype an inexact operation computed in, anywhere upstream of the stored value
    (a float32 `tl.log` cast to float64 keeps float32's tolerance)."""
    loosest: dict[str, float] = {}
    result: dict[int, float] = {}

    def tree(node: Node) -> float:
        own = RTOL[node.dtype] if is_float(node.dtype) and not node.exact else 0.0
        if isinstance(node, Var):
            own = max(own, loosest.get(node.name, 0.0))
        return max([own, *(tree(child) for child in node.children())])

    def visit(body: list) -> None:
        for stmt in body:
            if isinstance(stmt, Assign):
                loosest[stmt.name] = max(loosest.get(stmt.name, 0.0), tree(stmt.value))
            elif isinstance(stmt, Store):
                result[stmt.output] = max(result.get(stmt.output, 0.0), tree(stmt.value))
            elif isinstance(stmt, If):
                visit(stmt.then)
                visit(stmt.orelse)
            else:
                visit(stmt.body)
                visit(stmt.body)  # a loop-carried value's tolerance reaches the next trip

    visit(program.body)
    return result


def float_bound_ok(bound: float, dtype: str) -> bool:
    return math.isfinite(bound) and bound <= LIMIT[dtype]
