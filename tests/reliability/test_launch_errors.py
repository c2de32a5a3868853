"""Launch-time user mistakes are tilec errors (issue 14): each is a `tilec.TilecError` of the kind
`tilec.errors` names, and still the builtin it was before (`TypeError`, `ValueError`,
`RuntimeError`), naming the kernel and the argument; a launch's error (also a warmup's, a
`compiled[grid](...)`'s, a `tilec.compile`'s) comes with the user's call site and without tilec's
frames (unless TILEC_DEBUG=1), and the CLI prints it in one line with exit status 1."""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.backend import Availability
from tilec.runtime import compiler
from tilec.runtime.packing import Packer
from tilec_interp.memory import InterpreterError
from tilec_nvidia.backend import NvidiaBackend

ROOT = Path(__file__).resolve().parents[2]


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


def arrays():
    return np.arange(8, dtype=np.float32), np.zeros(8, np.float32)


def raised(call) -> BaseException:
    with pytest.raises(tilec.TilecError) as info:
        call()
    return info.value


@pytest.mark.parametrize(
    ("mistake", "launch", "text"),
    [
        (
            "too many arguments",
            lambda x, out: add_kernel[(1,)](x, x, out, 8, 8, 9, backend="interp"),
            "add_kernel takes 5 arguments",
        ),
        (
            "a missing argument",
            lambda x, out: add_kernel[(1,)](x, x, out, BLOCK=8, backend="interp"),
            "add_kernel is missing argument 'n'",
        ),
        (
            "an unknown keyword",
            lambda x, out: add_kernel[(1,)](x, x, out, 8, BLOCK=8, BLCK=8, backend="interp"),
            "add_kernel got an unknown keyword 'BLCK'",
        ),
        (
            "an argument given twice",
            lambda x, out: add_kernel[(1,)](x, x, out, 8, BLOCK=8, n=8, backend="interp"),
            "add_kernel got multiple values for argument 'n'",
        ),
        (
            "a string for a pointer",
            lambda x, out: add_kernel[(1,)](x, "y", out, 8, BLOCK=8, backend="interp"),
            "argument 'y_ptr' of add_kernel: expected an array",
        ),
        (
            "an array of an unsupported dtype",
            lambda x, out: add_kernel[(1,)](
                x, x.astype(np.complex64), out, 8, BLOCK=8, backend="interp"
            ),
            "argument 'y_ptr' of add_kernel: unsupported array dtype complex64",
        ),
        (
            "an int beyond 64 bits",
            lambda x, out: add_kernel[(1,)](x, x, out, 2**70, BLOCK=8, backend="interp"),
            "argument 'n' of add_kernel: 1180591620717411303424 does not fit in 64 bits",
        ),
        (
            "a big-endian array",
            lambda x, out: add_kernel[(1,)](x.astype(">f4"), x, out, 8, BLOCK=8, backend="interp"),
            "argument 'x_ptr' of add_kernel: the array's elements are in non-native byte order",
        ),
        (
            "check=True with a stream",
            lambda x, out: add_kernel[(1,)](
                x, x, out, 8, BLOCK=8, backend="interp", check=True, stream=0
            ),
            "add_kernel: check=True launches on the default stream",
        ),
    ],
)
def test_argument_mistakes_are_launch_argument_errors_and_type_errors(mistake, launch, text):
    x, out = arrays()
    error = raised(lambda: launch(x, out))
    assert isinstance(error, tilec.LaunchArgumentError), mistake
    assert isinstance(error, tilec.LaunchError) and isinstance(error, TypeError)
    assert not isinstance(error, ValueError)  # the autotuner takes a ValueError as a bad config
    assert text in str(error)


GRID_TYPE = (tilec.GridTypeError, TypeError, ValueError)
GRID_VALUE = (tilec.GridValueError, ValueError, TypeError)


