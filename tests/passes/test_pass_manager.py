"""The pass manager: DAG ordering, errors, analyses, verification and instrumentation.

The passes here are defined in this file, so these tests do not depend on the core passes.
"""

from __future__ import annotations

import io
import re

import attrs
import networkx as nx
import pytest

import tilec.dialects  # noqa: F401  (registers the ops the parser needs)
from tilec.ir import parse_module, print_module
from tilec.passes.base import Analysis, ModulePass, Pass
from tilec.passes.instrumentation import PassInstrumentation, PassTiming, PrintIRAfter
from tilec.passes.manager import (
    PassManager,
    PassVerifyError,
    PipelineError,
    parse_pipeline,
    pass_origin,
    to_dot,
)
from tilec.passes.options import pass_option
from tilec.pipeline import backend_stages, other_backend_origins, plugin_pass_manager

SOURCE = """\
func.func @k(%x: i32) -> i32 {
  %c = arith.constant {value = 1 : i32} : i32
  %y = arith.addi %x, %c : i32
  %z = arith.addi %y, %c : i32
  tile.return %y
}
"""


def module():
    return parse_module(SOURCE, "test.tir")


def make_pass(
    name: str,
    *,
    stage: str = "tir",
    requires: tuple[str, ...] = (),
    after: tuple[str, ...] = (),
    before: tuple[str, ...] = (),
    invalidates: tuple[str, ...] = ("*",),
    default_pipeline: bool = True,
    changes: bool = False,
    log: list[str] | None = None,
) -> type[Pass]:
    """A transform that records its run in `log` and reports `changes`."""

    def run(self, module, context) -> bool:
        if log is not None:
            log.append(name)
        return changes

    return type(
        f"Pass_{name.replace('-', '_')}",
        (ModulePass,),
        {
            "name": name,
            "stage": stage,
            "requires": requires,
            "after": after,
            "before": before,
            "invalidates": invalidates,
            "default_pipeline": default_pipeline,
            "run": run,
        },
    )


def manager(*classes: type[Pass], **kwargs) -> PassManager:
    return PassManager.from_classes(classes, **kwargs)


def names(classes: list[type[Pass]]) -> list[str]:
    return [cls.name for cls in classes]


# Ordering ---------------------------------------------------------------------------------------


def test_default_pipeline_uses_registration_order_without_relations():
    pm = manager(make_pass("b"), make_pass("a"), make_pass("c"))
    assert names(pm.pipeline()) == ["b", "a", "c"]


def test_relations_order_passes():
    pm = manager(
        make_pass("late", after=("middle",)),
        make_pass("middle", requires=("early",)),
        make_pass("first", before=("early",)),
        make_pass("early"),
    )
    assert names(pm.pipeline()) == ["first", "early", "middle", "late"]


def test_requested_order_breaks_ties():
    pm = manager(make_pass("cse"), make_pass("dce"), make_pass("licm"))
    assert names(pm.pipeline(["dce", "cse"])) == ["dce", "cse"]
    assert names(pm.pipeline(["cse", "dce"])) == ["cse", "dce"]


def test_relations_override_requested_order():
    pm = manager(make_pass("cse", after=("dce",)), make_pass("dce"))
    assert names(pm.pipeline(["cse", "dce"])) == ["dce", "cse"]


def test_stage_order_wins_over_registration_and_request():
    pm = manager(
        make_pass("lower", stage="llir"),
        make_pass("layout", stage="gir"),
        make_pass("simplify", stage="tir"),
    )
    assert names(pm.pipeline()) == ["simplify", "layout", "lower"]
    assert names(pm.pipeline(["lower", "simplify"])) == ["simplify", "lower"]
    assert names(pm.pipeline(stages=("gir", "llir"))) == ["layout", "lower"]


def test_order_is_deterministic():
    classes = [
        make_pass(f"p{i}", after=(f"p{i - 3}",) if i >= 3 else (), stage="tir" if i < 6 else "gir")
        for i in range(12)
    ]
    first = names(manager(*classes).pipeline())
    for _ in range(5):
        assert names(manager(*classes).pipeline()) == first


