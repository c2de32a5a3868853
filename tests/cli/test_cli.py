"""The `tilec` command: output, messages and exit codes.

Most tests call `main([...])` with the plugin host replaced by passes and backends defined here;
a few run `python -m tilec` in a subprocess to check stdin and the exit status end to end.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import attrs
import pytest

import tilec
from tilec import cli
from tilec.backend import Availability
from tilec.passes.base import ModulePass
from tilec.passes.canonicalize import Canonicalize
from tilec.passes.inline import Inline
from tilec.passes.options import pass_option

SOURCE = """\
func.func @k(%x: i32) -> i32 {
  %c = arith.constant {value = 1 : i32} : i32
  %y = arith.addi %x, %c : i32
  tile.return %y
}
"""


class Simplify(ModulePass):
    name = "simplify"

    def run(self, module, context) -> bool:
        return False


class Tidy(ModulePass):
    name = "tidy"
    after = ("simplify",)

    def run(self, module, context) -> bool:
        return False


class Layout(ModulePass):
    name = "assign-layouts"
    stage = "gir"

    def run(self, module, context) -> bool:
        return False


class BreakIR(ModulePass):
    name = "break-ir"
    default_pipeline = False

    def run(self, module, context) -> bool:
        for op in list(module.walk()):
            if op.name == "tile.return":
                op.erase()
        return True


class Looped(ModulePass):
    name = "looped"
    default_pipeline = False
    after = ("looped-too",)

    def run(self, module, context) -> bool:
        return False


class LoopedToo(ModulePass):
    name = "looped-too"
    default_pipeline = False
    after = ("looped",)

    def run(self, module, context) -> bool:
        return False


class NvidiaLowering(ModulePass):
    """A pass of the (fake) nvidia backend's package: only in nvidia's pipeline."""

    __module__ = "tilec_fakenv.passes"
    name = "nv-lower"
    stage = "llir"

    def run(self, module, context) -> bool:
        return False


class FakeBackend:
    def __init__(self, name: str, available: bool, reason: str = "", stages: tuple[str, ...] = ()):
        self.name = name
        self.available = available
        self.reason = reason
        self.stages = stages

    def is_available(self) -> Availability:
        return Availability(self.available, self.reason)

    def parse_options(self) -> dict:
        return {}

    def add_stages(self, stages: dict, options) -> None:
        for stage in self.stages:
            stages[stage] = None


def make_backend(package: str, *args) -> FakeBackend:
    """A backend whose class lives in `package`, as a plugin's would."""
    cls = type("FakeBackend", (FakeBackend,), {"__module__": f"{package}.backend"})
    return cls(*args)


@pytest.fixture(autouse=True)
def plugin_host(monkeypatch):
    """Replace the plugin host with the passes and backends above."""
    classes = [Simplify, Tidy, Layout, BreakIR, Looped, LoopedToo, NvidiaLowering]
    backends = {
        "interp": make_backend("tilec_fakeinterp", "interp", True),
        "nvidia": make_backend(
            "tilec_fakenv",
            "nvidia",
            False,
            "no CUDA driver found (libcuda.so.1)",
            ("gir", "llir", "ptx", "cubin"),
        ),
    }
    monkeypatch.setattr(cli, "load_pass_classes", lambda: list(classes))
    monkeypatch.setattr(cli, "load_backends", lambda: dict(backends))
    monkeypatch.setattr(cli, "plugin_failures", lambda: [("broken", "ImportError: no module x")])
    monkeypatch.setattr(cli, "pass_plugin_failures", lambda: [])


@pytest.fixture
def source_file(tmp_path):
    path = tmp_path / "kernel.tir"
    path.write_text(SOURCE)
    return path


# opt --------------------------------------------------------------------------------------------


def test_opt_round_trips_without_passes(source_file, capsys):
    assert cli.main(["opt", str(source_file)]) == 0
    out, err = capsys.readouterr()
    assert out == SOURCE
    assert err == ""


def test_opt_runs_passes_and_prints_after_all(source_file, capsys):
    assert (
        cli.main(["opt", str(source_file), "--passes", "tidy,simplify", "--print-after-all"]) == 0
    )
    out, err = capsys.readouterr()
    assert out == SOURCE
    assert err.index("IR Dump After simplify") < err.index("IR Dump After tidy")
    assert err.startswith("// -----// IR Dump After simplify //----- //\n" + SOURCE)