@pytest.mark.parametrize(
    ("grid", "kinds"),
    [("12", GRID_TYPE), ((2.9,), GRID_TYPE), (None, GRID_TYPE), ((1, 1, 1, 1), GRID_VALUE),
     ((-1,), GRID_VALUE)],
)  # fmt: skip
def test_bad_grids_are_grid_errors_and_exactly_the_builtin_they_were(grid, kinds):
    """Each is the one builtin it was before, not both: handlers keep catching what they did."""
    kind, builtin, other = kinds
    x, out = arrays()
    error = raised(lambda: add_kernel[grid](x, x, out, 8, BLOCK=8, backend="interp"))
    assert isinstance(error, tilec.GridError) and isinstance(error, kind)
    assert isinstance(error, builtin) and not isinstance(error, other)
    assert "the grid of kernel 'add_kernel'" in str(error)


def test_a_float_grid_on_the_fast_path_is_a_grid_error():
    x, out = arrays()
    add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="interp")
    error = raised(lambda: add_kernel[(2.9,)](x, x, out, 8, BLOCK=8, backend="interp"))
    assert isinstance(error, tilec.GridTypeError) and isinstance(error, TypeError)
    assert "grid of @add_kernel must hold ints" in str(error)


@pytest.mark.parametrize(
    ("options", "kind", "builtin", "text"),
    [
        ({"num_ctas": 2}, tilec.OptionTypeError, TypeError, "add_kernel: launch option num_ctas=2"),
        ({"num_warps": 3}, tilec.OptionValueError, ValueError, "add_kernel: backend 'interp': "),
        ({"debug": "yes"}, tilec.OptionValueError, ValueError, "option 'debug' must be True or "),
    ],
)
def test_bad_launch_options_are_option_errors(options, kind, builtin, text):
    x, out = arrays()
    error = raised(lambda: add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="interp", **options))
    assert isinstance(error, tilec.OptionError) and isinstance(error, kind)
    assert isinstance(error, builtin)
    assert text in str(error)


def test_an_unknown_option_of_tilec_compile_is_an_option_error():
    error = raised(lambda: tilec.compile(add_kernel, {"n": "i32"}, backend="interp", warps=4))
    assert isinstance(error, tilec.OptionTypeError) and isinstance(error, TypeError)
    assert "backend 'interp' has no option 'warps'" in str(error)


def test_an_unknown_parameter_of_tilec_compile_is_a_launch_argument_error():
    error = raised(lambda: tilec.compile(add_kernel, {"m": "i32"}, backend="interp"))
    assert isinstance(error, tilec.LaunchArgumentError) and isinstance(error, TypeError)
    assert "add_kernel has no parameter 'm'" in str(error)


def test_a_signature_that_misses_a_parameter_is_a_launch_argument_error():
    error = raised(lambda: tilec.compile(add_kernel, {"n": "i32"}, {"BLOCK": 8}, backend="interp"))
    assert isinstance(error, tilec.LaunchArgumentError) and isinstance(error, TypeError)
    assert "parameter 'x_ptr' of add_kernel has neither a signature type" in str(error)
    error = raised(lambda: tilec.compile(add_kernel, SIGNATURE, backend="interp"))
    assert isinstance(error, tilec.LaunchArgumentError)
    assert "constexpr parameter 'BLOCK' of add_kernel has no value" in str(error)


def test_an_unknown_backend_name_is_a_backend_error():
    x, out = arrays()
    error = raised(lambda: add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="cuda"))
    assert isinstance(error, tilec.UnknownBackendError) and isinstance(error, ValueError)
    assert isinstance(error, tilec.BackendError)
    assert "unknown backend 'cuda'; known backends:" in str(error)
    error = raised(lambda: tilec.set_backend("cuda"))
    assert isinstance(error, tilec.BackendError)


@pytest.fixture
def no_nvidia_device(monkeypatch):
    monkeypatch.setattr(NvidiaBackend, "is_available", lambda self: Availability(False, "no GPU"))
    monkeypatch.setattr(compiler, "_availability", {})


