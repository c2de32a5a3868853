"""Errors of the backend contract name what is missing and the fix (issue 21): a `TargetInfo`
subclass without a required method, a `GpuBackend` without `target_info`."""

from __future__ import annotations

import pytest
from llvmlite import ir

from tilec.arch import ArchTable, GpuArch
from tilec.backend import GpuBackend
from tilec.lowering.target import TargetInfo


class Partial(TargetInfo):
    """Kernel definition only: every other required method is missing."""

    def define_kernel(self, module, name, fn_type):
        return ir.Function(module, fn_type, name)


@pytest.mark.parametrize("method", ["thread_id", "barrier"])
def test_a_missing_target_info_method_is_named_with_the_fix(method):
    module = ir.Module()
    fn = Partial("v1", 16).define_kernel(module, "k", ir.FunctionType(ir.VoidType(), []))
    builder = ir.IRBuilder(fn.append_basic_block())
    with pytest.raises(NotImplementedError) as info:
        getattr(Partial("v1", 16), method)(builder)
    message = str(info.value)
    assert f"Partial (target v1) does not implement TargetInfo.{method}()" in message
    assert "define it in the subclass" in message


def test_a_gpu_backend_without_target_info_says_what_to_return():
    class NoTargetInfo(GpuBackend):
        name = "made-up"
        archs = ArchTable("made-up", "made-up", [GpuArch("v1", 16, 1024)], example="v1")

    with pytest.raises(NotImplementedError, match=r"does not define target_info\(target, opt"):
        NoTargetInfo().target_info("v1", NoTargetInfo().parse_options())
