"""The tile IR: types, attributes, values, operations, blocks, regions, printer, parser, verifier.

This package is the ground floor: it imports nothing else of tilec. Op modules (`tilec.dialects`)
fill the op registry that the parser uses.

The names below load with their module on first use (`from tilec.ir import parse_module`):
`import tilec.language` needs the types only, not the parser, printer and verifier.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tilec.ir.attributes import (
        UNKNOWN_LOC,
        ArrayAttr,
        Attribute,
        DenseAttr,
        DialectAttr,
        DictAttr,
        FileLineColLoc,
        FloatAttr,
        IntegerAttr,
        Location,
        StringAttr,
        SymbolRefAttr,
        TypeAttr,
        UnitAttr,
        UnknownLoc,
        register_attribute,
    )
    from tilec.ir.builder import Builder
    from tilec.ir.core import (
        OP_REGISTRY,
        Block,
        BlockArgument,
        Operation,
        OpResult,
        Region,
        Trait,
        Value,
        VerifyError,
        attr_def,
        operand_def,
        region_def,
        register_op,
        result_def,
    )
    from tilec.ir.module import ModuleOp
    from tilec.ir.parser import ParseError, Parser, parse_module
    from tilec.ir.printer import Printer, print_module, print_op
    from tilec.ir.types import (
        FloatType,
        FunctionType,
        IntegerType,
        PointerType,
        TensorType,
        Type,
        bf16,
        f16,
        f32,
        f64,
        i1,
        i8,
        i16,
        i32,
        i64,
        u8,
        u16,
        u32,
        u64,
    )
    from tilec.ir.verifier import Diagnostic, format_diagnostic, verify

_MODULES = {
    "attributes": (
        "UNKNOWN_LOC", "ArrayAttr", "Attribute", "DenseAttr", "DialectAttr", "DictAttr",
        "FileLineColLoc", "FloatAttr", "IntegerAttr", "Location", "StringAttr", "SymbolRefAttr",
        "TypeAttr", "UnitAttr", "UnknownLoc", "register_attribute",
    ),
    "builder": ("Builder",),
    "core": (
        "OP_REGISTRY", "Block", "BlockArgument", "Operation", "OpResult", "Region", "Trait",
        "Value", "VerifyError", "attr_def", "operand_def", "region_def", "register_op",
        "result_def",
    ),
    "module": ("ModuleOp",),
    "parser": ("ParseError", "Parser", "parse_module"),
    "printer": ("Printer", "print_module", "print_op"),
    "types": (
        "FloatType", "FunctionType", "IntegerType", "PointerType", "TensorType", "Type", "bf16",
        "f16", "f32", "f64", "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
    ),
    "verifier": ("Diagnostic", "format_diagnostic", "verify"),
}  # fmt: skip
_HOME = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name of the package, imported from its module on first use (then kept)."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'tilec.ir' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tilec.ir.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "OP_REGISTRY",
    "UNKNOWN_LOC",
    "ArrayAttr",
    "Attribute",
    "Block",
    "BlockArgument",
    "Builder",
    "DenseAttr",
    "Diagnostic",
    "DialectAttr",
    "DictAttr",
    "FileLineColLoc",
    "FloatAttr",
    "FloatType",
    "FunctionType",
    "IntegerAttr",
    "IntegerType",
    "Location",
    "ModuleOp",
    "OpResult",
    "Operation",
    "ParseError",
    "Parser",
    "PointerType",
    "Printer",
    "Region",
    "StringAttr",
    "SymbolRefAttr",
    "TensorType",
    "Trait",
    "Type",
    "TypeAttr",
    "UnitAttr",
    "UnknownLoc",
    "Value",
    "VerifyError",
    "attr_def",
    "bf16",
    "f16",
    "f32",
    "f64",
    "format_diagnostic",
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "operand_def",
    "parse_module",
    "print_module",
    "print_op",
    "region_def",
    "register_attribute",
    "register_op",
    "result_def",
    "u8",
    "u16",
    "u32",
    "u64",
    "verify",
]
