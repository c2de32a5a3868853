"""One bad plugin must not break tilec (issue 14): each broken plugin below is disabled with one
warning naming its distribution and the reason, and a kernel still compiles and runs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.plugin.manager import (
    TilecPluginWarning,
    load_backends,
    load_pass_classes,
    plugin_failures,
)
from tilec.runtime import cache, compiler

PASS_PLUGIN = """
from tilec.passes.base import ModulePass
from tilec.plugin import hookimpl

class First(ModulePass):
    name = "bad-first"
    {first}

    def run(self, module, context):
        return False

class Second(ModulePass):
    name = "bad-second"
    {second}

    def run(self, module, context):
        return False

@hookimpl
def tilec_passes():
    return [First, Second]
"""


@tilec.jit
def double_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) * 2)


@pytest.fixture(autouse=True)
def fresh_runtime(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEC_BACKEND", raising=False)
    cache.clear_memory()
    compiler._availability.clear()
    yield
    compiler._availability.clear()
    cache.clear_memory()


def plugin_warnings(action) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [str(w.message) for w in caught if issubclass(w.category, TilecPluginWarning)]


def compile_and_run() -> None:
    """A kernel compiles (the full pass pipeline, resolved anew) and runs on interp."""
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    double_kernel[(1,)](x, out, BLOCK=16, backend="interp")
    np.testing.assert_array_equal(out, x * 2)


@pytest.mark.parametrize(
    ("first", "second", "reason"),
    [
        ('stage = "tile"', "", "pass 'bad-first' declares unknown stage 'tile'"),
        ('after = "cse"', "", "pass 'bad-first' declares after='cse': it must be a tuple"),
        ('requires = "cse"', "", "declares requires='cse'"),
        ('after = ("no-such-pass",)', "", "names unknown pass 'no-such-pass' in 'after'"),
        (
            'after = ("bad-second",)',
            'after = ("bad-first",)',
            "relations form a cycle: 'bad-first' -> 'bad-second' -> 'bad-first'",
        ),
        ('before = ("cse",)', 'after = ("bad-first",)\n    before = ("bad-first",)', "cycle"),
        ('stage = "tir"\n    after = ("assign-layouts",)', "", "is a gir pass"),
    ],
)
def test_pass_plugin_with_bad_declarations_is_disabled(make_distribution, first, second, reason):
    source = PASS_PLUGIN.format(first=first, second=second)
    make_distribution("tilec-bad-passes", {"bad": "bad_passes"}, {"bad_passes": source})

    messages = plugin_warnings(lambda: (load_pass_classes(), compile_and_run()))

    [message] = messages
    assert "'bad (tilec-bad-passes 0.1)'" in message
    assert reason in message
    names = {cls.name for cls in load_pass_classes()}
    assert not names & {"bad-first", "bad-second"}
    assert {"canonicalize", "cse", "strength-reduction"} <= names


def test_plugin_relying_on_a_disabled_plugin_is_disabled_too(make_distribution):
    broken = PASS_PLUGIN.format(first='stage = "nope"', second="")
    make_distribution("tilec-bad-passes", {"bad": "bad_passes"}, {"bad_passes": broken})
    dependent = """
    from tilec.passes.base import ModulePass
    from tilec.plugin import hookimpl

    class Later(ModulePass):
        name = "later"
        after = ("bad-second",)

        def run(self, module, context):
            return False

    @hookimpl
    def tilec_passes():
        return [Later]
    """
    make_distribution("tilec-dependent", {"dependent": "dependent"}, {"dependent": dependent})

    messages = plugin_warnings(compile_and_run)

    assert len(messages) == 2
    assert any("tilec-dependent 0.1" in m and "unknown pass 'bad-second'" in m for m in messages)


def test_sys_exit_at_import_disables_the_plugin(make_distribution):
    make_distribution("tilec-exits", {"exits": "exiting"}, {"exiting": "import sys\nsys.exit(3)\n"})

    messages = plugin_warnings(compile_and_run)

    [message] = messages
    assert "'exits (tilec-exits 0.1)'" in message
    assert "SystemExit: 3" in message
    assert "interp" in load_backends()


def test_sys_exit_in_a_hook_disables_the_hook(make_distribution):
    source = """
    import sys
    from tilec.plugin import hookimpl

    @hookimpl
    def tilec_passes():
        sys.exit(4)
    """
    make_distribution("tilec-exits", {"exits": "exiting_hook"}, {"exiting_hook": source})
    [message] = plugin_warnings(compile_and_run)
    assert "tilec-exits 0.1" in message and "SystemExit: 4" in message


def test_backend_whose_is_available_raises_reads_unavailable(make_distribution):
    source = """
    from tilec.backend import Backend
    from tilec.plugin import hookimpl

    class Flaky(Backend):
        name = "flaky"

        def is_available(self):
            raise OSError("driver exploded")

    @hookimpl
    def tilec_backends():
        return [Flaky()]
    """
    make_distribution("tilec-flaky", {"flaky": "flaky_backend"}, {"flaky_backend": source})

    def check():
        availability = load_backends()["flaky"].is_available()
        assert not availability
        assert "driver exploded" in availability.reason
        assert "tilec-flaky 0.1" in availability.reason
        load_backends()["flaky"].is_available()  # warns once

    [message] = plugin_warnings(check)
    assert "'flaky (tilec-flaky 0.1)'" in message and "OSError: driver exploded" in message
    compile_and_run()


def test_backends_command_survives_a_raising_is_available(make_distribution, capsys):
    from tilec.cli import main

    source = """
    from tilec.backend import Backend
    from tilec.plugin import hookimpl

    class Flaky(Backend):
        name = "flaky"

        def is_available(self):
            raise SystemExit(5)

    @hookimpl
    def tilec_backends():
        return [Flaky()]
    """
    make_distribution("tilec-flaky", {"flaky": "flaky_backend"}, {"flaky_backend": source})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TilecPluginWarning)
        status = main(["backends"])
    assert status in (0, None)
    out = capsys.readouterr().out
    assert "flaky" in out and "interp" in out


def test_a_distribution_cannot_take_over_interp(make_distribution):
    source = """
    from tilec.backend import Backend
    from tilec.plugin import hookimpl

    class Impostor(Backend):
        name = "interp"

    @hookimpl
    def tilec_backends():
        return [Impostor()]
    """
    # "aaa" sorts before "interp": it loads first, and still does not get the name.
    make_distribution("tilec-impostor", {"aaa": "impostor"}, {"impostor": source})

    [message] = plugin_warnings(load_backends)

    assert "'aaa (tilec-impostor 0.1)': backend 'interp' is refused" in message
    assert "plugin 'interp (tilec-interp" in message
    assert type(load_backends()["interp"]).__module__.startswith("tilec_interp")
    assert any("tilec-impostor" in failure.plugin for failure in plugin_failures())
    compile_and_run()