def test_opt_print_after_one_pass(source_file, capsys):
    assert (
        cli.main(["opt", str(source_file), "--passes", "simplify,tidy", "--print-after", "tidy"])
        == 0
    )
    _, err = capsys.readouterr()
    assert "After simplify" not in err
    assert "// -----// IR Dump After tidy //----- //" in err


def test_opt_print_after_a_pass_outside_the_pipeline(source_file, capsys):
    assert cli.main(["opt", str(source_file), "--passes", "simplify", "--print-after", "tidy"]) == 1
    _, err = capsys.readouterr()
    assert "pass 'tidy' is not in the pipeline (simplify)" in err
    assert (
        cli.main(["opt", str(source_file), "--passes", "simplify", "--print-after", "tidyy"]) == 1
    )
    assert "did you mean 'tidy'?" in capsys.readouterr().err


def test_opt_timing_goes_to_stderr(source_file, capsys):
    assert cli.main(["opt", str(source_file), "--passes", "simplify", "--timing"]) == 0
    out, err = capsys.readouterr()
    assert out == SOURCE
    assert "Pass execution timing report" in err
    assert "simplify" in err and "Total" in err


def test_opt_locations_and_output_file(source_file, tmp_path, capsys):
    out_path = tmp_path / "out.tir"
    assert cli.main(["opt", str(source_file), "--locations", "-o", str(out_path)]) == 0
    assert capsys.readouterr().out == ""
    assert f'tile.return %y loc("{source_file}":4:3)' in out_path.read_text()


