"""DOT text of a pipeline graph (`tilec passes --dot`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilec.passes.base import STAGES

if TYPE_CHECKING:
    import networkx as nx


def to_dot(graph: nx.DiGraph, *, stage_edges: bool = False) -> str:
    """DOT text of a pipeline graph: one cluster per stage, edges labelled by relation.

    Stage-order edges (every pass of a stage to every pass of the next) are left out unless
    `stage_edges`: the clusters already show them.
    """
    lines = ["digraph pipeline {", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
    for stage in STAGES:
        members = [n for n in graph if graph.nodes[n].get("stage") == stage]
        if not members:
            continue
        lines.append(f"  subgraph cluster_{stage} {{")
        lines.append(f'    label="{stage}";')
        for name in members:
            origin = graph.nodes[name].get("origin", "")
            label = f"{name}\\n({_dot_escape(origin)})" if origin else name
            lines.append(f'    {_dot_id(name)} [label="{label}"];')
        lines.append("  }")
    for src, dst, data in graph.edges(data=True):
        kinds = [k for k in data.get("kinds", []) if stage_edges or k != "stage"]
        if not kinds:
            continue
        style = ", style=dashed" if kinds == ["stage"] else ""
        lines.append(f'  {_dot_id(src)} -> {_dot_id(dst)} [label="{",".join(kinds)}"{style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _dot_id(name: str) -> str:
    return f'"{_dot_escape(name)}"'


__all__ = ["to_dot"]
