"""`tl.load`/`tl.store` take Triton's cache modifiers and eviction policies (issue 20), and
`tl.load` `volatile=True`: the tir carries them as the ops' `cache`/`eviction`/`volatile` attributes (the backends emit them, tests/nvidia and
tests/amd), the interpreter's results are those without them, and values Triton refuses are
refused with Triton's message, located."""

import numpy as np
import pytest
from compat_helpers import compile_error, run_interp

import tilec
import tilec.language as tl
from tilec.frontend import compile_to_tir


@tilec.jit
def hinted_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr, LOAD_CACHE: tl.constexpr,
                STORE_CACHE: tl.constexpr, EVICTION: tl.constexpr):  # fmt: skip
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=-1.0, cache_modifier=LOAD_CACHE,
                eviction_policy=EVICTION)  # fmt: skip
    tl.store(y_ptr + offsets, x * 2, mask=mask, cache_modifier=STORE_CACHE,
             eviction_policy=EVICTION)  # fmt: skip


@tilec.jit
def hinted_block_pointer(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    src = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    dst = tl.make_block_ptr(y_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    x = tl.load(src, boundary_check=(0,), cache_modifier=".cg", eviction_policy="evict_last")
    tl.store(dst, x, boundary_check=(0,), cache_modifier=".cs", eviction_policy="evict_first")


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}


def _hints(load="", store="", eviction=""):
    return {"BLOCK": 64, "LOAD_CACHE": load, "STORE_CACHE": store, "EVICTION": eviction}


@pytest.mark.parametrize("load", ["", ".ca", ".cg", ".cv"])
@pytest.mark.parametrize("store", ["", ".wb", ".cg", ".cs", ".wt"])
@pytest.mark.parametrize("eviction", ["", "evict_first", "evict_last"])
def test_hints_do_not_change_the_interpreters_results(load, store, eviction):
    x = np.arange(50, dtype=np.float32)
    y = np.zeros(64, np.float32)
    run_interp(hinted_copy, SIGNATURE, [x, y, 50], **_hints(load, store, eviction))
    np.testing.assert_array_equal(y[:50], 2 * x)
    assert not y[50:].any()


def test_the_tir_carries_the_hints():
    tir = str(compile_to_tir(hinted_copy, SIGNATURE, _hints(".cg", ".wt", "evict_first")))
    assert "tile.load" in tir and '{cache = ".cg", eviction = "evict_first"}' in tir
    assert '{cache = ".wt", eviction = "evict_first"}' in tir
    plain = str(compile_to_tir(hinted_copy, SIGNATURE, _hints()))
    assert "cache =" not in plain and "eviction =" not in plain


def test_block_pointers_carry_the_hints():
    tir = str(compile_to_tir(hinted_block_pointer, SIGNATURE, {"BLOCK": 64}))
    assert '{cache = ".cg", eviction = "evict_last"}' in tir
    assert '{cache = ".cs", eviction = "evict_first"}' in tir
    x = np.arange(50, dtype=np.float32)
    y = np.zeros(50, np.float32)
    run_interp(hinted_block_pointer, SIGNATURE, [x, y, 50], BLOCK=64)
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize(
    ("hints", "message"),
    [
        (_hints(load=".cs"), "Cache modifier .cs not supported"),
        (_hints(load=".wb"), "Cache modifier .wb not supported"),
        (_hints(store=".ca"), "Cache modifier .ca not supported"),
        (_hints(store=".cv"), "Cache modifier .cv not supported"),
        (_hints(eviction="evict_normal"), "Eviction policy evict_normal not supported"),
        (_hints(eviction="first"), "Eviction policy first not supported"),
    ],
)
def test_values_triton_refuses_are_refused_with_its_message(hints, message):
    error = compile_error(hinted_copy, SIGNATURE, **hints)
    assert message in error.message, error.message


@tilec.jit
def volatile_copy(x_ptr, y_ptr, VOLATILE: tl.constexpr):
    offsets = tl.arange(0, 16)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, volatile=VOLATILE, cache_modifier=".cg"))


def test_volatile_loads():
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32"}
    tir = str(compile_to_tir(volatile_copy, signature, {"VOLATILE": True}))
    assert '{cache = ".cg", volatile = unit}' in tir
    assert "volatile =" not in str(compile_to_tir(volatile_copy, signature, {"VOLATILE": False}))
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    run_interp(volatile_copy, signature, [x, y], VOLATILE=True)
    np.testing.assert_array_equal(y, x)
    error = compile_error(volatile_copy, signature, VOLATILE="yes")
    assert "tl.load's volatile must be True or False, got 'yes'" in error.message


@tilec.jit
def method_store(x_ptr, y_ptr, count_ptr):
    offsets = tl.arange(0, 16)
    (y_ptr + offsets).store(tl.load(x_ptr + offsets), cache_modifier=".cs")
    count_ptr.atomic_add(1)


def test_pointer_methods_store_and_atomics():
    """Triton's `ptrs.store(value, ...)` and `ptr.atomic_add(v)` (its tensor member functions)."""
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "count_ptr": "*i32"}
    assert '{cache = ".cs"}' in str(compile_to_tir(method_store, signature, {}))
    x, y, count = np.arange(16, dtype=np.float32), np.zeros(16, np.float32), np.zeros(1, np.int32)
    run_interp(method_store, signature, [x, y, count], grid=(3,))
    np.testing.assert_array_equal(y, x)
    assert count[0] == 3
