"""Errors of the backend contract name what is missing and the fix (issue 21): a `TargetInfo`
subclass without a required method, a `GpuBackend` without `target_info`."""

from __future__ import annotations

import pytest
from llvmlite import ir

from tilec.arch import ArchTable, GpuArch
from tilec.backend import GpuBackend
from tilec.lowering.memory_hints import MemoryHints
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


def test_cache_flags_mark_the_default_loads_and_stores():
    """A target that declares `cache_flags` gets its accesses marked by the base class's
    `global_load`/`global_store`; a modifier not in the table, or no table, gives plain ones."""

    class Flagged(Partial):
        cache_flags = {("load", ".cv"): (True, True), ("store", ".cs"): (False, True)}

    module = ir.Module()
    fn = Flagged("v1", 16).define_kernel(module, "k", ir.FunctionType(ir.VoidType(), []))
    builder = ir.IRBuilder(fn.append_basic_block())
    address = builder.alloca(ir.IntType(32))
    one = ir.Constant(ir.IntType(32), 1)
    for target in (Flagged("v1", 16), Partial("v1", 16)):
        target.global_load(builder, address, ir.IntType(32), 4, MemoryHints(".cv"))
        target.global_load(builder, address, ir.IntType(32), 4, MemoryHints(".cg"))
        target.global_store(builder, one, address, 4, MemoryHints(".cs", store=True))
    text = str(fn)
    assert text.count("load volatile i32") == 1 and text.count("!nontemporal") == 2
    assert "store volatile" not in text and text.count("load i32") == 3


def test_driver_errors_make_a_driver_s_family_of_errors():
    """`driver_errors` gives a driver its error and the user's mistakes as both that error and
    the core's, named and placed as the driver module's own classes (they pickle)."""
    import pickle
    import sys

    from tilec.errors import (
        DeviceLimitError,
        DeviceNotFoundError,
        GraphCaptureError,
        TilecError,
        driver_errors,
    )

    family = driver_errors("Demo", __name__, "A demo call failed")
    for cls in family:
        setattr(sys.modules[__name__], cls.__name__, cls)
    error, limit, missing, capture = family
    assert [cls.__name__ for cls in family] == [
        "DemoError",
        "DemoLimitError",
        "DemoDeviceNotFoundError",
        "DemoCaptureError",
    ]
    assert issubclass(error, RuntimeError) and not issubclass(error, TilecError)
    assert issubclass(limit, error) and issubclass(limit, DeviceLimitError)
    assert issubclass(missing, error) and issubclass(missing, DeviceNotFoundError)
    assert issubclass(capture, error) and issubclass(capture, GraphCaptureError)
    assert error.__doc__.startswith("A demo call failed")
    again = pickle.loads(pickle.dumps(limit("needs 70000 bytes")))
    assert type(again) is limit and str(again) == "needs 70000 bytes"


def test_stream_capturing_reads_a_capture_status_or_the_implicit_capture_error():
    from tilec.interop.device import stream_capturing

    class DemoError(RuntimeError):
        pass

    def refused(message):
        def status():
            raise DemoError(message)

        return status

    assert stream_capturing(lambda: 1, DemoError, "IMPLICIT", 0)
    assert not stream_capturing(lambda: 0, DemoError, "IMPLICIT", 0)
    assert stream_capturing(refused("query failed: IMPLICIT"), DemoError, "IMPLICIT", 0)
    with pytest.raises(DemoError, match="INVALID"):
        stream_capturing(refused("query failed: INVALID"), DemoError, "IMPLICIT", 0)


def test_matrix_layout_attr_gives_the_warp_grid_of_an_accumulator_layout():
    import attrs

    from tilec.dialects.gpu import parameter
    from tilec.dialects.gpu_matrix import MatrixLayoutAttr

    @attrs.frozen(repr=False)
    class Shaped(MatrixLayoutAttr):
        name = "gpu.demo_shaped"
        warps_per_cta: tuple[int, ...] = parameter("warpsPerCTA", "ints")
        instr_shape: tuple[int, ...] = parameter("instrShape", "ints", default=(16, 8, 32))

        def __attrs_post_init__(self) -> None:
            self._check_warps()

    @attrs.frozen(repr=False)
    class Fixed(MatrixLayoutAttr):
        name = "gpu.demo_fixed"
        warps_per_cta: tuple[int, ...] = parameter("warpsPerCTA", "ints")

        @property
        def instr_mn(self) -> tuple[int, int]:
            return 32, 32

    @attrs.frozen(repr=False)
    class Unsized(MatrixLayoutAttr):
        name = "gpu.demo_unsized"
        warps_per_cta: tuple[int, ...] = parameter("warpsPerCTA", "ints")

    layout = Shaped((4, 2))
    assert (layout.rank, layout.num_warps, layout.instr_mn, layout.tile()) == (
        2,
        8,
        (16, 8),
        (64, 16),
    )
    assert Fixed((1, 2)).tile() == (32, 64)
    with pytest.raises(
        NotImplementedError, match="Unsized has no instr_shape: define its instr_mn"
    ):
        Unsized((1, 1)).tile()
    with pytest.raises(ValueError, match=r"'warpsPerCTA' must be two powers of two, got \[3, 1\]"):
        Shaped((3, 1))