def test_an_unavailable_backend_is_a_backend_error(no_nvidia_device):
    x, out = arrays()
    error = raised(lambda: add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="nvidia"))
    assert isinstance(error, tilec.BackendUnavailableError) and isinstance(error, RuntimeError)
    assert str(error) == "backend 'nvidia' is not available: no GPU"


def test_a_missing_target_without_a_device_is_a_backend_error(no_nvidia_device):
    error = raised(lambda: tilec.compile(add_kernel, SIGNATURE, {"BLOCK": 8}, backend="nvidia"))
    assert isinstance(error, tilec.BackendUnavailableError) and isinstance(error, RuntimeError)
    assert "the nvidia backend needs a target to compile without a device" in str(error)


def test_warmup_mistakes_are_launch_argument_errors():
    x, out = arrays()
    error = raised(lambda: add_kernel.warmup(x, x, out, 8, grid=(1,), BLOCK=8, stream=0))
    assert isinstance(error, tilec.LaunchArgumentError) and isinstance(error, TypeError)
    assert "add_kernel.warmup() launches nothing: drop stream=" in str(error)
    error = raised(lambda: add_kernel.warmup(np.float32, x, out, 8, grid=(1,), BLOCK=8))
    assert isinstance(error, tilec.LaunchArgumentError)
    assert "add_kernel.warmup() takes the arguments of a launch" in str(error)


def test_arguments_a_gpu_launch_cannot_pack_are_launch_argument_errors():
    packer = Packer(["*fp32", "i32"], ["x_ptr", "n"])
    error = raised(lambda: packer.pack([0x1000, "8"]))
    assert isinstance(error, tilec.LaunchArgumentError) and isinstance(error, TypeError)
    assert "argument 'n' (i32): cannot pass '8' as i32" in str(error)
    error = raised(lambda: Packer(["tensor<4xf32>"], ["t"]))
    assert isinstance(error, tilec.LaunchArgumentError)
    assert "parameter 't' has type 'tensor<4xf32>'" in str(error)


def test_a_compiled_kernel_launched_with_other_arguments_is_a_launch_argument_error():
    x, out = arrays()
    compiled = add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="interp")
    error = raised(lambda: compiled[(1,)](x, x, out, 8))
    assert isinstance(error, tilec.LaunchArgumentError) and isinstance(error, TypeError)
    assert "add_kernel[grid]() takes the kernel's 5 arguments" in str(error)
    error = raised(lambda: compiled[(1,)](x, x, out, 8, 16))
    assert isinstance(error, tilec.ArgumentValueError) and isinstance(error, ValueError)
    assert "add_kernel was compiled with BLOCK=8, got 16" in str(error)


@pytest.mark.parametrize("debug", [False, True])
def test_a_compiled_kernels_launch_errors_are_raised_as_a_launchs_are(monkeypatch, debug):
    """`compiled[grid](...)`: the user's call site and, unless TILEC_DEBUG, no tilec frames
    below the one that raises it."""
    if debug:
        monkeypatch.setenv("TILEC_DEBUG", "1")
    else:
        monkeypatch.delenv("TILEC_DEBUG", raising=False)
    x, out = arrays()
    compiled = add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="interp")
    line = sys._getframe().f_lineno + 1
    error = raised(lambda: compiled[(1,)](x, x, out, 8, 16))
    assert isinstance(error, tilec.ArgumentValueError)
    assert error.call_site == f"{__file__}:{line}"
    inside = [os.path.basename(f) for f in internal_frames(error)]
    assert inside == (["entry.py", "compiler.py", "compiler.py"] if debug else ["entry.py"]), inside
    error = raised(lambda: compiled[(1,)](x, "y", out, 8, 8))  # found by the interp driver
    assert isinstance(error, tilec.LaunchArgumentError) and error.call_site is not None
    assert "argument 'y_ptr' of add_kernel" in str(error)
    inside = [os.path.basename(f) for f in internal_frames(error)]
    assert len(inside) > 2 if debug else inside == ["entry.py"], inside


