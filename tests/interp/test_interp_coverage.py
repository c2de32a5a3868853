"""Every registered op has an interpreter handler, or a reason in `NOT_INTERPRETED` why not."""

from __future__ import annotations

import pytest

import tilec.dialects  # noqa: F401  (fills OP_REGISTRY)
from tilec.ir.core import OP_REGISTRY, Operation, register_op
from tilec.ir.traits import IsTerminator
from tilec_interp import interpreter, ops
from tilec_interp.interpreter import INTERPRETED, NOT_INTERPRETED, uncovered_ops


def test_every_registered_op_is_interpreted_or_declared_not_to_be():
    missing = sorted(c.name for c in uncovered_ops(OP_REGISTRY.values()))
    assert not missing, (
        f"no interpreter handler for {', '.join(missing)}: add one (tilec_interp.ops.HANDLERS "
        "for element-wise ops, interpreter._METHODS otherwise) or list the op in "
        "interpreter.NOT_INTERPRETED with the reason"
    )


def test_declared_ops_are_registered_and_not_also_interpreted():
    registered = set(OP_REGISTRY.values())
    assert all(c in registered for c in (*INTERPRETED, *NOT_INTERPRETED))
    assert not INTERPRETED & NOT_INTERPRETED.keys()
    assert all(reason.strip() for reason in NOT_INTERPRETED.values())


def test_handler_tables_are_disjoint_and_terminators_are_terminators():
    assert not ops.HANDLERS.keys() & interpreter._METHODS.keys()
    assert not ops.HANDLERS.keys() & interpreter._TERMINATORS
    assert not interpreter._METHODS.keys() & interpreter._TERMINATORS
    assert all(c.has_trait(IsTerminator) for c in interpreter._TERMINATORS)
    assert interpreter._METHODS.keys() >= interpreter._POINTER_AWARE


@pytest.fixture
def unhandled_op():
    """A throwaway op class, registered for the test and removed afterwards."""

    class UnhandledOp(Operation):
        name = "test_coverage.unhandled"

    register_op(UnhandledOp)
    yield UnhandledOp
    del OP_REGISTRY[UnhandledOp.name]


def test_the_coverage_check_reports_an_op_without_a_handler(unhandled_op):
    assert OP_REGISTRY[unhandled_op.name] is unhandled_op
    assert uncovered_ops(OP_REGISTRY.values()) == [unhandled_op]
    with pytest.raises(AssertionError, match=r"test_coverage\.unhandled"):
        test_every_registered_op_is_interpreted_or_declared_not_to_be()


def test_the_ops_of_a_backends_matrix_unit_need_no_entry():
    """A backend's plugin defines them (NVIDIA's `gpu.warp_group_dot`): gir ops, never run."""
    from tilec.dialects.gpu_shared import AsyncDotOp, MatrixUnitOp

    class VendorFenceOp(MatrixUnitOp):
        name = "test_coverage.vendor_fence"

    class VendorDotOp(AsyncDotOp):
        name = "test_coverage.vendor_dot"

    assert uncovered_ops([VendorFenceOp, VendorDotOp]) == []
