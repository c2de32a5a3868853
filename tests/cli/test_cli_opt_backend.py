"""`tilec opt --backend NAME --arch ARCH`: the gir passes get that backend's layout rules (its
tensor-core instructions, ...); the golden test is tests/filecheck/layout/accelerate-matmul.tir."""

from __future__ import annotations

import pytest

from tilec import cli

SOURCE = "func.func @k() {\n  tile.return\n}\n"


@pytest.fixture
def source_file(tmp_path):
    path = tmp_path / "k.tir"
    path.write_text(SOURCE)
    return path


def test_backend_needs_an_arch(source_file, capsys):
    assert cli.main(["opt", str(source_file), "--passes", "dce", "--backend", "nvidia"]) != 0
    assert "--backend needs --arch" in capsys.readouterr().err


def test_an_arch_needs_a_backend(source_file, capsys):
    assert cli.main(["opt", str(source_file), "--passes", "dce", "--arch", "sm_90"]) != 0
    assert "--arch needs --backend" in capsys.readouterr().err


def test_backend_rejects_an_arch_it_does_not_have(source_file, capsys):
    args = ["opt", str(source_file), "--passes", "dce", "--backend", "nvidia", "--arch", "sm_1"]
    assert cli.main(args) != 0
    assert "unsupported NVIDIA target 'sm_1'" in capsys.readouterr().err


def test_backend_rules_reach_the_passes(source_file, capsys):
    args = ["opt", str(source_file), "--passes", "accelerate-matmul", "--backend", "nvidia"]
    assert cli.main([*args, "--arch", "sm_90a"]) == 0
    assert "func.func @k()" in capsys.readouterr().out