def test_opt_unknown_pass(source_file, capsys):
    assert cli.main(["opt", str(source_file), "--passes", "simplfy"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "tilec opt: error: unknown pass 'simplfy' in the requested pipeline; "
        "did you mean 'simplify'?\n"
    )


def test_opt_cycle(source_file, capsys):
    assert cli.main(["opt", str(source_file), "--passes", "looped,looped-too"]) == 1
    err = capsys.readouterr().err
    assert "tilec opt: error: pass ordering cycle: looped -> looped-too -> looped" in err
    assert "Traceback" not in err


def test_opt_bad_pipeline_syntax(source_file, capsys):
    assert cli.main(["opt", str(source_file), "--passes", "simplify,"]) == 1
    assert "cannot read pass pipeline 'simplify,'" in capsys.readouterr().err


def test_opt_missing_file(tmp_path, capsys):
    missing = tmp_path / "missing.tir"
    assert cli.main(["opt", str(missing)]) == 1
    assert capsys.readouterr().err == (
        f"tilec opt: error: cannot read '{missing}': No such file or directory\n"
    )


def test_opt_parse_error(tmp_path, capsys):
    path = tmp_path / "bad.tir"
    path.write_text("func.func @k() {\n  tile.frobnicate\n}\n")
    assert cli.main(["opt", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:3: error: unknown operation 'tile.frobnicate'")
    assert "Traceback" not in err


def test_opt_verify_error_in_input(tmp_path, capsys):
    path = tmp_path / "invalid.tir"
    path.write_text(
        "func.func @k(%x: i32) -> i32 {\n  %c = arith.constant {value = 1 : i32} : i32\n}\n"
    )
    assert cli.main(["opt", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:1:1: error: 'func.func' op region must end with a terminator" in err
    assert cli.main(["opt", str(path), "--no-verify"]) == 0


def test_opt_pass_that_breaks_the_ir(source_file, capsys):
    assert cli.main(["opt", str(source_file), "--passes", "break-ir"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("tilec opt: error: pass 'break-ir' produced invalid IR:\n")
    assert "region must end with a terminator" in err
    assert cli.main(["opt", str(source_file), "--passes", "break-ir", "--no-verify"]) == 0


class Configurable(ModulePass):
    name = "configurable"
    seen: list = []

    @attrs.frozen
    class Options:
        depth: int = pass_option(1, minimum=1)
        mode: str = pass_option("slow", choices=("slow", "fast"))
        strict: bool = pass_option(False)

    def run(self, module, context) -> bool:
        self.seen.append(self.options)
        return False


def test_opt_pass_options_reach_the_pass_typed(source_file, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_pass_classes", lambda: [Configurable])
    monkeypatch.setattr(Configurable, "seen", [])
    pipeline = "configurable{depth=2,mode=fast,strict=true}"
    assert cli.main(["opt", str(source_file), "--passes", pipeline]) == 0
    assert Configurable.seen == [Configurable.Options(depth=2, mode="fast", strict=True)]


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("configurable{dpeth=2}", "pass 'configurable' has no option 'dpeth'"),
        ("configurable{depth=two}", "pass 'configurable': option 'depth' expects int, got 'two'"),
        ("configurable{strict=yes}", "option 'strict' expects bool, got 'yes'"),
        ("configurable{depth=0}", "option 'depth' must be at least 1, got 0"),
        ("configurable{mode=medium}", "option 'mode' must be one of 'slow', 'fast', got 'medium'"),
    ],
)
def test_opt_rejects_unknown_options_and_bad_values(
    source_file, monkeypatch, capsys, pipeline, message
):
    monkeypatch.setattr(cli, "load_pass_classes", lambda: [Configurable])
    monkeypatch.setattr(Configurable, "seen", [])
    assert cli.main(["opt", str(source_file), "--passes", pipeline]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tilec opt: error: ")
    assert message in err
    assert "valid options: depth: int = 1, mode: str = 'slow', strict: bool = false" in err
    assert Configurable.seen == []


def test_opt_misspelled_canonicalize_option_is_an_error(source_file, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_pass_classes", lambda: [Canonicalize, Inline])
    pipeline = "canonicalize{max-iteratons=1}"
    assert cli.main(["opt", str(source_file), "--passes", pipeline]) == 1
    assert capsys.readouterr().err == (
        "tilec opt: error: pass 'canonicalize' has no option 'max-iteratons'; "
        "valid options: max-iterations: int = 10\n"
    )
    assert cli.main(["opt", str(source_file), "--passes", "canonicalize{max-iterations=3}"]) == 0


# passes, backends, usage -------------------------------------------------------------------------


def test_passes_prints_the_tir_pipeline_with_stage_and_origin(capsys):
    assert cli.main(["passes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    origin = Simplify.__module__.split(".")[0]
    assert [line.split() for line in lines] == [
        ["simplify", "tir", origin],
        ["tidy", "tir", origin],
    ]


def test_passes_for_a_backend_includes_its_stages(capsys):
    assert cli.main(["passes", "--backend", "nvidia"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == ["simplify", "tidy", "assign-layouts", "nv-lower"]
    assert cli.main(["passes", "--backend", "interp"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == ["simplify", "tidy"]


def test_passes_dot(capsys):
    assert cli.main(["passes", "--backend", "nvidia", "--dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph pipeline {")
    assert '"simplify" -> "tidy" [label="after"];' in out
    assert "cluster_gir" in out


def test_passes_all_lists_every_pass(capsys):
    assert cli.main(["passes", "--all"]) == 0
    out = capsys.readouterr().out
    assert "break-ir" in out and "not in default pipeline" in out
    assert "assign-layouts" in out


def test_passes_unknown_backend(capsys):
    assert cli.main(["passes", "--backend", "nvidai"]) == 1
    assert capsys.readouterr().err == (
        "tilec passes: error: unknown backend 'nvidai' (known: interp, nvidia); "
        "did you mean 'nvidia'?\n"
    )


def test_backends(capsys):
    assert cli.main(["backends"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "interp  available",
        "nvidia  unavailable: no CUDA driver found (libcuda.so.1)",
        "plugin 'broken' failed to load: ImportError: no module x",
    ]


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"tilec {tilec.__version__}\n"


@pytest.mark.parametrize(
    "argv", [[], ["frobnicate"], ["opt"], ["opt", "x.tir", "--bogus"], ["passes", "--dot", "x"]]
)
def test_usage_errors_exit_2(argv, capsys):
    assert cli.main(argv) == 2
    assert "usage:" in capsys.readouterr().err


# End to end ------------------------------------------------------------------------------------


def run_tilec(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tilec", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_subprocess_round_trip_from_stdin():
    result = run_tilec("opt", "-", stdin=SOURCE)
    assert result.returncode == 0, result.stderr
    assert result.stdout == SOURCE


def test_subprocess_parse_error_from_stdin_has_no_traceback():
    result = run_tilec("opt", "-", stdin="func.func @k( {\n")
    assert result.returncode == 1
    assert result.stderr.startswith("<stdin>:1:")
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_plugin_warnings_print_as_one_line(source_file, monkeypatch, capsys):
    from tilec.plugin.manager import TilecPluginWarning

    def load_with_warning():
        warnings.warn(
            "tilec plugin 'broken': import failed; skipped", TilecPluginWarning, stacklevel=1
        )
        return [Simplify]

    monkeypatch.setattr(cli, "load_pass_classes", load_with_warning)
    assert cli.main(["opt", str(source_file), "--passes", "simplify"]) == 0
    assert (
        capsys.readouterr().err == "tilec: warning: tilec plugin 'broken': import failed; skipped\n"
    )