def test_after_and_before_ignore_passes_outside_the_pipeline():
    pm = manager(make_pass("a", after=("b",)), make_pass("b", before=("c",)), make_pass("c"))
    assert names(pm.pipeline(["c", "a"])) == ["c", "a"]


def test_required_transform_is_pulled_in():
    pm = manager(
        make_pass("user", requires=("prep",)),
        make_pass("prep", requires=("prep0",), default_pipeline=False),
        make_pass("prep0", default_pipeline=False),
        make_pass("other"),
    )
    assert names(pm.pipeline(["user"])) == ["prep0", "prep", "user"]
    assert names(pm.pipeline()) == ["prep0", "prep", "user", "other"]
    # A pulled-in pass takes the position of the pass that needs it, not the end of the list.
    assert names(pm.pipeline(["user", "other"])) == ["prep0", "prep", "user", "other"]


class Counted(Analysis):
    name = "counted"
    computations = 0

    def analyze(self, module, context):
        type(self).computations += 1
        return type(self).computations


def test_required_analysis_is_not_a_pipeline_node():
    pm = manager(make_pass("user", requires=("counted",)), Counted)
    assert names(pm.pipeline()) == ["user"]
    assert names(pm.pipeline(["counted", "user"])) == ["counted", "user"]


def test_graph_records_relations_stage_and_origin():
    pm = manager(make_pass("a"), make_pass("b", requires=("a",)), make_pass("g", stage="gir"))
    graph = pm.graph()
    assert graph.edges["a", "b"]["kinds"] == ["requires"]
    assert graph.edges["a", "b"]["reasons"] == ["'b' requires 'a'"]
    assert graph.nodes["g"]["stage"] == "gir"
    assert graph.nodes["a"]["origin"] == __name__.split(".")[0]
    assert graph.has_edge("b", "g") and graph.edges["b", "g"]["kinds"] == ["stage"]


def test_to_dot_writes_clusters_and_relation_edges():
    pm = manager(make_pass("a"), make_pass("b", after=("a",)), make_pass("g", stage="gir"))
    dot = to_dot(pm.graph())
    assert dot.startswith("digraph pipeline {")
    assert "subgraph cluster_tir {" in dot and "subgraph cluster_gir {" in dot
    assert '"a" -> "b" [label="after"];' in dot
    assert '"b" -> "g"' not in dot
    assert '"b" -> "g" [label="stage", style=dashed];' in to_dot(pm.graph(), stage_edges=True)
    assert dot.rstrip().endswith("}")


# Errors -----------------------------------------------------------------------------------------


def test_cycle_is_named_in_order():
    pm = manager(
        make_pass("a", after=("c",)),
        make_pass("b", after=("a",)),
        make_pass("c", after=("b",)),
        make_pass("d"),
    )
    with pytest.raises(PipelineError) as info:
        pm.pipeline()
    first_line = str(info.value).splitlines()[0]
    assert first_line == "pass ordering cycle: a -> b -> c -> a"
    assert "'b' runs after 'a'" in str(info.value)


def test_cycle_against_stage_order_is_reported():
    pm = manager(make_pass("t", after=("g",)), make_pass("g", stage="gir"))
    with pytest.raises(PipelineError, match=r"pass ordering cycle: t -> g -> t") as info:
        pm.pipeline()
    assert "tir passes run before gir passes" in str(info.value)


def test_self_cycle():
    pm = manager(make_pass("a", requires=("a",)))
    with pytest.raises(PipelineError, match=r"pass ordering cycle: a -> a"):
        pm.pipeline()


def test_unknown_requested_pass_suggests_close_matches():
    pm = manager(make_pass("cse"), make_pass("dce"), make_pass("canonicalize"))
    with pytest.raises(PipelineError) as info:
        pm.pipeline(["canonicalise"])
    message = str(info.value)
    assert "unknown pass 'canonicalise' in the requested pipeline" in message
    assert "did you mean 'canonicalize'?" in message


