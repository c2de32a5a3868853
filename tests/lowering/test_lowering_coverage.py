"""Every registered op is lowered to LLVM IR, or `NOT_LOWERED` says why it is not."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

import tilec.dialects  # noqa: F401  (registers the ops)
from tilec.ir.core import OP_REGISTRY, Operation
from tilec.ir.parser import parse_module
from tilec.lowering import NOT_LOWERED, LoweringError, lower_module
from tilec.lowering.context import LOWERINGS
from tilec_nvidia.target_info import NvidiaTargetInfo


def unaccounted(op_classes: Iterable[type[Operation]]) -> list[str]:
    """The names of the ops in `op_classes` with neither a lowering nor a declared reason."""
    return sorted(c.name for c in op_classes if c not in LOWERINGS and c not in NOT_LOWERED)


def test_every_registered_op_is_lowered_or_says_why_not():
    missing = unaccounted(OP_REGISTRY.values())
    assert not missing, (
        f"ops with no LLVM lowering: {', '.join(missing)}; register one with "
        "@lowers(OpClass) in tilec.lowering, or add the op and the reason to "
        "tilec.lowering.not_lowered.NOT_LOWERED"
    )


class _UnloweredOp(Operation):
    name = "test.unlowered"


@pytest.fixture
def registered_dummy_op():
    OP_REGISTRY[_UnloweredOp.name] = _UnloweredOp
    yield _UnloweredOp
    del OP_REGISTRY[_UnloweredOp.name]


def test_an_op_without_lowering_or_reason_is_reported(registered_dummy_op):
    assert unaccounted(OP_REGISTRY.values()) == ["test.unlowered"]


def test_no_op_is_both_lowered_and_declared_not_lowered():
    both = sorted(c.name for c in NOT_LOWERED if c in LOWERINGS)
    assert not both


def test_every_reason_is_about_a_registered_op_and_says_something():
    for op_class, reason in NOT_LOWERED.items():
        assert OP_REGISTRY.get(op_class.name) is op_class
        assert reason.strip()


def test_lowering_an_op_declared_not_lowered_gives_the_reason():
    text = (
        "func.func @h(%x: i32) -> i32 attributes {private = unit} {\n"
        "  tile.return %x\n"
        "}\n\n"
        "func.func @k(%n: i32) attributes {gpu.num_warps = 4 : i32, "
        "gpu.threads_per_warp = 32 : i32} {\n"
        "  %r = tile.call %n {callee = @h} : i32\n"
        "  tile.return\n"
        "}\n"
    )
    module = parse_module(text, "call.gir")
    with pytest.raises(
        LoweringError, match=r"call\.gir:6:\d+: 'tile\.call' is not lowered.*inline"
    ):
        lower_module(module, NvidiaTargetInfo("sm_90", 32), "k")
