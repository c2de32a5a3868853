"""Translation validation (`tilec opt --validate`, `TILEC_VALIDATE_PASSES=1`): a pass that
changes what a kernel computes is named, with the IR before and after it; the core pipeline
keeps every frontend and language test kernel's results."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec import cli
from tilec.dialects.arith import ConstantOp, ShRSIOp, constant_attr
from tilec.ir import Builder, DenseAttr, IntegerAttr, Operation, OpResult
from tilec.passes.base import ModulePass, PassContext
from tilec.pipeline.validation import ValidatePasses, ValidationError
from tilec.plugin import manager as plugin_host

TESTS = Path(__file__).resolve().parents[1]
pass_pipeline = importlib.import_module("tilec.pipeline.pass_pipeline")


class SignedDivisionToShift(ModulePass):
    """A plausible but wrong third-party pass: `arith.divsi %x, 2**k` -> `arith.shrsi %x, k`
    (wrong for negative `x`: -7 // 2 is -3 in C and Triton, -7 >> 1 is -4)."""

    name = "bad-signed-division"
    stage = "tir"
    after = ("canonicalize",)

    def run(self, module: Operation, context: PassContext) -> bool:
        changed = False
        for op in list(module.walk()):
            exponent = _power_of_two(op.operands[1]) if op.name == "arith.divsi" else None
            if exponent is None:
                continue
            result = op.results[0]
            builder = Builder.before_op(op)
            attributes = {"value": constant_attr(exponent, result.type)}
            shift = builder.insert(ConstantOp.create([], [result.type], attributes))
            new = builder.insert(ShRSIOp.create([op.operands[0], shift.results[0]], [result.type]))
            result.replace_all_uses_with(new.results[0])
            op.erase()
            changed = True
        return changed


def _power_of_two(value) -> int | None:
    if not isinstance(value, OpResult) or not isinstance(value.op, ConstantOp):
        return None
    attr = value.op.attributes["value"]
    attr = attr.value if isinstance(attr, DenseAttr) else attr
    if not isinstance(attr, IntegerAttr) or attr.value <= 1 or attr.value & (attr.value - 1):
        return None
    return attr.value.bit_length() - 1


DIVIDE_TIR = """\
func.func @divide(%x_ptr: !tile.ptr<i32>, %out_ptr: !tile.ptr<i32>) {
  %0 = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %1 = tile.splat %x_ptr : tensor<64x!tile.ptr<i32>>
  %2 = tile.addptr %1, %0 : tensor<64x!tile.ptr<i32>>
  %x = tile.load %2 : tensor<64xi32>
  %c = arith.constant {value = dense<4> : tensor<64xi32>} : tensor<64xi32>
  %q = arith.divsi %x, %c : tensor<64xi32>
  %3 = tile.splat %out_ptr : tensor<64x!tile.ptr<i32>>
  %4 = tile.addptr %3, %0 : tensor<64x!tile.ptr<i32>>
  tile.store %4, %q
  tile.return
}
"""


@pytest.fixture
def with_bad_pass(monkeypatch):
    """The plugin host (and so the CLI and every compile) also finds the wrong pass."""
    classes = [*plugin_host.load_pass_classes(), SignedDivisionToShift]
    monkeypatch.setattr(plugin_host, "load_pass_classes", lambda: list(classes))
    monkeypatch.setattr(cli, "load_pass_classes", lambda: list(classes))
    monkeypatch.setattr(pass_pipeline, "_pipelines", {})


def test_opt_validate_names_the_wrong_pass_with_the_ir_before_and_after(
    with_bad_pass, tmp_path, capsys
):
    source = tmp_path / "divide.tir"
    source.write_text(DIVIDE_TIR)
    status = cli.main(
        ["opt", str(source), "--validate", "--passes", "canonicalize,bad-signed-division,cse"]
    )
    err = capsys.readouterr().err
    assert status == 1
    assert "pass 'bad-signed-division' changed the results: @divide: pointer argument 1" in err
    before = err.split("IR Before bad-signed-division")[1].split("IR After")[0]
    after = err.split("IR After bad-signed-division")[1]
    assert "arith.divsi" in before and "arith.shrsi" not in before
    assert "arith.shrsi" in after and "arith.divsi" not in after


def test_opt_validate_passes_the_core_pipeline(tmp_path, capsys):
    source = tmp_path / "divide.tir"
    source.write_text(DIVIDE_TIR)
    status = cli.main(["opt", str(source), "--validate", "--passes", "canonicalize,cse,dce"])
    assert status == 0, capsys.readouterr().err
    assert "arith.divsi" in capsys.readouterr().out


RETURNING_TIR = """\
func.func @divide_value(%x: i32) -> i32 {
  %c = arith.constant {value = 4 : i32} : i32
  %q = arith.divsi %x, %c : i32
  tile.return %q
}
"""


def test_opt_validate_says_what_it_cannot_check_and_fails_when_it_checked_nothing(
    with_bad_pass, tmp_path, capsys
):
    """A function that returns its value cannot be run as a kernel: --validate checked nothing
    and let the wrong rewrite through with exit 0; now it says so, and fails."""
    source = tmp_path / "returning.tir"
    source.write_text(RETURNING_TIR)
    status = cli.main(["opt", str(source), "--validate", "--passes", "bad-signed-division"])
    err = capsys.readouterr().err
    assert status == 1
    assert "warning: @divide_value is not validated: it returns a value" in err
    assert "--validate checked no function" in err
    both = tmp_path / "both.tir"
    both.write_text(DIVIDE_TIR + RETURNING_TIR)
    assert cli.main(["opt", str(both), "--validate", "--passes", "canonicalize,cse"]) == 0
    assert "warning: @divide_value is not validated" in capsys.readouterr().err


def test_opt_validate_needs_passes(tmp_path, capsys):
    source = tmp_path / "divide.tir"
    source.write_text(DIVIDE_TIR)
    assert cli.main(["opt", str(source), "--validate"]) == 1
    assert "--validate needs --passes" in capsys.readouterr().err


@tilec.jit
def quarter_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) // 4)


