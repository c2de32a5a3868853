"""assign-layouts and to_gir: the layouts chosen for known kernels, and gir's promises on all."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from layout_kernels import EXAMPLE_KERNELS, SMALL_KERNELS, example_tir, small_tir

import tilec
import tilec.language as tl
from tilec.dialects.gpu import BlockedEncodingAttr, SliceEncodingAttr, layout_of
from tilec.ir import Diagnostic, parse_module, print_module
from tilec.ir.attributes import IntegerAttr
from tilec.ir.types import TensorType, i32
from tilec.layout.assignment import to_gir, verify_gir
from tilec.layout.mapping import thread_mapping
from tilec.layout.rules import GpuTarget, LayoutRules
from tilec.pipeline import plugin_pass_manager


def target(lanes: int = 32, warps: int = 4) -> GpuTarget:
    return GpuTarget(LayoutRules(threads_per_warp=lanes), "test", warps)


def gir(name: str, lanes: int = 32, warps: int = 4, divisible: bool = True):
    module = example_tir(name, divisible=divisible) if name in EXAMPLE_KERNELS else None
    if module is None:
        module = small_tir(name, divisible=divisible)
    to_gir(module, target(lanes, warps), plugin_pass_manager())
    return module


def ops_named(module, name: str) -> list:
    return [op for op in module.walk() if op.name == name]


def blocked(spt, tpw, wpc, order) -> BlockedEncodingAttr:
    return BlockedEncodingAttr(spt, tpw, wpc, order)


@pytest.mark.parametrize(
    ("lanes", "warps", "divisible", "expected"),
    [
        (32, 4, True, blocked([4], [32], [4], [0])),
        (32, 4, False, blocked([1], [32], [4], [0])),
        (64, 4, True, blocked([4], [64], [4], [0])),
        (32, 8, True, blocked([4], [32], [8], [0])),
        (64, 8, True, blocked([2], [64], [8], [0])),
    ],
)
def test_vector_add_is_coalesced(lanes, warps, divisible, expected):
    module = gir("vector_add", lanes, warps, divisible)
    layouts = {layout_of(v.type) for op in module.walk() for v in op.results if layout_of(v.type)}
    assert layouts == {expected}
    assert not ops_named(module, "gpu.convert_layout")
    func = ops_named(module, "func.func")[0]
    assert func.attributes["gpu.num_warps"].value == warps
    assert func.attributes["gpu.threads_per_warp"].value == lanes


def test_softmax_row_reductions_give_scalars_without_conversions():
    module = gir("softmax")
    load = ops_named(module, "tile.load")[0]
    assert layout_of(load.results[0].type) == blocked([4], [32], [4], [0])
    for reduce in ops_named(module, "tile.reduce"):
        assert not isinstance(reduce.results[0].type, TensorType)
    assert not ops_named(module, "gpu.convert_layout")


def test_two_dimensional_reduction_gives_a_slice_of_the_loaded_layout():
    module = gir("softmax_2d")
    load = ops_named(module, "tile.load")[0]
    layout = layout_of(load.results[0].type)
    assert layout == blocked([1, 4], [1, 32], [2, 2], [1, 0])
    for reduce in ops_named(module, "tile.reduce"):
        assert reduce.results[0].type.encoding == SliceEncodingAttr(1, layout)
    for expand in ops_named(module, "tile.expand_dims"):
        assert expand.operands[0].type.encoding == SliceEncodingAttr(
            expand.attributes["axis"].value, expand.results[0].type.encoding
        )
    assert not ops_named(module, "gpu.convert_layout")


def test_expand_dims_and_broadcast_take_slices_of_the_store_layout():
    module = gir("outer_add")
    store = ops_named(module, "tile.store")[0]
    layout = layout_of(store.operands[0].type)
    assert layout == blocked([1, 4], [2, 16], [4, 1], [1, 0])
    sources = {e.operands[0].type.encoding for e in ops_named(module, "tile.expand_dims")}
    assert sources == {SliceEncodingAttr(1, layout), SliceEncodingAttr(0, layout)}
    # the 1-D loads (fewer elements than the 128 threads) are loaded in the slices themselves,
    # as Triton rematerializes small loads: no conversion is left
    assert ops_named(module, "gpu.convert_layout") == []
    loads = {e.results[0].type.encoding for e in ops_named(module, "tile.load")}
    assert loads == {SliceEncodingAttr(1, layout), SliceEncodingAttr(0, layout)}


def test_matmul_loop_carries_the_accumulator_in_one_blocked_layout():
    module = gir("matmul")
    (loop,) = ops_named(module, "scf.for")
    (dot,) = ops_named(module, "tile.dot")
    (store,) = ops_named(module, "tile.store")
    layout = layout_of(loop.results[0].type)
    assert isinstance(layout, BlockedEncodingAttr)
    carried = [loop.operands[3], loop.regions[0].block.args[1], dot.operands[2], dot.results[0]]
    carried.append(loop.regions[0].block.last_op.operands[0])
    assert {layout_of(v.type) for v in carried} == {layout}
    assert layout_of(store.operands[1].type) == layout


@pytest.mark.parametrize("lanes", [32, 64])
def test_sixty_four_lanes(lanes):
    module = gir("softmax_2d", lanes=lanes)
    for op in module.walk():
        for value in op.results:
            layout = layout_of(value.type)
            if layout is not None:
                assert layout.lanes == lanes


ALL_KERNELS = [*EXAMPLE_KERNELS, *SMALL_KERNELS]


@pytest.mark.parametrize(
    ("name", "lanes", "warps"), list(itertools.product(ALL_KERNELS, [32, 64], [1, 4, 8]))
)
def test_every_kernel_becomes_valid_gir_that_round_trips(name, lanes, warps):
    module = gir(name, lanes, warps)
    verify_gir(module)
    text = print_module(module)
    reparsed = parse_module(text)
    verify_gir(reparsed)
    assert print_module(reparsed) == text


def _layouts_and_shapes(module) -> set:
    found = set()
    for op in module.walk():
        values = list(op.results)
        for region in op.regions:
            for block in region.blocks:
                values.extend(block.args)
        for value in values:
            if isinstance(value.type, TensorType):
                found.add((value.type.encoding, value.type.shape))
    return found


@pytest.mark.parametrize(("lanes", "warps"), [(32, 4), (64, 8), (32, 1)])
def test_every_element_has_exactly_one_owner(lanes, warps):
    seen = set()
    for name in ALL_KERNELS:
        seen |= _layouts_and_shapes(gir(name, lanes, warps))
    assert seen
    for layout, shape in seen:
        mapping = thread_mapping(layout, shape)
        owners: Counter = Counter()
        for lane, warp in itertools.product(range(lanes), range(warps)):
            coords = mapping.coords(lane, warp)
            for coord, owned in zip(coords, mapping.owns(lane, warp), strict=True):
                if owned:
                    owners[coord] += 1
        elements = set(itertools.product(*(range(d) for d in shape)))
        assert set(owners) == elements, (layout, shape)
        assert set(owners.values()) == {1}, (layout, shape)


def test_verify_gir_reports_missing_launch_facts_and_layouts():
    module = example_tir("vector_add")
    with pytest.raises(Diagnostic, match=r"needs? 'gpu\.num_warps'"):
        verify_gir(module)
    func = ops_named(module, "func.func")[0]
    func.attributes["gpu.num_warps"] = IntegerAttr(4, i32)
    func.attributes["gpu.threads_per_warp"] = IntegerAttr(32, i32)
    with pytest.raises(Diagnostic, match=r"tensor<1024xi32> has no layout in gir"):
        verify_gir(module)


def test_verify_gir_reports_layouts_for_other_warps():
    module = gir("vector_add", warps=4)
    func = ops_named(module, "func.func")[0]
    func.attributes["gpu.num_warps"] = IntegerAttr(8, i32)
    with pytest.raises(Diagnostic, match=r"is for 4 warps of 32 lanes, but the function has 8"):
        verify_gir(module)


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_core_cleanup_passes_keep_gir_valid(name):
    module = gir(name, lanes=64)
    plugin_pass_manager().run(module, ["canonicalize", "licm", "cse", "dce"])
    verify_gir(module)


def test_opt_takes_the_gir_target(tmp_path, capsys):
    from tilec import cli

    path = tmp_path / "add.tir"
    path.write_text(print_module(example_tir("vector_add")))
    assert (
        cli.main(["opt", str(path), "--passes", "assign-layouts", "--threads-per-warp", "64"]) == 0
    )
    assert "threadsPerWarp = [64], warpsPerCTA = [4]" in capsys.readouterr().out
    assert cli.main(["opt", str(path), "--passes", "assign-layouts", "--num-warps", "6"]) == 1
    assert "--num-warps must be a power of two, got 6" in capsys.readouterr().err


def test_a_kernel_with_a_tensor_argument_is_a_located_error(tmp_path, capsys):
    """Before, layout assignment gave the argument a layout its signature lacked and the
    verifier reported "pass 'assign-layouts' produced invalid IR"."""
    from tilec import cli

    path = tmp_path / "k.tir"
    path.write_text("func.func @k(%a: tensor<4xf32>, %p: !tile.ptr<f32>) {\n  tile.return\n}\n")
    assert cli.main(["opt", str(path), "--passes", "assign-layouts"]) == 1
    err = capsys.readouterr().err
    assert "k.tir:1:1: error: 'func.func' op argument #0 is a tensor (tensor<4xf32>)" in err
    assert "produced invalid IR" not in err


ARGMAX_OF_CONSTANTS = """func.func @k(%o: !tile.ptr<i32>) {
  %0 = arith.constant {value = dense<0> : tensor<1x1xi32>} : tensor<1x1xi32>
  %1 = tile.make_range {start = 0 : i32, end = 1 : i32} : tensor<1xi32>
  %2 = tile.splat %o : tensor<1x!tile.ptr<i32>>
  %3 = tile.addptr %2, %1 : tensor<1x!tile.ptr<i32>>
  %4 = tile.reshape %1 : tensor<1x1xi32>
  %5, %6 = tile.reduce %0, %4 {axis = 0 : i32} : tensor<1xi32>, tensor<1xi32> {
  ^bb0(%7: i32, %8: i32, %9: i32, %10: i32):
    %11 = arith.cmpi %7, %9 {predicate = "sgt"} : i1
    %12 = arith.cmpi %7, %9 {predicate = "eq"} : i1
    %13 = arith.cmpi %8, %10 {predicate = "slt"} : i1
    %14 = arith.andi %12, %13 : i1
    %15 = arith.ori %11, %14 : i1
    %16 = arith.select %15, %7, %9 : i32
    %17 = arith.select %15, %8, %10 : i32
    tile.reduce.return %16, %17
  }
  tile.store %3, %6
  tile.return
}
"""


@pytest.mark.parametrize("lanes", [32, 64])
def test_a_reduction_of_a_constant_gets_its_layout_before_its_operands_are_copied(lanes):
    """`tl.argmax(tl.zeros([1, 1], tl.int32), 0)` (the tir above) was "max() arg is an empty
    sequence": the store asked for the reduction's layout after the constant operand had been
    copied into it, and the copy belonged to no class."""
    module = parse_module(ARGMAX_OF_CONSTANTS, "argmax.tir")
    to_gir(module, target(lanes), plugin_pass_manager())
    reduce = ops_named(module, "tile.reduce")[0]
    assert isinstance(layout_of(reduce.results[1].type), SliceEncodingAttr)


def test_a_kernel_with_a_laid_out_tensor_argument_is_a_located_error(tmp_path, capsys):
    """Before, assign-layouts gave the argument another layout than its signature's, and the
    verifier reported "pass 'assign-layouts' produced invalid IR"."""
    from tilec import cli

    path = tmp_path / "k.tir"
    path.write_text(
        "#blocked = #gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], "
        "warpsPerCTA = [2], order = [0]}>\n"
        "func.func @k(%x: tensor<128xf32, #blocked>, %p: !tile.ptr<f32>) {\n"
        "  %y = arith.addf %x, %x : tensor<128xf32, #blocked>\n"
        "  tile.return\n"
        "}\n"
    )
    assert cli.main(["opt", str(path), "--passes", "assign-layouts"]) == 1
    err = capsys.readouterr().err
    assert "k.tir:2:1: error: 'func.func' op argument #0 is a tensor (tensor<128xf32, #gpu" in err
    assert "cannot keep a signature's" in err
    assert "produced invalid IR" not in err


@tilec.jit
def argmax_of_zeros(out):
    tl.store(out + tl.arange(0, 1), tl.argmax(tl.zeros([1, 1], tl.int32), 0))


def test_argmax_of_a_one_by_one_constant_compiles_for_every_gpu_backend():
    """The kernel behind ARGMAX_OF_CONSTANTS, through each GPU backend's whole pipeline."""
    for backend, arch in (("nvidia", "sm_90a"), ("amd", "gfx942")):
        compiled = tilec.compile(argmax_of_zeros, {"out": "*i32"}, backend=backend, target=arch)
        assert "tile.reduce" in compiled.asm["gir"]
