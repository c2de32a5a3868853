"""The plugin manager: real entry points, broken plugins, duplicates, and autoload switched off."""

from __future__ import annotations

import importlib.metadata
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from tilec.backend import Backend
from tilec.plugin import hookimpl
from tilec.plugin.manager import (
    DISABLE_AUTOLOAD_ENV,
    TilecPluginWarning,
    get_plugin_manager,
    load_backends,
    load_pass_classes,
    plugin_failures,
    register_plugin,
    reset_plugin_manager,
)

SHIPPED_BACKENDS = {"interp", "nvidia", "amd"}

GOOD_BACKEND = """
from tilec.backend import Availability, Backend
from tilec.plugin import hookimpl

class ToyBackend(Backend):
    name = "{name}"

    def is_available(self):
        return Availability(True)

@hookimpl
def tilec_backends():
    return [ToyBackend()]
"""


def plugin_warnings(load: Callable[[], Any] | None = None) -> list[str]:
    """The TilecPluginWarning messages raised while loading plugins (and calling `load`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        get_plugin_manager()
        load_backends()
        load_pass_classes()
        if load is not None:
            load()
    return [str(w.message) for w in caught if issubclass(w.category, TilecPluginWarning)]


def test_shipped_plugins_load_through_their_entry_points():
    entry_points = {ep.name: ep for ep in importlib.metadata.entry_points(group="tilec")}
    assert entry_points["interp"].value == "tilec_interp.plugin"
    assert entry_points["interp"].dist.name == "tilec-interp"
    assert entry_points["nvidia"].dist.name == "tilec-nvidia"
    assert entry_points["amd"].dist.name == "tilec-amd"
    assert entry_points["strength-reduction"].dist.name == "tilec-strength-reduction"

    assert plugin_warnings() == []
    backends = load_backends()
    assert set(backends) >= SHIPPED_BACKENDS
    assert all(
        isinstance(backends[name], Backend) and backends[name].name == name for name in backends
    )
    assert "strength-reduction" in {cls.name for cls in load_pass_classes()}
    assert plugin_failures() == []


def test_results_are_cached_until_reset():
    assert load_backends()["interp"] is load_backends()["interp"]
    manager = get_plugin_manager()
    reset_plugin_manager()
    assert get_plugin_manager() is not manager


def test_plugin_that_raises_at_import_warns_once_and_the_others_load(make_distribution):
    make_distribution("tilec-broken", {"broken": "broken_plugin"}, {"broken_plugin": "1 / 0\n"})

    messages = plugin_warnings()

    assert len(messages) == 1
    assert "'broken (tilec-broken 0.1)'" in messages[0]
    assert "ZeroDivisionError: division by zero" in messages[0]
    assert "broken_plugin.py:1" in messages[0]
    assert set(load_backends()) >= SHIPPED_BACKENDS
    [(plugin, error)] = plugin_failures()
    assert plugin == "broken (tilec-broken 0.1)"
    assert error.startswith("import of 'broken_plugin' failed: ZeroDivisionError")


def test_missing_plugin_module_warns_and_the_others_load(make_distribution):
    make_distribution("tilec-ghost", {"ghost": "no_such_module_here"}, {})

    [message] = plugin_warnings()

    assert "'ghost (tilec-ghost 0.1)'" in message and "ModuleNotFoundError" in message
    assert set(load_backends()) >= SHIPPED_BACKENDS


def test_hook_that_raises_warns_once_naming_the_plugin(make_distribution):
    source = """
    from tilec.plugin import hookimpl

    @hookimpl
    def tilec_backends():
        raise RuntimeError("cannot find my toolchain")
    """
    make_distribution("tilec-raises", {"raises": "raising_plugin"}, {"raising_plugin": source})

    messages = plugin_warnings(load_backends)

    assert len(messages) == 1
    assert "'raises (tilec-raises 0.1)'" in messages[0]
    assert "tilec_backends() raised: RuntimeError: cannot find my toolchain" in messages[0]
    assert set(load_backends()) >= SHIPPED_BACKENDS
    assert [plugin for plugin, _ in plugin_failures()] == ["raises (tilec-raises 0.1)"]


def test_misspelled_hook_is_a_registration_failure(make_distribution):
    source = """
    from tilec.plugin import hookimpl

    @hookimpl
    def tilec_backend():
        return []
    """
    make_distribution("tilec-typo", {"typo": "typo_plugin"}, {"typo_plugin": source})

    [message] = plugin_warnings()

    assert (
        "'typo (tilec-typo 0.1)': registration failed (did you mean 'tilec_backends'? " in message
    )
    assert (
        "tilec's hooks are tilec_backends, tilec_ir_modules, tilec_passes; see tilec.plugin.hookspecs"
        in message
    )
    assert "tilec_backend" in message
    assert "typo" not in dict(get_plugin_manager().list_name_plugin())


def test_hook_returning_something_else_than_backends_warns(make_distribution):
    source = """
    from tilec.plugin import hookimpl

    @hookimpl
    def tilec_backends():
        return ["not a backend"]

    @hookimpl
    def tilec_passes():
        return 42
    """
    make_distribution("tilec-odd", {"odd": "odd_plugin"}, {"odd_plugin": source})

    messages = plugin_warnings()

    assert len(messages) == 2
    assert "returned 'not a backend', not a named tilec.backend.Backend" in messages[0]
    assert "tilec_passes() returned int, not a list" in messages[1]


def test_duplicate_backend_name_warns_and_keeps_the_first(make_distribution):
    make_distribution("tilec-a-toy", {"a-toy": "a_toy"}, {"a_toy": GOOD_BACKEND.format(name="toy")})
    make_distribution("tilec-b-toy", {"b-toy": "b_toy"}, {"b_toy": GOOD_BACKEND.format(name="toy")})

    [message] = plugin_warnings()

    assert "'b-toy (tilec-b-toy 0.1)': backend 'toy' is refused" in message
    assert "'a-toy (tilec-a-toy 0.1)' already provides it" in message
    assert type(load_backends()["toy"]).__module__ == "a_toy"


def test_two_passes_claiming_one_name_warn_naming_both_plugins(make_distribution):
    source = """
    from tilec.passes.base import ModulePass
    from tilec.plugin import hookimpl

    class Reduce(ModulePass):
        name = "strength-reduction"

        def run(self, module, context):
            return False

    @hookimpl
    def tilec_passes():
        return [Reduce]
    """
    make_distribution("tilec-zz-rival", {"zz-rival": "rival_plugin"}, {"rival_plugin": source})

    [message] = plugin_warnings()

    assert (
        "'zz-rival (tilec-zz-rival 0.1)': pass 'strength-reduction' (rival_plugin.Reduce)"
        in message
    )
    assert "'strength-reduction (tilec-strength-reduction 0.1.0)' already registers" in message
    assert "tilec_strength_reduction.strength_reduction.StrengthReduction" in message
    [cls] = [cls for cls in load_pass_classes() if cls.name == "strength-reduction"]
    assert cls.__module__ == "tilec_strength_reduction.strength_reduction"


def test_the_same_pass_class_offered_twice_is_kept_once():
    from tilec_strength_reduction import StrengthReduction

    class Again:
        @hookimpl
        def tilec_passes(self):
            return [StrengthReduction]

    register_plugin(Again(), "again")

    assert plugin_warnings() == []
    assert [cls for cls in load_pass_classes() if cls.name == "strength-reduction"] == [
        StrengthReduction
    ]


def test_register_plugin_refreshes_the_loaded_backends():
    from tilec.backend import Availability

    class Toy(Backend):
        name = "toy"

        def is_available(self) -> Availability:
            return Availability(True)

    class ToyPlugin:
        @hookimpl
        def tilec_backends(self):
            return [Toy()]

    assert "toy" not in load_backends()
    register_plugin(ToyPlugin(), "toy-plugin")
    assert isinstance(load_backends()["toy"], Toy)


def test_disable_autoload_skips_entry_points(make_distribution, monkeypatch):
    make_distribution("tilec-broken", {"broken": "broken_plugin"}, {"broken_plugin": "1 / 0\n"})
    monkeypatch.setenv(DISABLE_AUTOLOAD_ENV, "1")

    assert plugin_warnings() == []
    assert load_backends() == {}
    assert "strength-reduction" not in {cls.name for cls in load_pass_classes()}
    assert plugin_failures() == []


@pytest.mark.parametrize("value", ["", "0"])
def test_autoload_stays_on_for_empty_or_zero(monkeypatch, value):
    monkeypatch.setenv(DISABLE_AUTOLOAD_ENV, value)
    assert set(load_backends()) >= SHIPPED_BACKENDS


def test_tilec_passes_fails_when_a_plugins_relation_runs_backwards_across_stages(
    make_distribution, capsys
):
    """A tir pass that asks to run after a gir pass cannot be placed: the plugin is left out,
    and `tilec passes` says so on stderr and exits 1 (it printed a warning and exited 0)."""
    source = """
    from tilec.passes.base import Pass
    from tilec.plugin import hookimpl

    class Late(Pass):
        name = "late-tir-pass"
        stage = "tir"
        after = ("assign-layouts",)

        def run(self, module, context):
            return False

    @hookimpl
    def tilec_passes():
        return [Late]
    """
    make_distribution("tilec-late", {"late": "late_plugin"}, {"late_plugin": source})
    from tilec import cli

    code = cli.main(["passes", "--backend", "nvidia"])  # the command shows warnings itself
    err = capsys.readouterr().err
    assert code == 1
    assert "tilec: plugin 'late (tilec-late 0.1)' is left out: pass 'late-tir-pass' (tir)" in err
    assert "declares after=('assign-layouts',) but 'assign-layouts' is a gir pass" in err