def test_unknown_pass_in_relation_names_the_referrer():
    pm = manager(make_pass("licm", requires=("cannonicalize",)), make_pass("canonicalize"))
    with pytest.raises(PipelineError) as info:
        pm.pipeline(["licm"])
    assert "unknown pass 'cannonicalize' in 'requires' of pass 'licm'" in str(info.value)
    assert "'canonicalize'" in str(info.value)


@pytest.mark.parametrize("relation", ["after", "before", "invalidates"])
def test_unknown_names_in_other_relations_are_errors(relation):
    pm = manager(make_pass("a", **{relation: ("nowhere",)}))
    with pytest.raises(PipelineError, match=rf"unknown pass 'nowhere' in '{relation}' of pass 'a'"):
        pm.pipeline()


def test_unknown_pass_without_close_match_points_to_the_list():
    pm = manager(make_pass("cse"))
    with pytest.raises(PipelineError, match="tilec passes --all"):
        pm.pipeline(["vectorize-everything"])


def test_duplicate_request_and_duplicate_registration_are_errors():
    pm = manager(make_pass("cse"))
    with pytest.raises(PipelineError, match="requested twice"):
        pm.pipeline(["cse", "cse"])
    with pytest.raises(PipelineError, match="registered twice"):
        manager(make_pass("cse"), make_pass("cse"))


def test_unknown_stage_is_an_error():
    with pytest.raises(PipelineError, match="unknown stage 'ptx'"):
        manager(make_pass("emit", stage="ptx"))
    with pytest.raises(PipelineError, match="unknown stage 'ptx'"):
        manager(make_pass("a")).pipeline(stages=("ptx",))


def test_parse_pipeline_with_options():
    assert parse_pipeline("cse, licm{max-depth=2,hoist=true,mode=fast},dce") == [
        ("cse", {}),
        ("licm", {"max-depth": "2", "hoist": "true", "mode": "fast"}),
        ("dce", {}),
    ]
    assert parse_pipeline("") == []
    for bad in ("cse,", "licm{depth}", "licm{depth=1", "a b"):
        with pytest.raises(PipelineError):
            parse_pipeline(bad)


# Running ----------------------------------------------------------------------------------------


def test_run_follows_the_pipeline_and_reports_change():
    log: list[str] = []
    pm = manager(make_pass("a", log=log), make_pass("b", log=log, changes=True, after=("a",)))
    assert pm.run(module(), ["b", "a"]) is True
    assert log == ["a", "b"]
    assert pm.run(module(), ["a"]) is False


def test_run_passes_typed_options_to_instances():
    seen = []

    class WithOptions(ModulePass):
        name = "with-options"

        @attrs.frozen
        class Options:
            depth: int = pass_option(1)
            mode: str = pass_option("slow")

        def run(self, module, context) -> bool:
            seen.append(self.options)
            return False

    pm = manager(WithOptions)
    pm.run(module(), ["with-options"], options={"with-options": {"depth": "3"}})
    pm.run(module(), ["with-options"], options={"with-options": {"depth": 4, "mode": "fast"}})
    pm.run(module(), ["with-options"])
    assert seen == [
        WithOptions.Options(depth=3),
        WithOptions.Options(depth=4, mode="fast"),
        WithOptions.Options(),
    ]
    with pytest.raises(PipelineError, match="not in the pipeline"):
        pm.run(module(), [], options={"with-options": {"depth": 3}})


def test_a_bad_option_fails_before_any_pass_runs():
    log: list[str] = []

    class Bounded(ModulePass):
        name = "bounded"
        after = ("a",)

        @attrs.frozen
        class Options:
            depth: int = pass_option(1, minimum=1)

    pm = manager(make_pass("a", log=log), Bounded)
    message = "pass 'bounded' has no option 'detph'; valid options: depth: int = 1"
    with pytest.raises(PipelineError, match=re.escape(message)):
        pm.run(module(), ["a", "bounded"], options={"bounded": {"detph": "2"}})
    with pytest.raises(PipelineError, match="option 'depth' expects int, got 'deep'"):
        pm.run(module(), ["a", "bounded"], options={"bounded": {"depth": "deep"}})
    with pytest.raises(PipelineError, match="option 'depth' must be at least 1, got 0"):
        pm.run(module(), ["a", "bounded"], options={"bounded": {"depth": 0}})
    assert log == []


