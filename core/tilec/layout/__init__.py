"""Layouts: the backend's `LayoutRules`, the thread -> element mapping, and layout assignment."""

from tilec.layout.mapping import ThreadMapping, thread_mapping
from tilec.layout.rules import GpuTarget, LayoutRules

__all__ = ["GpuTarget", "LayoutRules", "ThreadMapping", "thread_mapping"]
