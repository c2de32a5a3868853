"""Layout assignment, the `gir` stage: `to_gir` runs it, `verify_gir` checks its promise.

The passes live in their own modules (`axis-info` in `axis_info.py`, `assign-layouts` in
`assign_layouts.py`, `remove-layout-conversions` in `remove_layout_conversions.py`); the
`gir` pipeline is the default pipeline of the `gir` stage, so third-party `gir` passes slot in
by their declared relations. The caller supplies the pass manager (the compile pipeline,
`tilec.pipeline`, gives the one over every plugin's passes).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from tilec.dialects.func import FuncOp
from tilec.dialects.gpu import SharedEncodingAttr, layout_of
from tilec.ir import Diagnostic, verify
from tilec.ir.core import Operation, Value, VerifyError
from tilec.ir.types import TensorType
from tilec.ir.verifier import format_diagnostic
from tilec.layout.assign_layouts import AssignLayouts
from tilec.layout.axis_info import AxisInfoAnalysis
from tilec.layout.remove_layout_conversions import RemoveLayoutConversions
from tilec.layout.rules import GpuTarget

if TYPE_CHECKING:
    from tilec.passes.manager import PassManager

__all__ = ["AssignLayouts", "AxisInfoAnalysis", "RemoveLayoutConversions", "to_gir", "verify_gir"]


def to_gir(
    module: Operation,
    target: GpuTarget,
    manager: PassManager,
    instrumentations: Sequence[Any] = (),
    *,
    skip_origins: Collection[str] = (),
) -> None:
    """Turn the tir `module` into gir in place: run `manager`'s default `gir` pipeline
    (`skip_origins` leaves out other backends' passes) for `target`, then check that every
    tensor has a layout (`verify_gir`). Raises `Diagnostic` on invalid gir."""
    manager.run(
        module,
        None,
        stages=("gir",),
        target=target,
        instrumentations=instrumentations,
        skip_origins=skip_origins,
    )
    verify_gir(module)


def verify_gir(module: Operation) -> None:
    """Verify `module` as gir: the usual verifier, and every tensor carries a layout whose
    lanes and warps are those its function declares (`gpu.threads_per_warp`, `gpu.num_warps`).
    Raises `Diagnostic`."""
    verify(module)
    try:
        for func in (op for op in module.walk() if isinstance(op, FuncOp)):
            _check_function(func)
    except VerifyError as err:
        raise Diagnostic(format_diagnostic(err.op, str(err)), err.op) from None


def _check_function(func: Operation) -> None:
    warps = func.attributes.get("gpu.num_warps")
    lanes = func.attributes.get("gpu.threads_per_warp")
    if warps is None or lanes is None:
        raise VerifyError("gir functions need 'gpu.num_warps' and 'gpu.threads_per_warp'", func)
    for op in func.walk():
        values: list[Value] = list(op.results)
        for region in op.regions:
            for block in region.blocks:
                values.extend(block.args)
        for value in values:
            if not isinstance(value.type, TensorType):
                continue
            if isinstance(value.type.encoding, SharedEncodingAttr):
                continue  # in shared memory: no registers of any warp
            layout = layout_of(value.type)
            if layout is None:
                raise VerifyError(f"tensor {value.type} has no layout in gir", op)
            if layout.num_warps != warps.value or layout.lanes != lanes.value:  # type: ignore[attr-defined]
                raise VerifyError(
                    f"layout of {value.type} is for {layout.num_warps} warps of "  # type: ignore[attr-defined]
                    f"{layout.lanes} lanes, but the function has {warps.value} of "  # type: ignore[attr-defined]
                    f"{lanes.value}",  # type: ignore[attr-defined]
                    op,
                )
