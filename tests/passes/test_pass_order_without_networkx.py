"""A pipeline's order is resolved without networkx (issue 24: it costs a cold compile a hundred
milliseconds and more to import); it is the order networkx's lexicographical topological sort
gives, which `PassManager.graph` and `order` still use (`tilec passes --dot`, cycle messages)."""

from __future__ import annotations

import random
import sys

import networkx as nx
import pytest
from test_pass_manager import make_pass, manager

from tilec.passes import manager as pass_manager
from tilec.passes import resolved_orders
from tilec.passes.base import PipelineError


def random_classes(seed: int) -> list[type]:
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(rng.randint(2, 14))]
    classes = []
    for index, name in enumerate(names):
        earlier = names[:index]
        later = names[index + 1 :]
        classes.append(
            make_pass(
                name,
                stage=rng.choice(("tir", "tir", "gir", "llir")),
                after=tuple(rng.sample(earlier, rng.randint(0, min(2, len(earlier))))),
                before=tuple(rng.sample(later, rng.randint(0, min(2, len(later))))),
            )
        )
    rng.shuffle(classes)
    return classes


@pytest.mark.parametrize("seed", range(40))
def test_the_order_is_networkxs(seed, monkeypatch):
    pm = manager(*random_classes(seed))
    graph = pm.graph()
    if not nx.is_directed_acyclic_graph(graph):  # a stage edge against an after/before
        with pytest.raises(PipelineError, match="cycle"):
            pm.pipeline()
        return
    expected = pm.order(graph)
    monkeypatch.setattr(resolved_orders, "remembered", {})
    monkeypatch.setattr(resolved_orders, "read_resolved", lambda key: None)
    monkeypatch.setattr(resolved_orders, "write_resolved", lambda key, order: None)
    monkeypatch.setitem(sys.modules, "networkx", None)  # importing it now fails
    assert [cls.name for cls in pm.pipeline()] == expected


def test_a_requested_order_is_kept_where_the_relations_allow(monkeypatch):
    classes = [make_pass("a"), make_pass("b", after=("a",)), make_pass("c"), make_pass("d")]
    monkeypatch.setitem(sys.modules, "networkx", None)
    names = [cls.name for cls in manager(*classes).pipeline(["d", "b", "c", "a"])]
    assert names == ["d", "c", "a", "b"]


def test_sorted_finds_a_cycle():
    keys = {"a": (0, "a"), "b": (1, "b")}
    assert pass_manager._sorted(keys, [("a", "b"), ("b", "a")]) is None
    assert pass_manager._sorted(keys, [("b", "a")]) == ["b", "a"]