def test_tilec_compile_errors_are_raised_as_a_launchs_are():
    line = sys._getframe().f_lineno + 2
    error = raised(
        lambda: tilec.compile(
            add_kernel, {**SIGNATURE, "x_ptr": "*fp99"}, {"BLOCK": 8}, backend="interp"
        )
    )
    assert isinstance(error, tilec.ArgumentValueError)
    assert error.call_site == f"{__file__}:{line}"
    assert [os.path.basename(f) for f in internal_frames(error)] == ["entry.py"]
    error = raised(
        lambda: tilec.compile(add_kernel, SIGNATURE, {"BLOCK": 8}, backend="interp", num_warps=3)
    )
    assert isinstance(error, tilec.OptionValueError)
    assert [os.path.basename(f) for f in internal_frames(error)] == ["entry.py"]


def test_set_allocator_of_no_function_is_an_option_type_error():
    line = sys._getframe().f_lineno + 1
    error = raised(lambda: tilec.set_allocator(16))
    assert isinstance(error, tilec.OptionTypeError) and isinstance(error, TypeError)
    assert str(error) == (
        "tilec.set_allocator takes a function fn(size, alignment, stream) that returns the "
        "memory, or None; got 16"
    )
    assert error.call_site == f"{__file__}:{line}"
    tilec.set_allocator(None)


class CudaTensorLike:
    """A torch tensor on a GPU, as the interp backend sees one: no memory it can read."""

    dtype = "torch.float32"

    def data_ptr(self):
        return 0x10000

    def get_device(self):
        return 0

    def __dlpack__(self, **kwargs):
        raise BufferError("on the GPU")

    def __dlpack_device__(self):
        return (2, 0)


def test_arrays_the_interpreter_cannot_address_are_named_launch_argument_errors():
    x, out = arrays()
    error = raised(lambda: add_kernel[(1,)](x, CudaTensorLike(), out, 8, BLOCK=8, backend="interp"))
    assert isinstance(error, tilec.LaunchArgumentError) and isinstance(error, TypeError)
    text = "argument 'y_ptr' of add_kernel: a pointer argument of the interp backend must be in"
    assert text + " CPU memory" in str(error)
    odd = np.lib.stride_tricks.as_strided(np.zeros(64, np.float32), shape=(8,), strides=(6,))
    error = raised(lambda: add_kernel[(1,)](x, odd, out, 8, BLOCK=8, backend="interp"))
    assert isinstance(error, tilec.LaunchArgumentError)
    assert "argument 'y_ptr' of add_kernel: an array with strides (6,)" in str(error)


def test_a_store_to_a_read_only_array_on_the_interpreter_is_a_tilec_error():
    x, out = arrays()
    out.flags.writeable = False
    error = raised(lambda: add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="interp"))
    assert isinstance(error, InterpreterError) and isinstance(error, RuntimeError)
    assert "argument 'out_ptr', a read-only array" in str(error)


def test_compile_errors_are_tilec_errors():
    assert issubclass(tilec.CompilationError, tilec.TilecError)


def test_a_launch_error_knows_the_users_call_site():
    x, out = arrays()
    line = sys._getframe().f_lineno + 1
    error = raised(lambda: add_kernel[(1,)](x, x, out, 8, BLOCK=8, bogus=1, backend="interp"))
    assert error.call_site == f"{__file__}:{line}"
    add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="interp")
    launch = add_kernel[(2.9,)]  # the fast path's grid check
    error = raised(lambda: launch(x, x, out, 8, BLOCK=8, backend="interp"))
    assert error.call_site == f"{__file__}:{line + 4}"


def frames_of_launch_error(monkeypatch, debug: bool) -> list[str]:
    if debug:
        monkeypatch.setenv("TILEC_DEBUG", "1")
    else:
        monkeypatch.delenv("TILEC_DEBUG", raising=False)
    x, out = arrays()
    with pytest.raises(tilec.LaunchArgumentError) as info:
        add_kernel[(1,)](x, "y", out, 8, BLOCK=8, backend="interp")
    return [frame.filename for frame in traceback.extract_tb(info.value.__traceback__)]