def _compile_quarter():
    return tilec.compile(
        quarter_kernel, signature={"x_ptr": "*i32", "out_ptr": "*i32"},
        constexprs={"BLOCK": 64}, backend="interp",
    )  # fmt: skip


def test_validate_passes_setting_catches_the_wrong_pass_at_compile(with_bad_pass, monkeypatch):
    monkeypatch.setenv("TILEC_VALIDATE_PASSES", "1")
    with pytest.raises(ValidationError, match="pass 'bad-signed-division' changed the results"):
        _compile_quarter()


def test_without_validation_the_wrong_pass_goes_unnoticed_at_compile(with_bad_pass):
    x = np.arange(-32, 32, dtype=np.int32)
    out = np.zeros_like(x)
    _compile_quarter().run((1,), [x, out])
    assert (out != np.trunc(x / 4)).any()  # what validation exists to catch


def test_a_kernel_no_random_input_runs_is_reported_skipped():
    from tilec.frontend import compile_to_tir

    @tilec.jit
    def strided(x_ptr, stride):
        tl.store(x_ptr + stride * 100000, 1.0)

    module = compile_to_tir(strided, {"x_ptr": "*fp32", "stride": "i32"}, {})
    validate = ValidatePasses()
    validate.before_pipeline([], module)
    assert not validate.inputs
    assert "strided" in validate.skipped


def test_every_frontend_and_language_test_kernel_validates():
    """The test suites of the frontend and the language, run with `TILEC_VALIDATE_PASSES=1`:
    the core tir pipeline keeps the results of every kernel they compile."""
    env = dict(os.environ, TILEC_VALIDATE_PASSES="1", PYTHONPATH=str(Path(__file__).parent))
    command = [
        sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
        "-p", "validation_probe", str(TESTS / "frontend"), str(TESTS / "language"),
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=TESTS.parent)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    totals = re.search(r"VALIDATION kernels=(\d+) passes=(\d+) skipped=(\d+)", done.stdout)
    assert totals, done.stdout[-2000:]
    kernels, passes, skipped = map(int, totals.groups())
    assert kernels >= 300 and passes >= kernels, totals.group(0)
    assert skipped <= kernels // 10, totals.group(0)
