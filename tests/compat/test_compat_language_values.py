"""Triton 3.6 language features (issue 20): `x.item()`, tensor indexing exactly as Triton's
`tensor.__getitem__`, `tl.map_elementwise` (if-converted, packs), `tl.range`'s hints,
`tl.condition`, `tl.tuple`, `tl.slice`, `tl.void`, `tl.constexpr_type` and `tl.const`. The
kernels run on interp; the nvidia compile path (to PTX, no GPU) must accept them too."""

import collections

import numpy as np
import pytest
from compat_helpers import compile_error, run_interp
from compat_language_kernels import (
    bad_index,
    bad_map,
    bad_python_index,
    count_down_kernel,
    index_shapes,
    item_kernel,
    licm_kernel,
    loop_kernel,
    map_kernel,
    namedtuple_argument,
    sort_defaults,
    target_kernel,
    tuple_argument,
    unroll_kernel,
    unsplat_condition,
    values_kernel,
)

import tilec
import tilec.language as tl
from tilec.frontend import compile_to_tir

MAP_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"}


def ptx_of(kernel, signature, **constexprs) -> str:
    compiled = tilec.compile(kernel, signature, constexprs, backend="nvidia", target="sm_90a")
    return compiled.asm["ptx"]


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
def test_item_is_the_one_element_as_a_scalar(shape):
    out = np.zeros(1, np.float32)
    run_interp(item_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, [np.float32([-2.5]), out],
               SHAPE=shape)  # fmt: skip
    assert out[0] == -5.0
    assert ".entry item_kernel" in ptx_of(item_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
                                          SHAPE=shape)  # fmt: skip


def test_item_of_several_elements_is_a_located_error():
    error = compile_error(item_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, SHAPE=(2,), NUMEL=2)
    assert "needs a single-element tensor" in error.message


def test_none_and_colon_index_as_in_triton():
    out = np.zeros(8, np.int32)
    run_interp(index_shapes, {"out_ptr": "*i32"}, [out], N=8, NONE=None)
    assert list(out) == list(range(8))


@pytest.mark.parametrize(
    ("which", "shown"),
    [("int", "0"), ("bounded", "slice(1, None, None)"), ("mixed", "2"),
     ("pointer", "slice(10, None, None)")],
)  # fmt: skip
def test_other_indices_are_refused_as_triton_refuses_them(which, shown):
    error = compile_error(bad_index, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, N=8, WHICH=which)
    assert f"unsupported tensor index: {shown}" in error.message


def _map(which, x, y):
    out = np.zeros_like(x)
    run_interp(map_kernel, MAP_SIGNATURE, [x, y, out], N=x.size, WHICH=which)
    return out


def test_map_elementwise_takes_each_branch_per_element():
    x = np.float32([3.0, -1.0, 0.0, -0.5, 2.0, -3.0, 1.0, 0.25])
    out = _map("selu", x, x)
    np.testing.assert_allclose(out, np.where(x > 0, x, 2 * (np.exp(x) - 1)), rtol=1e-6)


def test_map_elementwise_merges_early_returns_of_constants():
    x = np.float32([-3, -1, 0, 2, 5, -8, 9, 0])
    y = np.float32([-4, 1, 0, 1, 7, -8, 3, 2])
    np.testing.assert_array_equal(_map("classify", x, y), np.sign(x - y) * 1)


def test_map_elementwise_divides_only_where_the_branch_applies():
    x = np.float32([7, -9, 5, 0, 12, 3, -4, 8])
    y = np.float32([2, 0, -3, 0, 5, 0, 3, 4])
    q = np.where(y != 0, np.trunc(x / np.where(y == 0, 1, y)), 0)
    np.testing.assert_array_equal(_map("safe_div", x, y), q * 1000 + (x - q))


def test_map_elementwise_packs_consecutive_elements():
    x = np.float32([7, 9, 5, 0, 12, 3, 4, 8])
    y = np.float32([2, 4, 3, 1, 5, 2, 3, 4])
    q, r = x // y, x % y
    np.testing.assert_array_equal(_map("pack2", x, y), q * 1000 + r)


@pytest.mark.parametrize("which", ["selu", "classify", "safe_div", "pack2"])
def test_map_elementwise_compiles_for_nvidia(which):
    assert ".entry map_kernel" in ptx_of(map_kernel, MAP_SIGNATURE, N=128, WHICH=which)


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("store", "tl.store under a per-element condition ('if' or loop)"),
        ("while", "tl.store under a per-element condition ('if' or loop)"),
        ("pack", "pack (3) must divide the last dimension"),
    ],
)
def test_map_elementwise_refuses_what_it_cannot_honour(which, message):
    error = compile_error(bad_map, {"x_ptr": "*fp32"}, N=8, WHICH=which)
    assert message in error.message