def test_launch_errors_lose_the_internal_frames(monkeypatch):
    files = frames_of_launch_error(monkeypatch, debug=False)
    assert files[0] == __file__
    inside = [f for f in files if os.sep + "tilec" + os.sep in f]
    assert [os.path.basename(f) for f in inside] == ["launcher.py"], files  # the launch call


def test_tilec_debug_keeps_the_launch_errors_full_traceback(monkeypatch):
    files = frames_of_launch_error(monkeypatch, debug=True)
    assert any(f.endswith("specialization.py") for f in files), files


def test_calling_a_kernel_as_a_function_is_a_kernel_call_error():
    x, out = arrays()
    error = raised(lambda: add_kernel(x, x, out, 8, 8))
    assert isinstance(error, tilec.KernelCallError) and isinstance(error, RuntimeError)
    assert not isinstance(error, tilec.LaunchError)
    assert str(error) == (
        "add_kernel is a @tilec.jit kernel: launch it as add_kernel[grid](...) or call it from "
        "another kernel"
    )
    error = raised(lambda: tl.load(x))
    assert isinstance(error, tilec.KernelCallError) and isinstance(error, RuntimeError)
    assert "tl.load can only be called inside a @tilec.jit kernel" in str(error)


@pytest.mark.parametrize("index", [-1, "cuda:1", 1.0, True])
def test_a_device_index_that_is_no_int_is_an_invalid_device_index_error(index):
    error = raised(lambda: tilec.set_device(index))
    assert isinstance(error, tilec.InvalidDeviceIndexError) and isinstance(error, ValueError)
    assert isinstance(error, tilec.DeviceIndexError) and isinstance(error, tilec.LaunchError)
    assert not isinstance(error, RuntimeError)
    assert f"set_device takes a device index (an int >= 0) or None; got {index!r}" == str(error)
    tilec.set_device(None)  # unchanged, and None still accepted


def test_an_unknown_signature_type_of_tilec_compile_is_an_argument_value_error():
    signature = {**SIGNATURE, "x_ptr": "*fp99"}
    error = raised(lambda: tilec.compile(add_kernel, signature, {"BLOCK": 8}, backend="interp"))
    assert isinstance(error, tilec.ArgumentValueError) and isinstance(error, ValueError)
    assert "parameter 'x_ptr' of add_kernel: unknown signature type 'fp99'" in str(error)
    signature = {**SIGNATURE, "n": tl.int32}
    error = raised(lambda: tilec.compile(add_kernel, signature, {"BLOCK": 8}, backend="interp"))
    assert isinstance(error, tilec.LaunchArgumentError) and isinstance(error, TypeError)
    assert "parameter 'n' of add_kernel: a signature type is a string" in str(error)


def test_tilec_compile_of_no_kernel_or_a_signature_that_is_no_dict_is_a_launch_argument_error():
    error = raised(lambda: tilec.compile(lambda x: x, {"x": "i32"}, backend="interp"))
    assert isinstance(error, tilec.LaunchArgumentError) and isinstance(error, TypeError)
    assert "tilec.compile takes a @tilec.jit kernel; got <function" in str(error)
    error = raised(lambda: tilec.compile(add_kernel, "*fp32,*fp32,*fp32,i32", backend="interp"))
    assert isinstance(error, tilec.LaunchArgumentError)
    assert "add_kernel: tilec.compile takes the signature as a dict" in str(error)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("TILEC_CACHE_MAX_MB", "lots"), ("TILEC_INTERP_HANG_TIMEOUT", "soon")],
)
def test_a_tilec_variable_a_launch_cannot_use_is_an_option_value_error(
    monkeypatch, variable, value
):
    monkeypatch.setenv(variable, value)
    x, out = arrays()
    error = raised(lambda: add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="interp"))
    assert isinstance(error, tilec.OptionValueError) and isinstance(error, ValueError)
    assert f"{variable}={value!r} is not a positive number" in str(error)


