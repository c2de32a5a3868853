"""The matrix-unit hooks (`tilec.lowering.matrix_units`, `tilec.layout.mapping`): a backend's
layout class gets its registered thread mapping and lowerings, subclasses inherit them, the most
derived registration wins, and a layout nobody registered is an error naming the hook."""

from __future__ import annotations

import attrs
import pytest

from tilec.dialects.gpu import LayoutEncodingAttr
from tilec.dialects.gpu_matrix import OperandEncodingAttr
from tilec.layout import mapping
from tilec.layout.mapping_types import DimMapping, ThreadMapping
from tilec.lowering import matrix_units


@attrs.frozen
class VendorAccumulator(LayoutEncodingAttr):
    """A made-up vendor's accumulator layout (never registered with the parser)."""

    name = "test.vendor_acc"
    lanes: int = 16

    @property
    def rank(self) -> int:
        return 1

    def parameters(self) -> dict:
        return {}


@attrs.frozen
class VendorAccumulatorV2(VendorAccumulator):
    name = "test.vendor_acc_v2"


@attrs.frozen
class VendorOperand(OperandEncodingAttr):
    name = "test.vendor_operand"
    parent_class = VendorAccumulator


def _one_lane_each(layout: object, shape: tuple[int, ...]) -> ThreadMapping:
    (size,) = shape
    return ThreadMapping(shape, (DimMapping(size, 1, 16, 1, 1, 1, 16),), (), ((0,),), 0, 1)


@pytest.fixture
def registries():
    """Undo the registrations of a test."""
    saved = [dict(t) for t in (matrix_units.DOT_LOWERINGS, matrix_units.CONVERSIONS)]
    saved_mappings = dict(mapping.MAPPINGS)
    yield
    for table, old in zip(
        (matrix_units.DOT_LOWERINGS, matrix_units.CONVERSIONS), saved, strict=True
    ):
        table.clear()
        table.update(old)
    mapping.MAPPINGS.clear()
    mapping.MAPPINGS.update(saved_mappings)
    mapping._thread_mapping.cache_clear()


def test_a_registered_thread_mapping_serves_the_class_and_its_subclasses(registries):
    mapping.register_thread_mapping(VendorAccumulator)(_one_lane_each)
    for layout in (VendorAccumulator(), VendorAccumulatorV2()):
        found = mapping.thread_mapping(layout, (16,))
        assert [found.coords(lane, 0) for lane in (0, 5)] == [[(0,)], [(5,)]]


def test_a_layout_without_a_thread_mapping_names_the_hook(registries):
    with pytest.raises(TypeError, match="register_thread_mapping"):
        mapping.thread_mapping(VendorAccumulator(), (16,))


def test_the_most_derived_registered_lowering_wins(registries):
    def generic(ctx, op):
        return None

    def v2(ctx, op):
        return None

    matrix_units.lowers_dot(VendorAccumulator)(generic)
    assert matrix_units.registered(matrix_units.DOT_LOWERINGS, VendorAccumulatorV2()) is generic
    matrix_units.lowers_dot(VendorAccumulatorV2)(v2)
    assert matrix_units.registered(matrix_units.DOT_LOWERINGS, VendorAccumulatorV2()) is v2
    assert matrix_units.registered(matrix_units.DOT_LOWERINGS, VendorAccumulator()) is generic
    assert matrix_units.registered(matrix_units.CONVERSIONS, VendorOperand(0, None, 1)) is None


def test_the_shipped_backends_register_their_matrix_units():
    """Importing a backend's TargetInfo registers its lowerings; the core registers none."""
    from tilec_amd.matrix_layouts import AmdDotOperandEncodingAttr, AmdMfmaEncodingAttr
    from tilec_amd.target_info import AmdTargetInfo  # noqa: F401
    from tilec_nvidia.target_info import NvidiaTargetInfo  # noqa: F401
    from tilec_nvidia.tensor_core_layouts import DotOperandEncodingAttr, MmaEncodingAttr

    mfma = AmdMfmaEncodingAttr(3, (2, 2))
    mma = MmaEncodingAttr(2, (2, 2))
    for layout in (mfma, mma):
        function = matrix_units.registered(matrix_units.DOT_LOWERINGS, layout)
        assert function is not None and not function.__module__.startswith("tilec.")
    for operand in (AmdDotOperandEncodingAttr(0, mfma, 4), DotOperandEncodingAttr(0, mma, 2)):
        for table in (matrix_units.CONVERSIONS, matrix_units.SHARED_READS):
            function = matrix_units.registered(table, operand)
            assert function is not None and not function.__module__.startswith("tilec.")
