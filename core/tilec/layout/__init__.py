"""Layouts: the backend's `LayoutRules`, the thread -> element mapping, and layout assignment."""

from tilec.layout.assignment import to_gir, verify_gir
from tilec.layout.axis_info import AxisInfo, AxisInfoResult, analyze_axis_info, axis_info
from tilec.layout.mapping import ThreadMapping, thread_mapping
from tilec.layout.rules import GpuTarget, LayoutRules, MmaInstruction

__all__ = [
    "AxisInfo",
    "AxisInfoResult",
    "GpuTarget",
    "LayoutRules",
    "MmaInstruction",
    "ThreadMapping",
    "analyze_axis_info",
    "axis_info",
    "thread_mapping",
    "to_gir",
    "verify_gir",
]
