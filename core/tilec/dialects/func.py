"""`func.func`: a function with typed arguments (with specialization attributes) and one body."""

from __future__ import annotations

from tilec.ir.attributes import DictAttr, StringAttr, TypeAttr
from tilec.ir.core import Block, Operation, Region, VerifyError, attr_def, region_def, register_op
from tilec.ir.module import ModuleOp
from tilec.ir.parser import Parser
from tilec.ir.printer import Printer
from tilec.ir.traits import HasParent, IsolatedFromAbove
from tilec.ir.types import FunctionType, Type


@register_op
class FuncOp(Operation):
    """`func.func @name(%x: !tile.ptr<f32> {tile.divisibility = 16}, %n: i32) -> i32 { ... }`.

    `arg_attrs` is an array of one dictionary per argument (specialization facts such as
    `tile.divisibility`); `function_type` is the signature.
    """

    name = "func.func"
    sym_name = attr_def(StringAttr)
    function_type = attr_def(TypeAttr)
    arg_attrs = attr_def(DictAttr, optional=True)
    body = region_def()
    traits = (IsolatedFromAbove(), HasParent(ModuleOp))

    def __init__(self, sym_name: str, inputs: list[Type], results: list[Type] = ()):
        super().__init__(
            attributes={
                "sym_name": StringAttr(sym_name),
                "function_type": TypeAttr(FunctionType(inputs, results)),
            },
            regions=[Region([Block(inputs)])],
        )

    @property
    def name_str(self) -> str:
        return self.attributes["sym_name"].value  # type: ignore[attr-defined]

    @property
    def signature(self) -> FunctionType:
        return self.attributes["function_type"].type  # type: ignore[attr-defined]

    @property
    def entry_block(self) -> Block:
        return self.regions[0].block

    def argument_attributes(self, index: int) -> dict:
        per_arg = self.attributes.get("arg_attrs")
        if per_arg is None:
            return {}
        entry = per_arg.get(str(index))  # type: ignore[union-attr]
        return dict(entry.items) if entry is not None else {}

    def set_argument_attribute(self, index: int, key: str, value) -> None:
        per_arg = dict(self.attributes["arg_attrs"].items) if "arg_attrs" in self.attributes else {}
        entry = dict(per_arg[str(index)].items) if str(index) in per_arg else {}
        entry[key] = value
        per_arg[str(index)] = DictAttr(tuple(entry.items()))
        self.attributes["arg_attrs"] = DictAttr(
            tuple(sorted(per_arg.items(), key=lambda kv: int(kv[0])))
        )

    def verify_(self) -> None:
        signature = self.signature
        block = self.regions[0].blocks[0] if self.regions[0].blocks else None
        if block is None:
            raise VerifyError("function body must not be empty", self)
        arg_types = [a.type for a in block.args]
        if arg_types != list(signature.inputs):
            raise VerifyError(
                f"entry block arguments ({', '.join(map(str, arg_types))}) do not match the "
                f"signature {signature}",
                self,
            )

    # Text form -------------------------------------------------------------------------------

    def print_custom(self, printer: Printer) -> None:
        saved = printer.begin_scope()
        block = self.entry_block
        params = []
        for index, arg in enumerate(block.args):
            text = f"{printer.define(arg)}: {printer.type(arg.type)}"
            attrs = self.argument_attributes(index)
            if attrs:
                text += " " + printer.attr_dict(attrs)
            params.append(text)
        printer.write(f"func.func @{self.name_str}({', '.join(params)})")
        results = list(self.signature.results)
        if len(results) == 1:
            printer.write(f" -> {printer.type(results[0])}")
        elif results:
            printer.write(f" -> ({printer.types(results)})")
        extra = {
            k: v
            for k, v in self.attributes.items()
            if k not in ("sym_name", "function_type", "arg_attrs")
        }
        if extra:
            printer.write(f" attributes {printer.attr_dict(extra)}")
        printer.write(" ")
        printer.print_region(self.regions[0], entry_args=False)
        printer.end_scope(saved)

    @classmethod
    def parse_custom(cls, parser: Parser) -> FuncOp:
        name = parser.prefixed_name("@", "function name like '@kernel'")
        parser.expect("(")
        parser.push_scope()
        params: list[tuple[str, Type, int]] = []
        arg_attrs: dict[int, dict] = {}

        def parameter() -> None:
            value_name, type_, position = parser.typed_value_name()
            if parser.at_attr_dict():
                arg_attrs[len(params)] = parser.attr_dict()
            params.append((value_name, type_, position))

        parser.comma_list(parameter, ")")
        results: list[Type] = []
        if parser.accept("->"):
            results = parser.comma_list(parser.type, ")") if parser.accept("(") else [parser.type()]
        extra = parser.attr_dict() if parser.accept_keyword("attributes") else {}
        region = parser.region(entry_args=params)
        parser.pop_scope()
        op = cls.create(
            attributes={
                "sym_name": StringAttr(name),
                "function_type": TypeAttr(FunctionType([t for _, t, _ in params], results)),
                **extra,
            },
            regions=[region],
        )
        for index, attrs in arg_attrs.items():
            for key, value in attrs.items():
                op.set_argument_attribute(index, key, value)
        return op
