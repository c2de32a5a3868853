"""The example pass plugin under examples/plugins/tilec-strength-reduction, installed as a real
distribution: its pass rewrites what it should, and its lit + filecheck golden tests pass."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import tilec.dialects  # noqa: F401  (registers the ops the parser needs)
from tilec.ir import parse_module, print_module, verify
from tilec.passes.base import PassContext
from tilec.plugin.manager import load_pass_classes
from tilec_strength_reduction import StrengthReduction

PLUGIN_TESTS = (
    Path(__file__).parents[2] / "examples" / "plugins" / "tilec-strength-reduction" / "tests"
)
RUN_LIT = "import sys; from lit.main import main; sys.argv[0] = 'lit'; sys.exit(main())"


def reduce(source: str) -> tuple[bool, str]:
    module = parse_module(source)
    changed = StrengthReduction().run(module, PassContext())
    verify(module)
    return changed, print_module(module)


def test_loading_the_plugin_imports_no_pass_and_no_ir():
    """tilec loads every plugin to find a launch's backend: the pass (and the IR it uses) load
    when passes are asked for, not then."""
    code = (
        "import sys, tilec_strength_reduction.plugin as p; "
        "print(sorted(m for m in sys.modules if m.startswith(('tilec.dialects', "
        "'tilec_strength_reduction.strength_reduction', 'tilec.passes'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_the_pass_arrives_through_the_plugin_manager():
    [cls] = [cls for cls in load_pass_classes() if cls.name == "strength-reduction"]
    assert cls is StrengthReduction
    assert (cls.stage, cls.after, cls.before) == ("tir", ("canonicalize",), ("cse",))


@pytest.mark.parametrize(
    ("op", "constant", "expected_op", "expected_constant"),
    [
        ("arith.muli", "8 : i32", "arith.shli", "3 : i32"),
        ("arith.divui", "8 : i32", "arith.shrui", "3 : i32"),
        ("arith.remui", "8 : i32", "arith.andi", "7 : i32"),
        ("arith.muli", "1 : i32", "arith.shli", "0 : i32"),
        ("arith.divui", "128 : u8", "arith.shrui", "7 : u8"),
        ("arith.remui", "-128 : i8", "arith.andi", "127 : i8"),
    ],
)
def test_scalar_rewrites(op, constant, expected_op, expected_constant):
    type_ = constant.split(" : ")[1]
    changed, text = reduce(f"""
func.func @f(%x: {type_}) -> {type_} {{
  %c = arith.constant {{value = {constant}}} : {type_}
  %y = {op} %x, %c : {type_}
  tile.return %y
}}
""")
    assert changed
    assert f"arith.constant {{value = {expected_constant}}}" in text
    assert re.search(rf"%y = {expected_op} %x, %\w+ : {type_}", text)
    assert op not in text


def test_constant_on_the_left_of_a_multiply():
    changed, text = reduce("""
func.func @f(%x: i64) -> i64 {
  %c = arith.constant {value = 4096} : i64
  %y = arith.muli %c, %x : i64
  tile.return %y
}
""")
    assert changed
    assert "arith.constant {value = 12} : i64" in text
    assert re.search(r"%y = arith.shli %x, %\w+ : i64", text)


def test_splat_tensor_constant():
    changed, text = reduce("""
func.func @f(%x: tensor<64xi32>) -> tensor<64xi32> {
  %c = arith.constant {value = dense<32> : tensor<64xi32>} : tensor<64xi32>
  %y = arith.remui %x, %c : tensor<64xi32>
  tile.return %y
}
""")
    assert changed
    assert "arith.constant {value = dense<31> : tensor<64xi32>} : tensor<64xi32>" in text
    assert "arith.andi %x" in text


@pytest.mark.parametrize(
    "body",
    [
        "%y = arith.muli %x, %c6 : i32",
        "%y = arith.divsi %x, %c8 : i32",
        "%y = arith.remsi %x, %c8 : i32",
        "%y = arith.divui %c8, %x : i32",
        "%y = arith.divui %x, %x : i32",
        "%y = arith.muli %x, %c0 : i32",
    ],
)
def test_leaves_other_ops_alone(body):
    source = f"""
func.func @f(%x: i32) -> i32 {{
  %c0 = arith.constant {{value = 0 : i32}} : i32
  %c6 = arith.constant {{value = 6 : i32}} : i32
  %c8 = arith.constant {{value = 8 : i32}} : i32
  {body}
  tile.return %y
}}
"""
    changed, text = reduce(source)
    assert not changed
    assert text == print_module(parse_module(source))


def test_golden_files_with_lit_and_filecheck():
    result = subprocess.run(
        [sys.executable, "-c", RUN_LIT, "-v", str(PLUGIN_TESTS)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = result.stdout + result.stderr
    assert re.search(r"Total Discovered Tests: [1-9]", output), output
    assert result.returncode == 0, output
