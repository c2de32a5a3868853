"""The built-in plugin: contributes tilec's target-neutral passes.

The plugin manager registers this module first, as an ordinary plugin. The list order does not
decide the pipeline order: the passes' declared relations do (inline, canonicalize, licm, cse,
dce).
"""

from __future__ import annotations

from tilec.layout.assign_layouts import AssignLayouts
from tilec.layout.axis_info import AxisInfoAnalysis
from tilec.layout.print_axis_info import PrintAxisInfo
from tilec.layout.remove_layout_conversions import RemoveLayoutConversions
from tilec.passes.base import Pass
from tilec.passes.canonicalize import Canonicalize
from tilec.passes.common_subexpression_elimination import CommonSubexpressionElimination
from tilec.passes.dead_code_elimination import DeadCodeElimination
from tilec.passes.inline import Inline
from tilec.passes.loop_invariant_code_motion import LoopInvariantCodeMotion
from tilec.plugin.hookspecs import hookimpl


@hookimpl
def tilec_passes() -> list[type[Pass]]:
    """The core tir passes, and the gir layout passes and analyses."""
    return [
        Canonicalize,
        CommonSubexpressionElimination,
        DeadCodeElimination,
        LoopInvariantCodeMotion,
        Inline,
        AxisInfoAnalysis,
        AssignLayouts,
        RemoveLayoutConversions,
        PrintAxisInfo,
    ]