def test_asking_the_interp_backend_for_gpu_properties_is_a_backend_error():
    from tilec.runtime import driver

    tilec.set_backend("interp")
    error = raised(lambda: driver.active.utils.get_device_properties())
    assert isinstance(error, tilec.BackendUnavailableError) and isinstance(error, RuntimeError)
    assert "backend 'interp' runs on the host and has no GPU device properties" in str(error)


def tuned_kernel():
    return tilec.autotune([tilec.Config({"BLOCK": 8}), tilec.Config({"BLOCK": 16})], key=["n"])(
        add_kernel
    )


def test_mistakes_at_an_autotuned_or_heuristic_launch_are_launch_argument_errors():
    x, out = arrays()
    line = sys._getframe().f_lineno + 1
    error = raised(lambda: tuned_kernel()[(1,)](x, x, out, 8, BLOCK=8, backend="interp"))
    assert isinstance(error, tilec.LaunchArgumentError) and isinstance(error, TypeError)
    assert "add_kernel: conflicting meta-parameters BLOCK" in str(error)
    assert error.call_site == f"{__file__}:{line}"
    inside = [os.path.basename(f) for f in internal_frames(error)]
    assert inside == ["entry.py"]  # the autotuned launch (user_entry)
    heuristic = tilec.heuristics({"BLOCK": lambda args: 8})(add_kernel)
    error = raised(lambda: heuristic[(1,)](x, x, out, 8, 8, backend="interp"))
    assert isinstance(error, tilec.LaunchArgumentError)
    assert "'BLOCK' is computed by @tilec.heuristics; do not pass it at launch by position" in str(
        error
    )


def test_a_heuristic_replaces_a_value_passed_at_launch_as_in_triton():
    """Triton's Heuristics.run sets each computed keyword over the one passed (flash-linear-
    attention passes USE_CACHE_START and computes it too); the heuristic sees the passed value,
    and a differing one is named in a HeuristicsWarning."""
    from tilec.runtime.autotune import HeuristicsWarning

    x = np.arange(16, dtype=np.float32)
    seen = []

    def block(args):
        seen.append(args["BLOCK"])
        return 16

    heuristic = tilec.heuristics({"BLOCK": block})(add_kernel)
    out = np.zeros_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        heuristic[(1,)](x, x, out, 16, BLOCK=16, backend="interp")  # the same value: no warning
    np.testing.assert_array_equal(out, x + 1)
    out = np.zeros_like(x)
    with pytest.warns(HeuristicsWarning, match=r"BLOCK=4 passed at launch is replaced by .* 16"):
        heuristic[(1,)](x, x, out, 16, BLOCK=4, backend="interp")
    np.testing.assert_array_equal(out, x + 1)  # computed with BLOCK=16: all 16 elements
    assert seen == [16, 4]


def internal_frames(error: BaseException) -> list[str]:
    files = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
    return [f for f in files if os.sep + "tilec" + os.sep in f]


@pytest.mark.parametrize("debug", [False, True])
def test_warmup_errors_are_raised_as_launch_errors_are(monkeypatch, debug):
    """A warmup's mistake has the user's call site and, unless TILEC_DEBUG, no tilec frames
    below the one that raises it; with TILEC_DEBUG the whole traceback."""
    if debug:
        monkeypatch.setenv("TILEC_DEBUG", "1")
    else:
        monkeypatch.delenv("TILEC_DEBUG", raising=False)
    x, out = arrays()
    line = sys._getframe().f_lineno + 1
    error = raised(lambda: add_kernel.warmup(x, "y", out, 8, grid=(1,), BLOCK=8, backend="interp"))
    assert isinstance(error, tilec.LaunchArgumentError)
    assert "argument 'y_ptr' of add_kernel: expected an array" in str(error)
    assert error.call_site == f"{__file__}:{line}"
    inside = [os.path.basename(f) for f in internal_frames(error)]
    if debug:
        assert "specialization.py" in inside, inside
    else:
        assert inside == ["entry.py"], inside  # the warmup call (user_entry)
    error = raised(lambda: add_kernel.warmup(x, x, out, 8, grid=(1,), BLOCK=8, backend="cuda"))
    assert isinstance(error, tilec.UnknownBackendError) and error.call_site is not None


