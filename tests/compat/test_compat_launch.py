"""Launching as Triton programs do: parameters with defaults, Triton's launch options (issue 11)."""

import logging
import subprocess
import sys

import numpy as np
import pytest
from compat_kernels import add_one, with_defaults

from tilec.errors import OptionValueError
from tilec.runtime import launcher
from tilec.runtime.compiler import get_backend
from tilec.runtime.launcher import bind_launch
from tilec_nvidia.backend import NvidiaBackend


def test_parameters_with_defaults_can_be_left_out():
    x = np.zeros(4, np.float32)
    with_defaults[(1,)](x, backend="interp")
    np.testing.assert_array_equal(x, np.full(4, 3.0))
    with_defaults[(1,)](x, value=5, backend="interp")
    np.testing.assert_array_equal(x, np.full(4, 8.0))
    with_defaults[(1,)](x, backend="interp")  # the hot path of the first launch again
    np.testing.assert_array_equal(x, np.full(4, 11.0))


@pytest.mark.parametrize(
    "options",
    [
        {"num_ctas": 1},
        {"extern_libs": None},
        {"extern_libs": {}},
        {"enable_fp_fusion": True},
        {"enable_fp_fusion": False},  # a backend option (tests/nvidia/test_nvidia_fp_fusion.py)
        {"launch_cooperative_grid": False},
        {"launch_cooperative_grid": True},  # honoured on interp (test_compat_sync.py)
        {"launch_pdl": False},
        {"maxnreg": 128},
        # amd's options: known where its plugin is installed (else an unknown keyword, as an
        # option no installed backend declares: test_an_option_no_backend_knows_stays_an_error)
        pytest.param({"waves_per_eu": 2}, marks=pytest.mark.requires_backends("amd")),
        pytest.param({"matrix_instr_nonkdim": 16}, marks=pytest.mark.requires_backends("amd")),
    ],
)
def test_triton_launch_options_tilec_honours_are_accepted(options):
    x = np.zeros(8, np.float32)
    add_one[(1,)](x, N=8, backend="interp", **options)
    np.testing.assert_array_equal(x, np.ones(8))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_ctas": 2}, "num_ctas=2 is not supported by backend 'interp': tilec runs each"),
    ],
)
def test_triton_launch_options_tilec_cannot_honour_name_the_option(options, message):
    with pytest.raises(TypeError, match="launch option") as info:
        add_one[(1,)](np.zeros(8, np.float32), N=8, backend="interp", **options)
    assert message in str(info.value)
    assert "leave it out" in str(info.value)


def test_extern_libs_must_name_bitcode_files(tmp_path):
    """`extern_libs` is honoured (tests/lowering/test_extern_libs.py): its files must exist and
    be LLVM bitcode."""
    text = tmp_path / "libdevice.10.bc"
    text.write_text("not bitcode")
    for path, why in [("x.bc", "cannot be read"), (str(text), "is not LLVM bitcode")]:
        with pytest.raises(OptionValueError) as info:
            add_one[(1,)](np.zeros(8, np.float32), N=8, backend="interp",
                          extern_libs={"libdevice": path})  # fmt: skip
        assert f"option 'extern_libs': library 'libdevice' at {path!r} {why}" in str(info.value)


@pytest.mark.parametrize(
    ("backend", "options", "owner"),
    [
        ("interp", {"maxnreg": 40}, "nvidia"),
        ("interp", {"launch_pdl": True}, "nvidia"),
        ("interp", {"matrix_instr_nonkdim": 16, "kpack": 2, "waves_per_eu": 3}, "amd"),
        ("interp", {"code_object_version": 4}, "amd"),
    ],
)
def test_another_backends_options_have_no_effect_and_the_log_says_so(
    backend, options, owner, caplog
):
    """As in Triton, an option of another vendor's backend is accepted with no effect (Triton's
    tutorial 03 passes AMD's `matrix_instr_nonkdim` in configs that may run anywhere)."""
    x = np.zeros(8, np.float32)
    launcher._logged_foreign.clear()  # said once a process: earlier tests may have said it
    with caplog.at_level(logging.INFO, logger="tilec"):
        add_one[(1,)](x, N=8, backend=backend, **options)
    np.testing.assert_array_equal(x, np.ones(8))
    said = " ".join(r.getMessage() for r in caplog.records)
    for key in options:
        assert f"launch option '{key}' belongs to backend '{owner}'; it has no effect" in said