def test_a_pass_with_an_unusable_options_class_is_rejected():
    class Listy(ModulePass):
        name = "listy"

        @attrs.frozen
        class Options:
            names: list = attrs.field(factory=list)

    with pytest.raises(PipelineError, match="option 'names' must have a default and one of"):
        manager(Listy)


def test_pass_must_return_a_bool():
    class Forgetful(ModulePass):
        name = "forgetful"

        def run(self, module, context):
            return None

    with pytest.raises(TypeError, match="pass 'forgetful' returned None"):
        manager(Forgetful).run(module(), ["forgetful"])


def test_analyses_are_cached_and_invalidated_per_invalidates():
    class Facts(Analysis):
        name = "facts"
        computations = 0

        def analyze(self, module, context):
            type(self).computations += 1
            return type(self).computations

    class Other(Analysis):
        name = "other"
        computations = 0

        def analyze(self, module, context):
            type(self).computations += 1
            return type(self).computations

    results: list[tuple[str, int, int]] = []

    def user(name: str, changes: bool, invalidates: tuple[str, ...]) -> type[Pass]:
        def run(self, module, context) -> bool:
            results.append((name, context.get_analysis("facts"), context.get_analysis("other")))
            return changes

        return type(
            name,
            (ModulePass,),
            {"name": name, "requires": ("facts",), "invalidates": invalidates, "run": run},
        )

    pm = manager(
        Facts,
        Other,
        user("u1", changes=False, invalidates=("*",)),  # no change: nothing invalidated
        user("u2", changes=True, invalidates=()),  # preserves all
        user("u3", changes=True, invalidates=("facts",)),  # drops facts only
        user("u4", changes=True, invalidates=("*",)),  # drops everything
        user("u5", changes=False, invalidates=("*",)),
    )
    pm.run(module(), ["u1", "u2", "u3", "u4", "u5"])
    assert results == [
        ("u1", 1, 1),
        ("u2", 1, 1),
        ("u3", 1, 1),
        ("u4", 2, 1),
        ("u5", 3, 2),
    ]
    assert Facts.computations == 3 and Other.computations == 2


class EraseReturn(ModulePass):
    """Breaks the IR: removes the function's terminator."""

    name = "erase-return"

    def run(self, module, context) -> bool:
        for op in list(module.walk()):
            if op.name == "tile.return":
                op.erase()
        return True


def test_verify_after_each_names_the_pass_that_broke_the_ir():
    log: list[str] = []
    pm = manager(EraseReturn, make_pass("after-it", after=("erase-return",), log=log))
    with pytest.raises(PassVerifyError) as info:
        pm.run(module(), ["erase-return", "after-it"])
    assert info.value.pass_name == "erase-return"
    assert str(info.value).startswith("pass 'erase-return' produced invalid IR:")
    assert "terminator" in info.value.diagnostic
    assert log == []
    assert manager(EraseReturn, verify_each=False).run(module(), ["erase-return"]) is True


def test_exception_in_a_pass_is_annotated_with_its_name():
    class Crashes(ModulePass):
        name = "crashes"

        def run(self, module, context) -> bool:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom") as info:
        manager(Crashes).run(module(), ["crashes"])
    assert "while running pass 'crashes'" in getattr(info.value, "__notes__", [])


# Instrumentation --------------------------------------------------------------------------------


