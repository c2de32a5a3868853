"""The compile cache key covers what a kernel depends on by name: the `@jit` functions it calls
(recursively) and the constexpr-like globals it reads, so editing a callee or rebinding a global
recompiles, in memory and on disk, while unrelated globals leave the key alone."""

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import tilec
from tilec.runtime import cache

MODULE = """
import tilec
import tilec.language as tl

SCALE = {scale}
BLOCK = tl.constexpr(16)
UNRELATED = 1


@tilec.jit
def helper(x):
    return x * SCALE + {offset}


@tilec.jit
def kernel(x_ptr, out_ptr, n):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, helper(x), mask=mask)
"""


@pytest.fixture
def load(tmp_path):
    """Write the kernel module with the given `scale`/`offset` and import it afresh."""
    count = [0]

    def load(scale=2.0, offset=1.0):
        count[0] += 1
        name = f"tilec_cache_dep_{count[0]}"
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(MODULE.format(scale=scale, offset=offset)))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    yield load
    for i in range(1, count[0] + 1):
        sys.modules.pop(f"tilec_cache_dep_{i}", None)


def run(module, n=40):
    x = np.arange(n, dtype=np.float32)
    out = np.empty_like(x)
    module.kernel[(tilec.cdiv(n, 16),)](x, out, n, backend="interp")
    return x, out


def test_changed_callee_body_recompiles(load):
    first = load(offset=1.0)
    x, out = run(first)
    np.testing.assert_array_equal(out, x * 2 + 1)
    second = load(offset=5.0)  # same kernel source, different callee body
    assert second.kernel.src == first.kernel.src
    assert second.kernel.cache_key != first.kernel.cache_key
    x, out = run(second)
    np.testing.assert_array_equal(out, x * 2 + 5)


def test_rebound_callee_between_launches(load):
    module, other = load(offset=1.0), load(offset=7.0)
    run(module)
    key = module.kernel.cache_key
    module.helper = other.helper  # rebinding the name the kernel calls
    assert module.kernel.cache_key != key
    x, out = run(module)
    np.testing.assert_array_equal(out, x * 2 + 7)


def test_changed_global_constant_recompiles(load):
    module = load(scale=2.0)
    x, out = run(module)
    np.testing.assert_array_equal(out, x * 2 + 1)
    key = module.kernel.cache_key
    module.SCALE = 3.0  # read by the callee: a dependency of the kernel through it
    assert module.kernel.cache_key != key
    x, out = run(module)
    np.testing.assert_array_equal(out, x * 3 + 1)
    module.SCALE = 2.0
    assert module.kernel.cache_key == key
    x, out = run(module)
    np.testing.assert_array_equal(out, x * 2 + 1)


def test_changed_constexpr_global_recompiles(load):
    module = load()
    key = module.kernel.cache_key
    module.BLOCK = module.tl.constexpr(32)
    assert module.kernel.cache_key != key
    x, out = run(module, n=100)
    np.testing.assert_array_equal(out, x * 2 + 1)


def test_unrelated_globals_keep_the_key(load):
    module = load()
    key = module.kernel.cache_key
    module.UNRELATED = 2
    module.NEW_GLOBAL = 3.0
    assert module.kernel.cache_key == key
    assert load().kernel.cache_key == key  # same sources and values in a fresh module


def test_disk_cache_keyed_by_dependencies(load):
    x, out = run(load(offset=1.0))
    np.testing.assert_array_equal(out, x * 2 + 1)
    cache.clear_memory()
    x, out = run(load(offset=4.0))  # fresh memory cache, changed callee: no stale disk hit
    np.testing.assert_array_equal(out, x * 2 + 4)
    assert len(list(cache.cache_dir().glob("*.json"))) == 2
    cache.clear_memory()
    x, out = run(load(offset=1.0))  # the first entry is still valid and reused
    np.testing.assert_array_equal(out, x * 2 + 1)
    assert len(list(cache.cache_dir().glob("*.json"))) == 2


def test_cyclic_references_terminate(tmp_path):
    path = tmp_path / "tilec_cache_dep_cycle.py"
    path.write_text(
        "import tilec\n\n\n@tilec.jit\ndef ping(x):\n    return pong(x)\n\n\n"
        "@tilec.jit\ndef pong(x):\n    return ping(x)\n"
    )
    spec = importlib.util.spec_from_file_location("tilec_cache_dep_cycle", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert len(module.ping.cache_key) == 64
    assert module.ping.cache_key != module.pong.cache_key
