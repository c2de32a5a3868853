"""The `tilec` command's help names the installed backends, their example targets and check
targets (read from the plugins when help is printed), not a fixed list of vendors."""

from __future__ import annotations

import re

import pytest

from tilec import cli
from tilec.backend import GpuBackend
from tilec.runtime import compiler


def _help(*command: str, capsys) -> str:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args([*command, "--help"])
    return re.sub(r"\s+", " ", capsys.readouterr().out)


def test_run_s_backend_help_lists_the_installed_backends_by_priority(capsys):
    names = ", ".join(b.name for b in compiler.automatic_order())
    assert f"--backend NAME the backend: {names}" in _help("run", capsys=capsys)


def test_compile_s_target_help_gives_each_gpu_backend_s_example(capsys):
    gpus = [b for b in compiler.automatic_order() if isinstance(b, GpuBackend)]
    text = _help("compile", capsys=capsys)
    for backend in gpus:
        assert f"{backend.example_target} for {backend.name}" in text


def test_fuzz_help_lists_each_plugin_s_check_targets(capsys):
    text = _help("fuzz", capsys=capsys)
    for backend in compiler.automatic_order():
        for target in getattr(backend, "check_targets", ()):
            assert target in text
    assert "{check_targets}" not in text


def test_fields_are_filled_from_the_backends_given(monkeypatch):
    class Made(GpuBackend):
        name = "madeup"
        check_targets = ("w16", "w8")

        @property
        def example_target(self):
            return "w16"

    monkeypatch.setattr(compiler, "automatic_order", lambda: [Made()])
    assert cli._backend_examples("{backends}; {example_targets}; {check_targets}") == (
        "madeup; w16 for madeup; madeup w16 and w8"
    )
    monkeypatch.setattr(compiler, "automatic_order", lambda: [])
    assert cli._backend_examples("the backend: {backends}") == "the backend: none installed"
    assert cli._backend_examples("licm{max-depth=2}") == "licm{max-depth=2}"