def _steps(v: int) -> int:
    steps = 0
    while v != 1:
        v, steps = (v // 2 if v % 2 == 0 else 3 * v + 1), steps + 1
    return steps


@pytest.mark.parametrize("which", ["collatz", "odd_sum"])
def test_map_elementwise_loops_per_element(which):
    x = np.arange(1, 33, dtype=np.int32)
    out = np.zeros_like(x)
    run_interp(loop_kernel, {"x_ptr": "*i32", "out_ptr": "*i32"}, [x, out], N=32, WHICH=which)
    if which == "collatz":
        expected = [_steps(int(v)) for v in x]
    else:
        expected = [sum(range(1, int(v) + 1, 2)) for v in x]
    np.testing.assert_array_equal(out, expected)
    signature = {"x_ptr": "*i32", "out_ptr": "*i32"}
    assert ".entry loop_kernel" in ptx_of(loop_kernel, signature, N=128, WHICH=which)


def test_tuple_slice_void_constexpr_type_condition():
    x = np.float32([1, 2, 3, 4])
    out = np.zeros(1, np.float32)
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    run_interp(values_kernel, signature, [x, out, 4], STORE_CONST=False)
    assert out[0] == 1 + 10 + 3
    assert ".entry values_kernel" in ptx_of(values_kernel, signature, STORE_CONST=False)
    assert tl.constexpr_type(4) == tl.constexpr_type(4) != tl.constexpr_type(5)


def test_storing_through_a_const_pointer_is_refused_as_in_triton():
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    error = compile_error(values_kernel, signature, STORE_CONST=True)
    assert "Cannot store to a constant pointer" in error.message


@pytest.mark.parametrize("disable", [False, True])
def test_disable_licm_keeps_the_loop_invariant_in_the_loop(disable):
    signature = {"x_ptr": "*fp32", "out_ptr": "*i32", "n": "i32", "k": "i32"}
    compiled = tilec.compile(licm_kernel, signature, {"DISABLE": disable}, backend="interp")
    tir = compiled.asm["tir"]
    loop = tir[tir.index("scf.for") :]
    assert ("arith.muli" in loop) is disable
    out = np.zeros(1, np.int32)
    compiled.run((1,), [np.zeros(1, np.float32), out, 5, 2])
    assert out[0] == 5 * 6 + 10


@pytest.mark.parametrize(
    ("backend", "target", "value"),
    [("interp", None, 3), ("nvidia", "sm_80", 1), ("nvidia", "sm_90a", 11), ("amd", "gfx942", 12),
     ("amd", "gfx90a", 2)],
)  # fmt: skip
def test_target_info_answers_for_the_compile_target(backend, target, value):
    compiled = tilec.compile(target_kernel, {"out_ptr": "*i32"}, backend=backend, target=target)
    assert f"arith.constant {{value = {value} : i32}}" in compiled.asm["tir"]
    if backend == "interp":
        out = np.zeros(1, np.int32)
        compiled.run((1,), [out])
        assert out[0] == value


def test_target_info_outside_a_kernel_is_the_active_drivers():
    tilec.set_backend("interp")
    try:
        assert tl.target_info.current_target().backend == "interp"
        assert not tl.target_info.is_cuda() and not tl.target_info.is_hip()
    finally:
        tilec.set_backend(None)


@pytest.mark.parametrize("unroll", [2, 3, 4])
@pytest.mark.parametrize(("start", "stop", "step"), [(0, 13, 1), (-5, 17, 3), (5, 5, 1), (7, 3, 2)])
def test_loop_unroll_factor_unrolls_with_a_remainder_loop(unroll, start, stop, step):
    out = np.zeros(5, np.int32)
    signature = {"out_ptr": "*i32", "start": "i32", "n": "i32"}
    compiled = tilec.compile(unroll_kernel, signature, {"STEP": step, "UNROLL": unroll},
                             backend="interp")  # fmt: skip
    compiled.run((1,), [out, start, stop])
    counters = range(start, stop, step)
    assert out[0] == sum(i * i for i in counters) and list(out[1:]) == [sum(counters)] * 4
    main, rest = compiled.asm["tir"].split("scf.for")[1:3]
    assert main.count("arith.muli") == unroll * rest.count("arith.muli") > 0


@pytest.mark.parametrize(("n", "descending"), [(8, False), (8, True), (1, None), (8, 0)])
def test_sort_takes_tritons_defaults(rng, n, descending):
    x = rng.standard_normal((4, n)).astype(np.float32)
    out = np.zeros_like(x)
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    run_interp(sort_defaults, signature, [x, out], M=4, N=n, DESCENDING=descending)
    expected = np.sort(x, axis=1)
    np.testing.assert_array_equal(out, expected[:, ::-1] if descending else expected)


def test_sort_descending_none_of_several_elements_is_a_located_error():
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    error = compile_error(sort_defaults, signature, M=4, N=8, DESCENDING=None)
    assert "descending must be True or False, got None" in error.message


def test_tuple_arguments_are_their_elements_as_in_triton():
    x, y = np.arange(8, dtype=np.float32), np.full(8, 2.0, np.float32)
    out = np.zeros(8, np.float32)
    compiled = tuple_argument[(1,)]((x, (y, None)), (3, 1), out, 8, backend="interp")
    np.testing.assert_array_equal(out, x + y * 3 + 1)
    assert list(compiled.signature) == ["ptrs.0", "ptrs.1.0", "scale.0", "scale.1", "out_ptr"]
    assert compiled.constexprs["ptrs.1.1"] is None
    tuple_argument[(1,)]((x, (y, None)), (0.5, 2), out, 8, backend="interp")  # an fp32: again
    np.testing.assert_array_equal(out, x + y * 0.5 + 2)
    compiled[(1,)]((x, (y, None)), (1, 1), out, 8)
    np.testing.assert_array_equal(out, x + y + 1)
    signature = {"ptrs.0": "*fp32", "ptrs.1.0": "*fp32", "scale.0": "i32", "scale.1": "i32",
                 "out_ptr": "*fp32"}  # fmt: skip
    ptx = ptx_of(tuple_argument, signature, **{"ptrs.1.1": None, "BLOCK": 128})
    assert ptx.count(".param .u64") == 3


def test_a_list_argument_is_refused_naming_the_parameter():
    x = np.zeros(4, np.float32)
    with pytest.raises(tilec.errors.LaunchArgumentError, match="argument 'scale' of tuple_arg"):
        tuple_argument[(1,)]((x, (x, None)), [1, 2], x, 4, backend="interp")


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("runtime", "cannot index tuple with a runtime value"),
        ("range", "cannot index tuple with 5: tuple index out of range"),
        ("tensor", "unsupported tensor index: a runtime value of type i32"),
    ],
)
def test_bad_indices_are_located_errors(which, message):
    error = compile_error(bad_python_index, {"x_ptr": "*fp32", "i": "i32"}, WHICH=which)
    assert message in error.message