def test_instrumentation_hooks_run_in_order():
    events: list[str] = []

    class Recorder(PassInstrumentation):
        def __init__(self, tag: str):
            self.tag = tag

        def before_pipeline(self, passes, module):
            events.append(f"{self.tag}:start:{[type(p).name for p in passes]}")

        def before_pass(self, pass_, module):
            events.append(f"{self.tag}:before:{type(pass_).name}")

        def after_pass(self, pass_, module, changed, seconds):
            events.append(f"{self.tag}:after:{type(pass_).name}:{changed}")

        def after_verify(self, pass_, module, seconds):
            events.append(f"{self.tag}:verified:{type(pass_).name}")

        def after_pipeline(self, module, changed):
            events.append(f"{self.tag}:end:{changed}")

    pm = manager(make_pass("a", changes=True))
    pm.run(module(), ["a"], instrumentations=[Recorder("1"), Recorder("2")])
    assert events == [
        "1:start:['a']",
        "2:start:['a']",
        "1:before:a",
        "2:before:a",
        "2:after:a:True",
        "1:after:a:True",
        "2:verified:a",
        "1:verified:a",
        "1:end:True",
        "2:end:True",
    ]


def test_print_after_all_and_print_after_name():
    pm = manager(make_pass("a"), make_pass("b"))
    stream = io.StringIO()
    pm.run(module(), ["a", "b"], instrumentations=[PrintIRAfter(stream)])
    text = stream.getvalue()
    expected_ir = print_module(module())
    assert text == (
        "// -----// IR Dump After a //----- //\n"
        + expected_ir
        + "\n// -----// IR Dump After b //----- //\n"
        + expected_ir
        + "\n"
    )
    stream = io.StringIO()
    pm.run(module(), ["a", "b"], instrumentations=[PrintIRAfter(stream, {"b"})])
    assert "After a " not in stream.getvalue()
    assert stream.getvalue().startswith("// -----// IR Dump After b //----- //\n")


def test_print_after_shows_the_ir_a_pass_broke():
    stream = io.StringIO()
    with pytest.raises(PassVerifyError):
        manager(EraseReturn).run(module(), instrumentations=[PrintIRAfter(stream)])
    assert "IR Dump After erase-return" in stream.getvalue()
    assert "tile.return" not in stream.getvalue()


def test_timing_report_lists_each_pass_changed_and_total():
    pm = manager(make_pass("first-pass", changes=True), make_pass("second", after=("first-pass",)))
    timing = PassTiming()
    pm.run(module(), instrumentations=[timing])
    assert [(r.name, r.changed) for r in timing.rows] == [("first-pass", True), ("second", False)]
    report = timing.report()
    lines = report.splitlines()
    assert "Total Execution Time:" in report
    header = next(line for line in lines if "----Wall Time----" in line)
    assert "--Changed--" in header and "----Name----" in header
    rows = lines[lines.index(header) + 1 :]
    assert [row.split()[-1] for row in rows] == ["first-pass", "second", "(verifier)", "Total"]
    assert re.fullmatch(r"  +\d+\.\d{4} \( *\d+\.\d%\)  yes +first-pass", rows[0])
    assert re.fullmatch(r"  +\d+\.\d{4} \( *\d+\.\d%\)  no +second", rows[1])
    assert re.fullmatch(r"  +\d+\.\d{4} \(100\.0%\) +Total", rows[-1])
    # The name column is aligned.
    assert len({row.index(row.split()[-1]) for row in rows}) == 1
    assert timing.total_seconds == pytest.approx(
        sum(r.seconds for r in timing.rows) + timing.verify_seconds
    )


def test_timing_without_verifier_has_no_verifier_row():
    timing = PassTiming()
    manager(make_pass("a"), verify_each=False).run(module(), instrumentations=[timing])
    assert "(verifier)" not in timing.report()


def test_graph_is_a_networkx_digraph():
    assert isinstance(manager(make_pass("a")).graph(), nx.DiGraph)


# Backends ---------------------------------------------------------------------------------------


class FakeBackend:
    def __init__(self, added: tuple[str, ...] | None):
        self.added = added

    def parse_options(self):
        return None

    def add_stages(self, stages, options):
        if self.added is None:
            raise NotImplementedError
        stages.update(dict.fromkeys(self.added))


def test_backend_stages():
    assert backend_stages(FakeBackend(("gir", "llir", "ptx", "cubin"))) == ("tir", "gir", "llir")
    assert backend_stages(FakeBackend(())) == ("tir",)
    assert backend_stages(FakeBackend(None)) == ("tir",)
    declared = FakeBackend(None)
    declared.pass_stages = ("tir", "gir")
    assert backend_stages(declared) == ("tir", "gir")


