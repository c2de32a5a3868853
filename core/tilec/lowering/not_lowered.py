"""The ops that have no lowering function of their own, each with the reason.

`tests/lowering/test_lowering_coverage.py` checks that every registered op is either lowered
(`@lowers`) or listed here, so that a new op cannot be forgotten.
"""

from __future__ import annotations

from tilec.dialects.func import FuncOp
from tilec.dialects.scf import ConditionOp, YieldOp
from tilec.dialects.tile import CallOp, ReduceReturnOp, ScanReturnOp
from tilec.ir.core import Operation
from tilec.ir.module import ModuleOp

_COMBINER_END = "ends a combiner region: `LoweringContext.inline_region` returns its operands"

NOT_LOWERED: dict[type[Operation], str] = {
    ModuleOp: "the container of functions: `lower_module` picks the kernel out of it",
    FuncOp: "`lower_module` lowers the kernel function itself (its signature and entry block)",
    CallOp: "the `inline` pass replaces every call before layout assignment (gir)",
    YieldOp: "ends an scf region: the scf.for, scf.if and scf.while lowerings read its operands",
    ConditionOp: "ends the before region of scf.while, whose lowering branches on it",
    ReduceReturnOp: _COMBINER_END,
    ScanReturnOp: _COMBINER_END,
}

__all__ = ["NOT_LOWERED"]
