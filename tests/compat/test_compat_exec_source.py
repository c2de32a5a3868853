"""Kernels made with exec(): their source is read through linecache, as Triton does (issue 11),
and where no file or linecache entry has it, from the text Python's `compile` audit event carried
(issue 20: Triton's interpreter runs such kernels, and its test suite makes them so)."""

import ast
import linecache
import textwrap

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.frontend import CompilationError, compile_to_tir, exec_sources
from tilec.frontend.kernel import SourceNotFoundError

SOURCE = """
@tilec.jit
def add_one(x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + ONE)
"""


def _exec(name: str, one: float) -> object:
    namespace = {"tilec": tilec, "tl": tl, "ONE": one}
    exec(compile(SOURCE, name, "exec"), namespace)
    return namespace["add_one"]


def test_exec_kernel_registered_in_linecache_compiles_and_runs():
    name = "<tilec-compat-exec-1>"
    linecache.cache[name] = (len(SOURCE), None, SOURCE.splitlines(True), name)
    try:
        kernel = _exec(name, 2.0)
        x = np.arange(8, dtype=np.float32)
        signature = {"x_ptr": "*fp32"}
        tilec.compile(kernel, signature=signature, constexprs={"N": 8}, backend="interp").run(
            (1,), [x]
        )
        np.testing.assert_array_equal(x, np.arange(8) + 2)
    finally:
        linecache.cache.pop(name, None)


def test_exec_kernel_errors_point_into_the_registered_source():
    name = "<tilec-compat-exec-2>"
    linecache.cache[name] = (len(SOURCE), None, SOURCE.splitlines(True), name)
    try:
        kernel = _exec(name, 2.0)
        with pytest.raises(CompilationError) as info:
            compile_to_tir(kernel, {"x_ptr": "*fp32"}, {"N": 6})
        assert info.value.file == name and info.value.line == 4
        assert "tl.arange(0, N)" in str(info.value)
    finally:
        linecache.cache.pop(name, None)


def test_exec_kernel_compiled_from_a_tree_has_no_source_and_a_clear_error():
    namespace = {"tilec": tilec, "tl": tl, "ONE": 1.0}
    with pytest.raises(SourceNotFoundError) as info:
        exec(compile(ast.parse(SOURCE), "<tilec-compat-nowhere>", "exec"), namespace)
    text = str(info.value)
    assert "cannot read the source of kernel 'add_one'" in text
    assert "<tilec-compat-nowhere>" in text and "linecache.cache[name]" in text


TEMPLATE = textwrap.dedent(
    """
    @tilec.jit
    def kernel(x_ptr, N: tl.constexpr):
        offsets = tl.arange(0, N)
        x = tl.load(x_ptr + offsets)
        z = GENERATE_TEST_HERE
        tl.store(x_ptr + offsets, z)


    @tilec.jit
    def twice(x_ptr, N: tl.constexpr):
        kernel(x_ptr, N)
        kernel(x_ptr, N)
    """
)


def _patched(expression: str, filename: str | None = None) -> dict:
    """Kernels made as Triton's test suite makes them in interpreter mode: exec() of a rewritten
    source string, with no file name (or a file that does not exist)."""
    namespace = {"tilec": tilec, "tl": tl}
    source = TEMPLATE.replace("GENERATE_TEST_HERE", expression)
    exec(source if filename is None else compile(source, filename, "exec"), namespace)
    return namespace


def _run(kernel) -> np.ndarray:
    x = np.arange(8, dtype=np.float32)
    kernel[(1,)](x, 8, backend="interp")
    return x


def test_exec_of_a_string_with_no_file_name_compiles_from_the_compiled_text():
    doubled, squared = _patched("x * 2"), _patched("x * x")
    np.testing.assert_array_equal(_run(doubled["kernel"]), np.arange(8) * 2)
    np.testing.assert_array_equal(_run(squared["kernel"]), np.arange(8) ** 2)
    np.testing.assert_array_equal(_run(doubled["twice"]), np.arange(8) * 4)
    assert doubled["kernel"].file.startswith("<string#") and doubled["kernel"].first_line == 3
    assert doubled["kernel"].file != squared["kernel"].file


def test_exec_under_a_file_that_does_not_exist(tmp_path):
    kernel = _patched("x + 5", str(tmp_path / "missing.py"))["kernel"]
    np.testing.assert_array_equal(_run(kernel), np.arange(8) + 5)


def test_errors_in_an_exec_kernel_show_its_line():
    kernel = _patched("x * undefined_name")["kernel"]
    with pytest.raises(CompilationError) as info:
        _run(kernel)
    error = info.value
    assert error.file == kernel.file and error.line == 6
    assert "z = x * undefined_name" in str(error)


def test_the_kept_texts_stay_bounded():
    for i in range(exec_sources.KEPT + 10):
        exec(f"def unused_{i}(x):\n    return x\n", {})
    assert len(exec_sources._recent) == exec_sources.KEPT
    np.testing.assert_array_equal(_run(_patched("x - 1")["kernel"]), np.arange(8) - 1)
