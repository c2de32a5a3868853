"""The pass manager: a pipeline is one dependency DAG, ordered deterministically, then run.

Every pass of a pipeline (core, backend and third-party) is a node of one `networkx.DiGraph`.
Edges come from the declared relations and from stage order:

- `requires`: the required pass runs first; a required transform that is not in the pipeline is
  pulled in. A required analysis is not a node (it is computed on demand by
  `PassContext.get_analysis`) unless the pipeline names it explicitly.
- `after` / `before`: ordering only, ignored when the other pass is not in the pipeline.
- stage order: every tir pass runs before every gir pass, which run before every llir pass.

Names unknown to the registry are errors (with close matches), wherever they appear. A cycle is an
error that names it. Among the orders the DAG allows, the pass manager picks the lexicographically
smallest by (stage, position in the requested list or registration order, name), so the same
registrations and request always give the same order, and `--passes cse,dce` runs cse first unless
the declared relations say otherwise.

Resolving a pipeline sorts the relations itself (`_sorted`); networkx, which takes long to import
(a hundred milliseconds and more), builds `graph` only (`tilec passes --dot`, a cycle's message).
Resolved orders are remembered per process and on disk (`$TILEC_CACHE_DIR/pipelines/`,
`tilec.passes.resolved_orders`), keyed by every registered pass's declared relations and the
request, so a new process whose pipeline was resolved before does not sort again.

The pass manager gets its pass classes from its caller: the compile pipeline (`tilec.pipeline`)
and `tilec opt` hand it the classes the plugin host collected.
"""

from __future__ import annotations

import difflib
import hashlib
import heapq
import itertools
import re
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tilec.ir import Diagnostic, verify
from tilec.ir.core import Operation
from tilec.passes import resolved_orders
from tilec.passes.base import ALL_ANALYSES, STAGES, Analysis, Pass, PassContext, PipelineError
from tilec.passes.dot import to_dot
from tilec.passes.instrumentation import PassInstrumentation
from tilec.passes.options import PassOptionError, check_options_class

if TYPE_CHECKING:
    import networkx as nx


class PassVerifyError(Exception):
    """A pass left the IR invalid. `pass_name` names it; `diagnostic` is the verifier's text."""

    def __init__(self, pass_name: str, diagnostic: str):
        super().__init__(f"pass '{pass_name}' produced invalid IR:\n{diagnostic}")
        self.pass_name = pass_name
        self.diagnostic = diagnostic


def pass_origin(cls: type[Pass]) -> str:
    """Who provides a pass: its `origin` attribute if set, else its top-level package."""
    origin = getattr(cls, "origin", None)
    if isinstance(origin, str) and origin:
        return origin
    return cls.__module__.split(".", 1)[0]


def parse_pipeline(text: str) -> list[tuple[str, dict[str, str]]]:
    """Split `'canonicalize,licm{max-depth=2,hoist-loads=true},cse'` into names and options.

    Option values stay text: each pass converts and checks them against its typed `Options` when
    the pipeline runs (`tilec.passes.options`).
    """
    entries: list[tuple[str, dict[str, str]]] = []
    pos = 0
    while text.strip():
        match = _PIPELINE_ENTRY.match(text, pos)
        if match is None:
            raise PipelineError(
                f"cannot read pass pipeline '{text}' at column {pos + 1}: expected a pass name "
                "or 'name{key=value,...}'"
            )
        entries.append((match[1], _parse_options(match[1], match[2] or "")))
        if not match[3]:
            break
        pos = match.end()
    return entries


_PIPELINE_ENTRY = re.compile(r"\s*([^,{}\s]+)\s*(?:\{([^{}]*)\})?\s*(,|$)")


def _parse_options(pass_name: str, text: str) -> dict[str, str]:
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise PipelineError(f"option '{item}' of pass '{pass_name}' must look like key=value")
        options[key.strip()] = value.strip()
    return options


