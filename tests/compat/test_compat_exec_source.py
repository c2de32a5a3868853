"""Kernels made with exec(): their source is read through linecache, as Triton does (issue 11)."""

import linecache

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.frontend import CompilationError, compile_to_tir
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


def test_exec_kernel_without_source_is_a_clear_error():
    with pytest.raises(SourceNotFoundError) as info:
        _exec("<tilec-compat-nowhere>", 1.0)
    text = str(info.value)
    assert "cannot read the source of kernel 'add_one'" in text
    assert "<tilec-compat-nowhere>" in text and "linecache.cache[name]" in text
