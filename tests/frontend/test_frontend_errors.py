"""Kernel mistakes fail at compile time naming the kernel's file and line, with a hint."""

import inspect
from pathlib import Path

import frontend_bad_kernels as bad
import pytest

import tilec.language as tl
from tilec.frontend import CompilationError, compile_to_tir

BAD_FILE = inspect.getsourcefile(bad)
BAD_LINES = Path(BAD_FILE).read_text().splitlines()


def line_of(text: str) -> int:
    hits = [i + 1 for i, line in enumerate(BAD_LINES) if text in line]
    assert len(hits) == 1, hits
    return hits[0]


def compile_error(kernel, signature=None) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        compile_to_tir(kernel, signature or {"x_ptr": "*fp32"}, {})
    return info.value


@pytest.mark.parametrize(
    ("kernel", "line_text", "message"),
    [
        (bad.uses_try, "    try:", "try/except is not supported in kernels"),
        (bad.uses_undefined, "undefined_value)", "name 'undefined_value' is not defined"),
        (bad.bad_arange, "tl.arange(0, 100)", "tl.arange(0, 100) has 100 elements, not a power"),
        (bad.shape_mismatch, "a + b)", "shape mismatch: [16] and [32] cannot be broadcast"),
        (bad.calls_python, "helper(1.0)", "cannot call 'helper': it is a plain Python function"),
        (bad.uses_lambda, "f = lambda", "lambda is not supported in kernels"),
        (bad.uses_with, 'with open("f")', "'with' is not supported in kernels"),
        (bad.mutates_global, "global SCALE", "kernels cannot change globals"),
        (bad.wrong_dtype, "<< 2", "operator << is not defined for f32"),
    ],
)
def test_error_names_file_line_and_message(kernel, line_text, message):
    err = compile_error(kernel)
    line = line_of(line_text)
    assert (err.file, err.line) == (BAD_FILE, line)
    assert err.message.startswith(message)
    text = str(err)
    assert text.startswith(f"{BAD_FILE}:{line}:{err.col}: error: {message}")
    assert BAD_LINES[line - 1].strip() in text.splitlines()[1]
    assert err.hint and err.hint in text


def test_error_column_and_caret_point_at_the_construct():
    err = compile_error(bad.bad_arange)
    assert err.col == BAD_LINES[err.line - 1].index("tl.arange") + 1
    source, caret = str(err).splitlines()[1:3]
    assert caret.index("^") == source.index("tl.arange")


def test_loading_from_an_integer_asks_for_a_pointer():
    err = compile_error(bad.load_from_int, {"n": "i32"})
    assert err.line == line_of("tl.load(n)")
    assert "expected a pointer, got a value of type i32" in str(err)


def test_loop_carried_type_change_is_reported():
    err = compile_error(bad.loop_changes_type, {"x_ptr": "*fp32", "n": "i32"})
    assert err.line == line_of("for i in range(n):")
    assert "loop-carried variable 'acc' changes type from i32 to f32" in err.message


def test_missing_signature_names_the_parameter():
    with pytest.raises(TypeError, match="parameter 'x_ptr'"):
        compile_to_tir(bad.uses_try, {}, {})


def test_language_functions_refuse_to_run_outside_kernels():
    with pytest.raises(RuntimeError, match=r"tl\.load can only be called inside a @tilec\.jit"):
        tl.load(None)
    assert tl.cdiv(10, 4) == 3


def test_return_inside_a_runtime_loop_is_rejected():
    err = compile_error(bad.returns_in_loop, {"x_ptr": "*fp32", "n": "i32"})
    assert err.line == line_of("for _step in range(n):")
    assert "'return' inside a loop is not supported yet" in err.message


def test_a_zero_loop_step_is_rejected():
    err = compile_error(bad.counts_by_zero, {"x_ptr": "*fp32", "n": "i32"})
    assert err.line == line_of("range(n, 0, 0)")
    assert err.message == "loop step must not be zero"


def test_missing_constexpr_names_the_parameter():
    with pytest.raises(TypeError, match="constexpr parameter 'BLOCK' of needs_block has no value"):
        compile_to_tir(bad.needs_block, {"x_ptr": "*fp32"}, {})


def test_constexpr_default_and_early_return_skip_the_rest():
    module = compile_to_tir(bad.early_return, {"x_ptr": "*fp32"}, {})
    assert [op.name for op in module.walk()] == ["builtin.module", "func.func", "tile.return"]