class PassManager:
    """Builds and runs pipelines from a registry of pass classes (name -> class, in
    registration order)."""

    def __init__(self, pass_classes: Mapping[str, type[Pass]], *, verify_each: bool = True):
        self.registry: dict[str, type[Pass]] = dict(pass_classes)
        self.verify_each = verify_each
        self._registration = {name: index for index, name in enumerate(self.registry)}
        for name, cls in self.registry.items():
            if cls.stage not in STAGES:
                raise PipelineError(
                    f"pass '{name}' declares unknown stage '{cls.stage}' (stages: {', '.join(STAGES)})"
                )
            try:
                check_options_class(name, cls.Options)
            except PassOptionError as error:
                raise PipelineError(str(error)) from None

    @classmethod
    def from_classes(cls, pass_classes: Iterable[type[Pass]], **kwargs: Any) -> PassManager:
        """A pass manager over `pass_classes`, keyed by their `name`; duplicate names are errors."""
        registry: dict[str, type[Pass]] = {}
        for pass_class in pass_classes:
            other = registry.get(pass_class.name)
            if other is not None and other is not pass_class:
                raise PipelineError(
                    f"pass name '{pass_class.name}' is registered twice: by "
                    f"{other.__module__}.{other.__qualname__} and "
                    f"{pass_class.__module__}.{pass_class.__qualname__}"
                )
            registry[pass_class.name] = pass_class
        return cls(registry, **kwargs)

    # Building --------------------------------------------------------------------------------

    def graph(
        self,
        names: Sequence[str] | None = None,
        stages: Sequence[str] = STAGES,
        *,
        skip_origins: Collection[str] = (),
    ) -> nx.DiGraph:
        """The pipeline's DAG (it may hold a cycle; `pipeline` rejects those).

        `names=None` selects the default pipeline of `stages`: the registered transforms with
        `default_pipeline = True`, except those whose origin is in `skip_origins` (another
        backend's passes). Explicitly named and required passes are used whatever their stage.
        Nodes carry `cls`, `stage`, `origin`, `requested` and `key` (the sort key); edges carry
        `kinds` (requires / after / before / stage) and `reasons` (readable sentences).
        """
        keys, requested, edges = self._relations(names, stages, skip_origins)
        import networkx as nx  # deferred: slow to import; needed for the graph itself only

        graph = nx.DiGraph()
        for name, key in keys.items():
            cls = self.registry[name]
            graph.add_node(
                name,
                cls=cls,
                stage=cls.stage,
                origin=pass_origin(cls),
                requested=name in requested,
                key=key,
            )
        for (src, dst), (kinds, reasons) in edges.items():
            graph.add_edge(src, dst, kinds=kinds, reasons=reasons)
        return graph

    def _relations(
        self, names: Sequence[str] | None, stages: Sequence[str], skip_origins: Collection[str]
    ) -> tuple[dict[str, tuple], set[str], dict[tuple[str, str], tuple[list[str], list[str]]]]:
        """What `graph` is made of: the pipeline's passes with their sort keys (in key order),
        the requested ones, and the edges `(src, dst) -> (kinds, reasons)` in the order the
        relations add them: each pass's requires, after and before, then the stage order."""
        positions, requested = self._select(names, stages, skip_origins)
        keys = {
            name: (
                STAGES.index(self.registry[name].stage),
                positions[name],
                self._registration[name],
                name,
            )
            for name in positions
        }
        keys = dict(sorted(keys.items(), key=lambda item: item[1]))
        edges: dict[tuple[str, str], tuple[list[str], list[str]]] = {}

        def add(src: str, dst: str, kind: str, reason: str) -> None:
            kinds, reasons = edges.setdefault((src, dst), ([], []))
            kinds.append(kind)
            reasons.append(reason)

        for name in keys:
            cls = self.registry[name]
            for other in cls.requires:
                if other in keys:
                    add(other, name, "requires", f"'{name}' requires '{other}'")
            for other in cls.after:
                if other in keys:
                    add(other, name, "after", f"'{name}' runs after '{other}'")
            for other in cls.before:
                if other in keys:
                    add(name, other, "before", f"'{name}' runs before '{other}'")
        groups = [[n for n in keys if self.registry[n].stage == stage] for stage in STAGES]
        for earlier, later in itertools.pairwise([group for group in groups if group]):
            for src in earlier:
                for dst in later:
                    stage, next_stage = self.registry[src].stage, self.registry[dst].stage
                    add(src, dst, "stage", f"{stage} passes run before {next_stage} passes")
        return keys, set(requested), edges

    def pipeline(
        self,
        names: Sequence[str] | None = None,
        stages: Sequence[str] = STAGES,
        *,
        skip_origins: Collection[str] = (),
    ) -> list[type[Pass]]:
        """The pass classes of the pipeline, in the order they run (see `graph`)."""
        request = (
            None if names is None else tuple(names),
            tuple(stages),
            tuple(sorted(skip_origins)),
        )
        key = self._memo_key(request)
        order = resolved_orders.remembered.get(key)
        if order is None:
            order = resolved_orders.read_resolved(key)
            if order is None or not set(order) <= set(self.registry):
                order = _sorted(*self._relations(names, stages, skip_origins)[::2])
                if order is None:  # a cycle: the graph names it
                    order = self.order(self.graph(names, stages, skip_origins=skip_origins))
                resolved_orders.write_resolved(key, order)
            resolved_orders.remembered[key] = order
        return [self.registry[name] for name in order]

    def _memo_key(self, request: tuple) -> str:
        """A digest of everything the order depends on: each registered pass's class, stage,
        relations and flags (in registration order), and the request."""
        parts = [repr(request)]
        for name, cls in self.registry.items():
            parts.append(
                repr((name, cls.__module__, cls.__qualname__, cls.stage, tuple(cls.requires),
                      tuple(cls.after), tuple(cls.before), tuple(cls.invalidates),
                      cls.default_pipeline, cls.is_analysis))
            )  # fmt: skip
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    @staticmethod
    def order(graph: nx.DiGraph) -> list[str]:
        """The deterministic run order of `graph`'s passes; raises PipelineError on a cycle."""
        import networkx as nx  # deferred: slow to import; needed only to resolve a new order

        if not nx.is_directed_acyclic_graph(graph):
            raise PipelineError(_describe_cycle(graph))
        return list(nx.lexicographical_topological_sort(graph, key=lambda n: graph.nodes[n]["key"]))

    def _select(
        self, names: Sequence[str] | None, stages: Sequence[str], skip_origins: Collection[str]
    ) -> tuple[dict[str, int], set[str]]:
        """The pipeline's pass names with their sort positions, and the requested ones."""
        for stage in stages:
            if stage not in STAGES:
                raise PipelineError(f"unknown stage '{stage}' (stages: {', '.join(STAGES)})")
        if names is None:
            requested = [
                name
                for name, cls in self.registry.items()
                if cls.default_pipeline
                and not cls.is_analysis
                and cls.stage in stages
                and pass_origin(cls) not in skip_origins
            ]
            positions = {name: self._registration[name] for name in requested}
        else:
            requested = list(names)
            positions = {}
            for index, name in enumerate(requested):
                self.check_known(name, "the requested pipeline")
                if name in positions:
                    raise PipelineError(
                        f"pass '{name}' is requested twice; a pipeline runs each pass once "
                        "(run the tool again to repeat a pass)"
                    )
                positions[name] = index
        self._pull_in_requirements(positions)
        return positions, set(requested)

    def _pull_in_requirements(self, positions: dict[str, int]) -> None:
        """Add required transforms, each at the earliest position of a pass that requires it,
        and check every relation of every pass involved (required analyses included)."""
        pulled: set[str] = set()
        checked: set[str] = set()
        worklist = list(positions)
        while worklist:
            name = worklist.pop(0)
            cls = self.registry[name]
            if name not in checked:
                checked.add(name)
                self._check_relations(name, cls)
            for required in cls.requires:
                if self.registry[required].is_analysis and required not in positions:
                    if required not in checked:
                        worklist.append(required)
                    continue
                if name not in positions:
                    continue
                if required not in positions:
                    pulled.add(required)
                    positions[required] = positions[name]
                    worklist.append(required)
                elif required in pulled and positions[name] < positions[required]:
                    positions[required] = positions[name]
                    worklist.append(required)

    def _check_relations(self, name: str, cls: type[Pass]) -> None:
        for relation in ("requires", "after", "before"):
            for other in getattr(cls, relation):
                self.check_known(other, f"'{relation}' of pass '{name}'")
        if tuple(cls.invalidates) != ALL_ANALYSES:
            for other in cls.invalidates:
                self.check_known(other, f"'invalidates' of pass '{name}'")

    def check_known(self, name: str, where: str) -> None:
        """Raise PipelineError if `name` is not a registered pass, naming `where` it was found
        and close matches."""
        if name in self.registry:
            return
        matches = difflib.get_close_matches(name, list(self.registry), n=3, cutoff=0.6)
        hint = (
            "did you mean " + " or ".join(f"'{m}'" for m in matches) + "?"
            if matches
            else "'tilec passes --all' lists the known passes"
        )
        raise PipelineError(f"unknown pass '{name}' in {where}; {hint}")

    # Running ---------------------------------------------------------------------------------

    def run(
        self,
        module: Operation,
        names: Sequence[str] | None = None,
        *,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        instrumentations: Sequence[PassInstrumentation] = (),
        stages: Sequence[str] = STAGES,
        skip_origins: Collection[str] = (),
        context: PassContext | None = None,
        target: Any = None,
    ) -> bool:
        """Run the pipeline of `names` (default pipeline of `stages` if None) on `module`.

        `options` maps a pass name to its options (option name -> text or value), which the
        pass's typed `Options` convert and check before any pass runs. After a pass reports a
        change, the analyses it `invalidates` are dropped; with `verify_each`, the module is
        verified after every pass (PassVerifyError names the pass). Returns whether any pass
        changed the IR.
        """
        options = dict(options or {})
        pipeline = self.pipeline(names, stages, skip_origins=skip_origins)
        unused = sorted(set(options) - {cls.name for cls in pipeline})
        if unused:
            raise PipelineError(
                f"options given for pass '{unused[0]}', which is not in the pipeline"
            )
        if context is None:
            analyses = {n: c for n, c in self.registry.items() if issubclass(c, Analysis)}
            context = PassContext(analyses, target=target)
        context.module = module
        try:
            passes = [cls(options.get(cls.name, {})) for cls in pipeline]
        except PassOptionError as error:
            raise PipelineError(str(error)) from None
        for instrumentation in instrumentations:
            instrumentation.before_pipeline(passes, module)
        any_changed = False
        for pass_ in passes:
            changed = self._run_one(pass_, module, context, instrumentations)
            any_changed = any_changed or changed
        for instrumentation in instrumentations:
            instrumentation.after_pipeline(module, any_changed)
        return any_changed

    def _run_one(
        self,
        pass_: Pass,
        module: Operation,
        context: PassContext,
        instrumentations: Sequence[PassInstrumentation],
    ) -> bool:
        name = type(pass_).name
        for instrumentation in instrumentations:
            instrumentation.before_pass(pass_, module)
        start = time.perf_counter()
        try:
            changed = pass_.run(module, context)
        except Exception as err:
            if hasattr(err, "add_note"):
                err.add_note(f"while running pass '{name}'")
            raise
        seconds = time.perf_counter() - start
        if not isinstance(changed, bool):
            raise TypeError(
                f"pass '{name}' returned {changed!r} from run(); it must return a bool "
                "(whether it changed the IR)"
            )
        if changed:
            context.invalidate(tuple(type(pass_).invalidates))
        for instrumentation in reversed(instrumentations):
            instrumentation.after_pass(pass_, module, changed, seconds)
        if self.verify_each:
            start = time.perf_counter()
            try:
                verify(module)
            except Diagnostic as diag:
                raise PassVerifyError(name, str(diag)) from None
            seconds = time.perf_counter() - start
            for instrumentation in reversed(instrumentations):
                instrumentation.after_verify(pass_, module, seconds)
        return changed