@pytest.mark.requires_backends("nvidia", "amd")
def test_nvidia_accepts_amd_options_and_amd_nvidia_options():
    backend = get_backend("nvidia", require_available=False)
    bound = bind_launch(add_one, ["x_ptr", "N"], [False, True], {}, (np.zeros(8, np.float32),),
                        {"N": 8, "waves_per_eu": 2, "matrix_instr_nonkdim": 16}, backend)  # fmt: skip
    assert not hasattr(bound[5], "waves_per_eu")
    amd = get_backend("amd", require_available=False)
    bound = bind_launch(add_one, ["x_ptr", "N"], [False, True], {}, (np.zeros(8, np.float32),),
                        {"N": 8, "maxnreg": 64, "launch_pdl": True}, amd)  # fmt: skip
    assert bound[4] is amd


@pytest.mark.parametrize(
    ("backend", "key", "value", "message"),
    [
        ("amd", "matrix_instr_nonkdim", 16, "chooses the MFMA/WMMA instruction shape itself"),
        ("amd", "kpack", 2, "packs no extra K elements"),
        ("nvidia", "launch_pdl", True, "no programmatic dependent launch"),
    ],
)
def test_a_vendors_own_option_its_backend_cannot_honour_is_refused(backend, key, value, message):
    owner = get_backend(backend, require_available=False)
    with pytest.raises(TypeError) as info:
        bind_launch(add_one, ["x_ptr", "N"], [False, True], {}, (np.zeros(8, np.float32),),
                    {"N": 8, key: value}, owner)  # fmt: skip
    assert f"{key}={value!r} is not supported by backend '{backend}'" in str(info.value)
    assert message in str(info.value)
    default = owner.vendor_options[key][0]
    bind_launch(add_one, ["x_ptr", "N"], [False, True], {}, (np.zeros(8, np.float32),),
                {"N": 8, key: default}, owner)  # fmt: skip


def test_an_option_no_backend_knows_stays_an_error():
    with pytest.raises(TypeError, match="unknown keyword 'num_warp'"):
        add_one[(1,)](np.zeros(8, np.float32), N=8, backend="interp", num_warp=4)


MAXNREG_PTX = """
from llvmlite import ir
from tilec_nvidia.backend import NvidiaBackend
from tilec_nvidia.codegen import llir_to_ptx

backend = NvidiaBackend()
info = backend.target_info("sm_80", backend.parse_options(target="sm_80", maxnreg=40))
module = ir.Module()
fn = info.define_kernel(module, "k", ir.FunctionType(ir.VoidType(), []))
ir.IRBuilder(fn.append_basic_block()).ret_void()
info.finalize_kernel(module, fn, 128, 0)
print(llir_to_ptx(str(module), "sm_80"))
"""


def test_nvidia_maxnreg_is_maxnreg_in_the_ptx():
    with pytest.raises(ValueError, match="maxnreg"):
        NvidiaBackend().parse_options(maxnreg=0)
    # a child process: an LLVM abort there cannot take pytest down
    result = subprocess.run([sys.executable, "-c", MAXNREG_PTX], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert ".maxnreg 40" in result.stdout, result.stdout


def test_warmup_handles_and_compiled_launch_on_interp():
    """The fused-softmax tutorial's steps on the interpreter: `warmup`, `_init_handles()`, the
    resources (none: it runs on the host), then `compiled[grid](*every_argument)`."""
    x = np.zeros(8, np.float32)
    compiled = add_one.warmup(x, N=8, backend="interp", grid=(1,))
    compiled._init_handles()
    assert (compiled.n_regs, compiled.n_spills, compiled.metadata.shared) == (0, 0, 0)
    assert compiled[(1, 1, 1)](x, 8) is compiled
    np.testing.assert_array_equal(x, np.ones(8))
    with pytest.raises(ValueError, match="compiled with N=8, got 4"):
        compiled[(1,)](x, 4)
    np.testing.assert_array_equal(x, np.ones(8))
