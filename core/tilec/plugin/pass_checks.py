"""What the plugin host checks of the pass classes plugins contribute, before any pipeline uses
them: a plugin whose pass declares an unknown stage, a relation that is not a tuple of pass names
(`after="cse"`), a relation naming no registered pass, a relation backwards across stages, or a
cycle of relations would make every compile fail. `invalid_plugins` names such plugins and why,
so the host can disable them (with a warning) and keep the rest of the pipeline working.
"""

from __future__ import annotations

from tilec.passes.base import ALL_ANALYSES, STAGES, Pass
from tilec.passes.options import PassOptionError, check_options_class

RELATIONS = ("requires", "after", "before")


def invalid_plugins(
    classes: list[tuple[type[Pass], str]], protected: frozenset[str] = frozenset()
) -> dict[str, str]:
    """Plugin label -> why it is disabled, for the plugins whose passes (`(class, label)` pairs)
    cannot be ordered. Labels in `protected` (tilec's built-in passes) are never disabled: their
    mistakes are tilec's, reported by the pass manager. Disabling one plugin can make another's
    relation unknown: repeated until what is left is consistent."""
    invalid: dict[str, str] = {}
    while True:
        kept = [(cls, label) for cls, label in classes if label not in invalid]
        found = _first_problems(kept, protected)
        if not found:
            return invalid
        invalid.update(found)


def _first_problems(
    classes: list[tuple[type[Pass], str]], protected: frozenset[str]
) -> dict[str, str]:
    """The problems of the first kind found (declarations, then relations, then a cycle), by
    plugin label, leaving out the protected plugins."""
    by_name = {cls.name: (cls, label) for cls, label in classes}
    checks = (
        lambda: [(label, _declaration_problem(cls)) for cls, label in classes],
        lambda: [(label, _relation_problem(cls, by_name)) for cls, label in classes],
        lambda: _cycle_problems(by_name),
    )
    for check in checks:
        problems: dict[str, str] = {}
        for label, reason in check():
            if reason is not None and label not in protected:
                problems.setdefault(label, reason)
        if problems:
            return problems
    return {}


def _cycle_problems(by_name: dict[str, tuple[type[Pass], str]]) -> list[tuple[str, str]]:
    cycle = _find_cycle(_relation_edges([cls for cls, _ in by_name.values()]))
    if cycle is None:
        return []
    text = " -> ".join(f"'{name}'" for name in [*cycle, cycle[0]])
    return [(by_name[name][1], f"its passes' relations form a cycle: {text}") for name in cycle]


def _declaration_problem(cls: type[Pass]) -> str | None:
    if cls.stage not in STAGES:
        return (
            f"pass '{cls.name}' declares unknown stage {cls.stage!r} (stages: {', '.join(STAGES)})"
        )
    for relation in (*RELATIONS, "invalidates"):
        value = getattr(cls, relation)
        if relation == "invalidates" and value == ALL_ANALYSES:
            continue
        if not isinstance(value, (tuple, list)) or not all(isinstance(n, str) for n in value):
            return (
                f"pass '{cls.name}' declares {relation}={value!r}: it must be a tuple of pass "
                f"names, e.g. {relation}=({value!r},)"
            )
    try:
        check_options_class(cls.name, cls.Options)
    except PassOptionError as error:
        return str(error)
    return None


def _relation_problem(cls: type[Pass], by_name: dict[str, tuple[type[Pass], str]]) -> str | None:
    for relation in RELATIONS:
        for other in getattr(cls, relation):
            if other not in by_name:
                return f"pass '{cls.name}' names unknown pass '{other}' in '{relation}'"
            if relation == "requires" and by_name[other][0].is_analysis:
                continue  # computed on demand, whatever its stage
            other_stage = STAGES.index(by_name[other][0].stage)
            own_stage = STAGES.index(cls.stage)
            backwards = other_stage > own_stage if relation != "before" else other_stage < own_stage
            if backwards:
                return (
                    f"pass '{cls.name}' ({cls.stage}) declares {relation}=('{other}',) but "
                    f"'{other}' is a {by_name[other][0].stage} pass: stages run in the order "
                    f"{', '.join(STAGES)}"
                )
    return None


def _relation_edges(classes: list[type[Pass]]) -> dict[str, list[str]]:
    """Pass name -> the passes that must run after it: its own `before`, and every pass that
    `requires` it or runs `after` it."""
    graph: dict[str, list[str]] = {cls.name: list(cls.before) for cls in classes}
    for cls in classes:
        for other in (*cls.requires, *cls.after):
            graph.setdefault(other, []).append(cls.name)
    return graph


def _find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """A cycle of `graph` as a list of its nodes, or None; iterative, so that long chains do not
    overflow the stack."""
    state: dict[str, int] = {}
    for start in sorted(graph):
        if state.get(start):
            continue
        stack = [(start, iter(graph[start]))]
        path = [start]
        state[start] = 1
        while stack:
            node, successors = stack[-1]
            following = next(successors, None)
            if following is None:
                stack.pop()
                path.pop()
                state[node] = 2
                continue
            if following not in graph:
                continue
            if state.get(following) == 1:
                return path[path.index(following) :]
            if not state.get(following):
                state[following] = 1
                path.append(following)
                stack.append((following, iter(graph[following])))
    return None
