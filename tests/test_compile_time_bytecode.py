"""`benchmarks/compile_time.py --no-bytecode`: the children's bytecode folder loses the `.pyc` files
of tilec's and its plugins' packages, and no child writes them again (as an editable install under
`PYTHONDONTWRITEBYTECODE=1` runs), while the standard library keeps its own."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import tilec

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "compile_time.py"


def _in_prefix(prefix: Path, folder: Path) -> Path:
    return prefix / folder.relative_to(folder.anchor)


def test_no_bytecode_drops_tilec_packages_bytecode_for_good_and_keeps_the_others(tmp_path):
    spec = importlib.util.spec_from_file_location("compile_time_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    compile_time = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compile_time)
    runner = compile_time.Runner({"tilec": sys.executable}, tmp_path)
    prefix = Path(runner.env["PYTHONPYCACHEPREFIX"])
    tilec_folder = Path(tilec.__file__).parent
    standard = Path(json.__file__).parent  # the standard library's json, which tilec imports
    runner.import_ms("tilec")  # the untimed run: every package's bytecode written
    assert any(_in_prefix(prefix, tilec_folder).glob("*.pyc"))
    assert any(_in_prefix(prefix, standard).glob("*.pyc"))
    folders = runner.drop_tilec_bytecode()
    assert str(tilec_folder) in folders
    plugins = [Path(f).name for f in folders]
    assert "tilec_interp" in plugins  # the plugins' packages, by their entry points
    runner.import_ms("tilec")
    assert _in_prefix(prefix, tilec_folder).is_file()  # nothing read or written below it
    assert any(_in_prefix(prefix, standard).glob("*.pyc"))