@pytest.mark.parametrize("unroll", [1, 3])
@pytest.mark.parametrize(
    ("start", "stop", "step"), [(10, 0, -3), (10, 1, -1), (0, 10, -1), (5, -7, -2)]
)
def test_a_negative_constant_step_counts_down_as_in_triton(unroll, start, stop, step):
    out = np.zeros(1, np.int32)
    signature = {"out_ptr": "*i32", "a": "i32", "b": "i32"}
    run_interp(count_down_kernel, signature, [out, start, stop], STEP=step, UNROLL=unroll)
    assert out[0] == sum(i * (j + 1) for j, i in enumerate(range(start, stop, step)))


@pytest.mark.filterwarnings("ignore:If conditional called with multidimensional Tensor")
@pytest.mark.parametrize("explicit", [False, True])
@pytest.mark.parametrize("value", [41, 43])
def test_if_on_a_one_element_tensor_is_its_item_as_in_triton(explicit, value):
    x = np.full(1, value, np.int32)
    run_interp(unsplat_condition, {"x_ptr": "*i32"}, [x], EXPLICIT=explicit, N=1)
    assert x[0] == min(value, 42)


def test_if_on_a_one_element_tensor_warns_as_triton_does():
    with pytest.warns(UserWarning, match=r'please use "if \(condition\).item\(\)" instead'):
        compile_to_tir(unsplat_condition, {"x_ptr": "*i32"}, {"EXPLICIT": False, "N": 1})


def test_if_on_a_tensor_of_several_elements_is_a_located_error():
    error = compile_error(unsplat_condition, {"x_ptr": "*i32"}, EXPLICIT=False, N=2)
    assert "Boolean value of Tensor with more than one value is ambiguous" in error.message


Pair = collections.namedtuple("Pair", ["data", "scale"])


def test_namedtuple_arguments_keep_their_fields_and_key_on_their_elements():
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    compiled = namedtuple_argument[(1,)](Pair(x, 3), out, backend="interp")
    np.testing.assert_array_equal(out, x * 3 + 2)
    assert compiled.constexprs == {"p.type": Pair} and compiled.signature["p.1"] == "i32"
    later = namedtuple_argument[(1,)](Pair(x, 0.5), out, backend="interp")  # fp32: another
    np.testing.assert_array_equal(out, x * 0.5 + 2)
    assert later.signature["p.1"] == "fp32"
