"""`JITFunction.src` and `JITFunction._unsafe_update_src`, as Triton 3.6 has them (issue 20):
Triton's own tests make kernel variants by rewriting a template's source text
(`kernel._unsafe_update_src(kernel.src.replace(...))`, their `patch_kernel`). The next launch
compiles the new text: cache keys change, launch caches and fast launches are dropped, also
those of kernels that inline the updated one."""

from pathlib import Path

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.frontend import CompilationError
from tilec.runtime import JITFunction


@tilec.jit
def template(x_ptr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + offsets)  # noqa: F841 (read by the replacement)
    z = GENERATE_TEST_HERE  # noqa: F821 (replaced before a launch)
    tl.store(x_ptr + offsets, z)


TEMPLATE_LINE = (
    Path(__file__)
    .read_text()
    .splitlines()
    .index("    z = GENERATE_TEST_HERE  # noqa: F821 (replaced before a launch)")
    + 1
)
"""The file's line of `z = GENERATE_TEST_HERE`."""


@tilec.jit
def plus_one(x):
    return x + 1


@tilec.jit
def calls_plus_one(x_ptr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    tl.store(x_ptr + offsets, plus_one(tl.load(x_ptr + offsets)))


def patch_kernel(kernel, to_replace: dict[str, str]):
    """Triton's test-suite helper, as it runs in GPU mode."""
    patched = JITFunction(kernel.fn)
    for key, value in to_replace.items():
        patched._unsafe_update_src(patched.src.replace(key, value))
    return patched


def _run(kernel, times: int = 1, launch=None) -> np.ndarray:
    x = np.arange(8, dtype=np.float32)
    for _ in range(times):
        x = np.arange(8, dtype=np.float32)
        (launch or kernel[(1,)])(x, 8, backend="interp")
    return x


def test_src_is_the_text_from_the_def_and_cannot_be_set():
    assert template.src.startswith("def template(x_ptr, N: tl.constexpr):\n")
    assert "@tilec.jit" not in template.src
    with pytest.raises(AttributeError, match="Use '_unsafe_update_src\\(\\)'"):
        template.src = template.src


def test_patched_variants_of_a_template_compile_their_own_text():
    doubled = patch_kernel(template, {"GENERATE_TEST_HERE": "x * 2"})
    squared = patch_kernel(template, {"GENERATE_TEST_HERE": "x * x"})
    np.testing.assert_array_equal(_run(doubled, 2), np.arange(8) * 2)
    np.testing.assert_array_equal(_run(squared, 2), np.arange(8) ** 2)
    assert "GENERATE_TEST_HERE" in template.src  # the template itself is unchanged
    assert doubled.cache_key != squared.cache_key


def test_an_update_after_launches_drops_the_fast_launches():
    kernel = patch_kernel(template, {"GENERATE_TEST_HERE": "x + 1"})
    launch = kernel[(1,)]  # held across the update, as a caller may
    np.testing.assert_array_equal(_run(kernel, 3, launch), np.arange(8) + 1)
    key = kernel.cache_key
    kernel._unsafe_update_src(kernel.src.replace("x + 1", "x - 1"))
    assert kernel.cache_key != key
    np.testing.assert_array_equal(_run(kernel, 3, launch), np.arange(8) - 1)
    np.testing.assert_array_equal(_run(kernel, 1), np.arange(8) - 1)
    kernel._unsafe_update_src(kernel.src.replace("x - 1", "x + 1"))
    assert kernel.cache_key == key  # the same text, the same key
    np.testing.assert_array_equal(_run(kernel, 2, launch), np.arange(8) + 1)


def test_kernels_that_inline_an_updated_function_compile_it_anew():
    helper_src = plus_one.src
    try:
        np.testing.assert_array_equal(_run(calls_plus_one, 3), np.arange(8) + 1)
        plus_one._unsafe_update_src(helper_src.replace("x + 1", "x + 10"))
        np.testing.assert_array_equal(_run(calls_plus_one, 3), np.arange(8) + 10)
    finally:
        plus_one._unsafe_update_src(helper_src)
    np.testing.assert_array_equal(_run(calls_plus_one, 1), np.arange(8) + 1)


def test_errors_in_an_updated_source_name_the_templates_line():
    broken = patch_kernel(template, {"GENERATE_TEST_HERE": "x + undefined_name"})
    with pytest.raises(CompilationError) as info:
        _run(broken)
    assert (info.value.file, info.value.line) == (__file__, TEMPLATE_LINE)
    assert "    z = x + undefined_name  #" in str(info.value)  # the line that was compiled