# The CLI ---------------------------------------------------------------------------------------

SCRIPT = """\
import numpy as np
import tilec
import tilec.language as tl


@tilec.jit
def copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)))


x = np.zeros(8, np.float32)
copy[(1,)](x, "out", BLOCK=8)
"""

BROKEN_KERNEL = """\
import tilec
import tilec.language as tl


@tilec.jit
def broken(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), not_defined_anywhere)
"""


def tilec_command(tmp_path: Path, *args: str, debug: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TILEC_BACKEND", "TILEC_DEBUG")}
    env["TILEC_CACHE_DIR"] = str(tmp_path / "cache")
    if debug:
        env["TILEC_DEBUG"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "tilec", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_tilec_run_prints_a_launch_error_with_the_scripts_line_and_exits_1(tmp_path):
    script = tmp_path / "bad_launch.py"
    script.write_text(SCRIPT)
    result = tilec_command(tmp_path, "run", str(script), "--backend", "interp")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if "error" in line]
    assert line == (
        f"tilec run: error: {script}:12: argument 'out_ptr' of copy: expected an array (a "
        "NumPy array, a torch tensor or a DLPack producer) for a pointer, an int, float or bool; "
        "got str"
    )
    debug = tilec_command(tmp_path, "run", str(script), "--backend", "interp", debug=True)
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_tilec_compile_prints_a_kernels_compile_error_located_and_exits_1(tmp_path):
    source = tmp_path / "broken.py"
    source.write_text(BROKEN_KERNEL)
    result = tilec_command(
        tmp_path, "compile", f"{source}:broken", "--signature", "x_ptr=*fp32",
        "--constexpr", "BLOCK=8", "--backend", "interp",
    )  # fmt: skip
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"{source}:7:")
    assert "not_defined_anywhere" in result.stderr


MISMATCH = """\
import numpy as np

import tilec
import tilec.language as tl
from tilec.runtime import check


@tilec.jit
def fill(x_ptr, VALUE: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, 8), tl.full([8], VALUE, tl.float32))


def compiled(value, backend):
    return tilec.compile(fill, {"x_ptr": "*fp32"}, {"VALUE": value}, backend=backend)


x = np.zeros(8, np.float32)
check.run_checked(compiled(1.0, "hostcpu"), (1,), [x], lambda: compiled(2.0, "interp"))
"""


def test_tilec_run_check_mismatch_is_one_line_naming_the_argument_and_what_to_do(tmp_path):
    """A backend that differs from the interpreter under --check (here the example backend
    against a reference that is another kernel) printed tilec's whole traceback; it is one line
    now, with the script's line."""
    from tilec.plugin.manager import load_backends

    hostcpu = load_backends().get("hostcpu")
    if hostcpu is None or not hostcpu.is_available():
        pytest.skip("needs a backend other than interp: the example backend tilec-hostcpu")
    script = tmp_path / "mismatch.py"
    script.write_text(MISMATCH)
    result = tilec_command(tmp_path, "run", str(script), "--backend", "interp")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if "error" in line]
    assert line.startswith(
        f"tilec run: error: {script}:18: --check: fill: argument 'x_ptr' differs from the "
        "interpreter at index 0: got 1.0, expected 2.0 (8 of 8 elements differ"
    )
    assert "a bug in the backend or in tilec, not in your script" in line
    assert "TILEC_DEBUG=1 shows the traceback" in line
    debug = tilec_command(tmp_path, "run", str(script), "--backend", "interp", debug=True)
    assert "Traceback" in debug.stderr and "CheckError" in debug.stderr