def _sorted(keys: dict[str, tuple], edges: Iterable[tuple[str, str]]) -> list[str] | None:
    """The lexicographically smallest topological order of the passes `keys` under `edges` (by
    their keys: networkx's `lexicographical_topological_sort`, without importing networkx), or
    None where the edges hold a cycle."""
    successors: dict[str, list[str]] = {name: [] for name in keys}
    waiting = dict.fromkeys(keys, 0)
    for src, dst in edges:
        successors[src].append(dst)
        waiting[dst] += 1
    ready = [(key, name) for name, key in keys.items() if not waiting[name]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, name = heapq.heappop(ready)
        order.append(name)
        for successor in successors[name]:
            waiting[successor] -= 1
            if not waiting[successor]:
                heapq.heappush(ready, (keys[successor], successor))
    return order if len(order) == len(keys) else None


def _describe_cycle(graph: nx.DiGraph) -> str:
    """`pass ordering cycle: a -> b -> a`, starting at the cycle's smallest pass, with reasons."""
    import networkx as nx  # deferred: slow to import; needed only to resolve a new order

    edges = [(src, dst) for src, dst, *_ in nx.find_cycle(graph)]
    first = min(range(len(edges)), key=lambda i: graph.nodes[edges[i][0]]["key"])
    edges = edges[first:] + edges[:first]
    names = [src for src, _ in edges] + [edges[0][0]]
    lines = [f"pass ordering cycle: {' -> '.join(names)}"]
    for src, dst in edges:
        lines.append(f"  {src} -> {dst}: {'; '.join(graph.edges[src, dst]['reasons'])}")
    return "\n".join(lines)


__all__ = [
    "PassManager",
    "PassVerifyError",
    "PipelineError",
    "parse_pipeline",
    "pass_origin",
    "to_dot",
]
