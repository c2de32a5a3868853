"""The built-in plugin: contributes tilec's own passes, the core tir passes and the gir layout
passes and analyses, from one place.

The plugin host registers this module first, as an ordinary plugin (`BUILTIN_PLUGINS`). The list
order does not decide the pipeline order: the passes' declared relations do (inline, canonicalize,
combine-dot-add, licm, cse, dce; assign-layouts, remove-layout-conversions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilec.plugin.hookspecs import hookimpl

if TYPE_CHECKING:
    from tilec.passes.base import Pass


@hookimpl
def tilec_passes() -> list[type[Pass]]:
    """The core tir passes, and the gir layout passes and analyses."""
    # deferred: the pass modules load when a pipeline is built, not on a compile-cache hit
    from tilec.layout.accelerate_matmul import AccelerateMatmul
    from tilec.layout.assign_layouts import AssignLayouts
    from tilec.layout.axis_info import AxisInfoAnalysis
    from tilec.layout.fuse_nested_loops import FuseNestedLoops
    from tilec.layout.pipeline_loops import PipelineLoops
    from tilec.layout.print_axis_info import PrintAxisInfo
    from tilec.layout.remove_layout_conversions import RemoveLayoutConversions
    from tilec.layout.warp_specialize import WarpSpecialize
    from tilec.passes.canonicalize import Canonicalize
    from tilec.passes.combine_dot_add import CombineDotAdd
    from tilec.passes.common_subexpression_elimination import CommonSubexpressionElimination
    from tilec.passes.dead_code_elimination import DeadCodeElimination
    from tilec.passes.inline import Inline
    from tilec.passes.loop_invariant_code_motion import LoopInvariantCodeMotion

    return [
        Canonicalize,
        CombineDotAdd,
        CommonSubexpressionElimination,
        DeadCodeElimination,
        FuseNestedLoops,
        LoopInvariantCodeMotion,
        Inline,
        AxisInfoAnalysis,
        AssignLayouts,
        AccelerateMatmul,
        RemoveLayoutConversions,
        PipelineLoops,
        WarpSpecialize,
        PrintAxisInfo,
    ]
