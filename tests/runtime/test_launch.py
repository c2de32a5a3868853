"""`kernel[grid](...)` on the interpreter against NumPy, backend selection and argument errors."""

import numpy as np
import pytest
from frontend_kernels import add_kernel, softmax_kernel

import tilec
from tilec.runtime import compiler

ADD_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}


def add_inputs(rng, n=98432):
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    return x, y, np.empty_like(x)


def test_vector_add_grid_tuple(rng):
    x, y, out = add_inputs(rng)
    add_kernel[(tilec.cdiv(x.size, 1024),)](x, y, out, x.size, BLOCK_SIZE=1024)
    np.testing.assert_array_equal(out, x + y)


def test_vector_add_grid_callable_and_repeat(rng):
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (tilec.cdiv(meta["n_elements"], meta["BLOCK_SIZE"]),)

    for n in (98432, 1000, 1):
        x, y, out = add_inputs(rng, n)
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=256, num_warps=8)
        np.testing.assert_array_equal(out, x + y)
    assert seen[0]["BLOCK_SIZE"] == 256 and seen[0]["n_elements"] == 98432
    assert seen[2]["n_elements"] == 1


def test_softmax(rng):
    rows, cols = 37, 100
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out = np.empty_like(x)
    softmax_kernel[rows](out, x, cols, cols, n_cols=cols, BLOCK=128)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_backend_selection_order(monkeypatch, rng):
    # Automatic: no GPU here, so interp.
    assert compiler.get_backend().name == "interp"
    monkeypatch.setenv("TILEC_BACKEND", "nvidia")
    with pytest.raises(RuntimeError, match="backend 'nvidia' is not available: "):
        compiler.get_backend()
    tilec.set_backend("interp")  # set_backend wins over the environment
    assert compiler.get_backend().name == "interp"
    x, y, out = add_inputs(rng, 64)
    add_kernel[(1,)](x, y, out, 64, BLOCK_SIZE=64)
    np.testing.assert_array_equal(out, x + y)
    with pytest.raises(RuntimeError, match="'nvidia' is not available"):  # backend= wins
        add_kernel[(1,)](x, y, out, 64, BLOCK_SIZE=64, backend="nvidia")
    with pytest.raises(ValueError, match=r"unknown backend 'cuda'; known backends: .*interp"):
        tilec.set_backend("cuda")
    monkeypatch.setenv("TILEC_BACKEND", "cuda")
    tilec.set_backend(None)
    with pytest.raises(ValueError, match="known backends"):
        add_kernel[(1,)](x, y, out, 64, BLOCK_SIZE=64)


@pytest.mark.parametrize(
    ("args", "meta", "message"),
    [
        (("LIST", "Y", "OUT", 8), {"BLOCK_SIZE": 8}, "'x_ptr'.*list"),
        (("X", "Y", "OUT", 8), {}, "missing constexpr 'BLOCK_SIZE'"),
        (("X", "Y", "OUT"), {"BLOCK_SIZE": 8}, "missing argument 'n_elements'"),
        (("X", "Y", "OUT", 8, 8, 8), {}, "takes 5 arguments"),
        (("X", "Y", "OUT", 8), {"BLOCK_SIZE": 8, "bogus": 1}, "unknown keyword 'bogus'"),
        (("X", "Y", "OUT", 8), {"BLOCK_SIZE": 8, "x_ptr": 1}, "multiple values for .*'x_ptr'"),
        (("X", "Y", "OUT", 2**70), {"BLOCK_SIZE": 8}, "'n_elements'.*64 bits"),
    ],
)
def test_argument_errors(args, meta, message):
    values = {"X": np.zeros(8, np.float32), "Y": np.zeros(8, np.float32)}
    values |= {"OUT": np.zeros(8, np.float32), "LIST": [0.0] * 8}
    args = tuple(values.get(a, a) if isinstance(a, str) else a for a in args)
    with pytest.raises(TypeError, match=message):
        add_kernel[(1,)](*args, **meta)


def test_bad_option_value_names_option():
    x = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="num_warps"):
        add_kernel[(1,)](x, x, x, 8, BLOCK_SIZE=8, num_warps=3)


def test_signature_inference():
    from tilec.runtime.specialization import arg_type

    assert arg_type("k", "p", np.zeros(4, np.float16)) == ("*fp16", True)
    assert arg_type("k", "p", np.zeros(4, np.int32))[0] == "*i32"
    assert arg_type("k", "p", np.zeros(4, bool))[0] == "*i1"
    assert arg_type("k", "p", np.zeros(5, np.int8)[1:])[1] is False
    assert arg_type("k", "p", 1000) == ("i32", False)
    assert arg_type("k", "p", 1024) == ("i32", True)
    assert arg_type("k", "p", 2**40)[0] == "i64"
    assert arg_type("k", "p", 1.5) == ("fp32", False)
    assert arg_type("k", "p", True) == ("i1", False)


def test_compile_ahead_of_time_divisibility():
    def tir(n):
        return tilec.compile(
            add_kernel,
            signature=ADD_SIGNATURE,
            constexprs={"BLOCK_SIZE": 1024},
            backend="interp",
            divisibility=["n_elements"] if n % 16 == 0 else [],
        ).asm["tir"]

    assert set(tilec.compile(add_kernel, ADD_SIGNATURE, {"BLOCK_SIZE": 8}).asm) == {"tir"}
    assert "%n_elements: i32 {tile.divisibility = 16}" in tir(1024)
    assert "%n_elements: i32 {tile.divisibility = 16}" not in tir(1000)


def test_launch_divisibility(rng):
    for n, divisible in ((1024, True), (1000, False)):
        x, y, out = add_inputs(rng, n)
        add_kernel[(tilec.cdiv(n, 128),)](x, y, out, n, BLOCK_SIZE=128)
        np.testing.assert_array_equal(out, x + y)
        text = list(compiler.cache.memory.values())[-1].asm["tir"]
        assert ("%n_elements: i32 {tile.divisibility = 16}" in text) is divisible
