"""The pass base classes.

A pass is a small class::

    class CommonSubexpressionElimination(ModulePass):
        name = "cse"
        stage = "tir"
        after = ("canonicalize",)
        invalidates = ALL_ANALYSES

        def run(self, module, context) -> bool:
            ...  # returns True if it changed the IR

Relations (all by pass name):
- `requires`: must have run before this pass; the pass manager adds a required pass that is not in
  the pipeline. An analysis in `requires` is computed on demand through `context.get_analysis`.
- `after` / `before`: ordering only, applied when both passes are in the pipeline.
- `invalidates`: analyses whose cached results this pass makes stale when it changes the IR
  (`ALL_ANALYSES`, the default, or a tuple of names; `()` preserves all).

Analyses subclass `Analysis` and implement `analyze(module, context)`; their results are cached in
the `PassContext` until a pass that invalidates them changes the IR.

Options are typed fields of the pass's `Options` class (see `tilec.passes.options`); a pass reads
them as `self.options.max_iterations`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from tilec.ir.core import Operation
from tilec.passes.options import NoOptions, parse_pass_options

ALL_ANALYSES = ("*",)

STAGES = ("tir", "gir", "llir")
"""The IR stages passes work on, in pipeline order."""


class PipelineError(Exception):
    """A pipeline that cannot be built: an unknown pass name, a bad option, or an ordering cycle."""


class Pass:
    """Base class of transforms and analyses."""

    name: ClassVar[str] = ""
    stage: ClassVar[str] = "tir"
    description: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    after: ClassVar[tuple[str, ...]] = ()
    before: ClassVar[tuple[str, ...]] = ()
    invalidates: ClassVar[tuple[str, ...]] = ALL_ANALYSES
    is_analysis: ClassVar[bool] = False
    default_pipeline: ClassVar[bool] = True
    """Whether the pass runs in the default pipeline of its stage (`tilec passes` lists it)."""

    Options: ClassVar[type] = NoOptions
    """The frozen attrs class of the pass's options (`tilec.passes.options`)."""

    def __init__(self, options: Mapping[str, Any] | None = None):
        """`options` maps option names (`max-iterations`) to text or Python values; raises
        `PassOptionError` for an unknown option or a bad value."""
        self.options = parse_pass_options(self.name, self.Options, options or {})

    def run(self, module: Operation, context: PassContext) -> bool:
        """Transform `module` in place; return True if the IR changed."""
        raise NotImplementedError


class ModulePass(Pass):
    """A transform over a whole module."""


class Analysis(Pass):
    """Computes a result about the IR without changing it."""

    is_analysis = True
    invalidates = ()

    def analyze(self, module: Operation, context: PassContext) -> Any:
        raise NotImplementedError

    def run(self, module: Operation, context: PassContext) -> bool:
        context.get_analysis(self.name)
        return False


class PassContext:
    """What a running pass can reach: cached analyses, options, and the target (if any)."""

    def __init__(self, analyses: dict[str, type[Analysis]] | None = None, target: Any = None):
        self.analysis_classes: dict[str, type[Analysis]] = dict(analyses or {})
        self.cache: dict[str, Any] = {}
        self.target = target
        self.module: Operation | None = None

    def get_analysis(self, name: str) -> Any:
        if name not in self.cache:
            cls = self.analysis_classes.get(name)
            if cls is None:
                raise KeyError(f"unknown analysis '{name}'")
            assert self.module is not None, "get_analysis is only valid while a pipeline runs"
            self.cache[name] = cls().analyze(self.module, self)
        return self.cache[name]

    def invalidate(self, names: tuple[str, ...]) -> None:
        if names == ALL_ANALYSES:
            self.cache.clear()
        else:
            for name in names:
                self.cache.pop(name, None)