def test_other_backends_passes_stay_out_of_a_backends_default_pipeline():
    amd = type("Amd", (FakeBackend,), {"__module__": "tilec_amd.backend"})(("gir",))
    nvidia = type("Nvidia", (FakeBackend,), {"__module__": "tilec_nvidia.backend"})(("gir",))
    backends = {"amd": amd, "nvidia": nvidia}
    assert other_backend_origins(amd, backends) == {"tilec_nvidia"}
    assert other_backend_origins(None, backends) == {"tilec_amd", "tilec_nvidia"}
    nv_pass = make_pass("nv-only", stage="gir")
    nv_pass.origin = "tilec_nvidia"
    pm = manager(make_pass("core-pass"), nv_pass)
    assert names(pm.pipeline(skip_origins=other_backend_origins(amd, backends))) == ["core-pass"]
    assert names(pm.pipeline(skip_origins=other_backend_origins(nvidia, backends))) == [
        "core-pass",
        "nv-only",
    ]
    # Named explicitly, a pass runs whoever provides it.
    assert names(pm.pipeline(["nv-only"], skip_origins={"tilec_nvidia"})) == ["nv-only"]


# The real passes ----------------------------------------------------------------------------


def core_pass_classes() -> list[type[Pass]]:
    return [cls for cls in plugin_pass_manager().registry.values() if pass_origin(cls) == "tilec"]


def test_core_default_pipeline_order():
    pm = PassManager.from_classes(core_pass_classes())
    assert names(pm.pipeline(stages=("tir",))) == [
        "inline",
        "canonicalize",
        "combine-dot-add",
        "licm",
        "cse",
        "dce",
    ]


def test_default_pipeline_with_plugins_respects_every_relation():
    pm = plugin_pass_manager()
    order = names(pm.pipeline(stages=("tir",)))
    assert order == names(plugin_pass_manager().pipeline(stages=("tir",)))
    for cls in pm.pipeline(stages=("tir",)):
        for other in (*cls.requires, *cls.after):
            if other in order:
                assert order.index(other) < order.index(cls.name)
        for other in cls.before:
            if other in order:
                assert order.index(cls.name) < order.index(other)


# Remembered orders ------------------------------------------------------------------------------


def test_resolved_order_is_remembered_on_disk_and_keyed_by_relations(tmp_path, monkeypatch):
    from tilec.passes import resolved_orders

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(resolved_orders, "remembered", {})
    first = manager(make_pass("b", after=("a",)), make_pass("a"))
    assert names(first.pipeline()) == ["a", "b"]
    assert len(list((tmp_path / "pipelines").glob("*.json"))) == 1

    # A new process (empty memo) reads the order back without sorting the relations again.
    monkeypatch.setattr(resolved_orders, "remembered", {})

    def no_graph(*args, **kwargs):
        raise AssertionError("the graph was built again")

    monkeypatch.setattr(PassManager, "_relations", no_graph)
    again = manager(make_pass("b", after=("a",)), make_pass("a"))
    assert names(again.pipeline()) == ["a", "b"]
    # Other relations are another key: resolved again (here: the relations are sorted).
    changed = manager(make_pass("b"), make_pass("a", after=("b",)))
    with pytest.raises(AssertionError, match="built again"):
        changed.pipeline()


def test_corrupt_remembered_order_is_resolved_again(tmp_path, monkeypatch):
    from tilec.passes import resolved_orders

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(resolved_orders, "remembered", {})
    pm = manager(make_pass("b", after=("a",)), make_pass("a"))
    pm.pipeline()
    (entry,) = (tmp_path / "pipelines").glob("*.json")
    entry.write_text('["a", ')
    monkeypatch.setattr(resolved_orders, "remembered", {})
    assert names(pm.pipeline()) == ["a", "b"]
    assert entry.read_text().endswith('\n["a", "b"]')
