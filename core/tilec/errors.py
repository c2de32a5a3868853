"""The errors tilec raises for a user's mistake, in one place (`tilec.TilecError` and below).

Every error that a launch (`kernel[grid](...)`), `tilec.compile`, an `@tilec.autotune` or
`@tilec.heuristics` decorator or a `tilec` command raises for something the user can fix is a
`TilecError`; anything else is a bug in tilec or a plugin. Each such error is also the builtin
that tilec raised for it before (`TypeError`, `ValueError`, `RuntimeError`), exactly that one, so
that `except TypeError` code keeps catching what it caught and no other handler starts to: where
one kind of mistake was raised as two builtins (a grid of floats was a `TypeError`, a negative
grid size a `ValueError`), its class (`GridError`) has a subclass for each. Messages name the
kernel and the argument or option.

This module imports nothing of tilec, so that every layer (the frontend, the runtime, the
plugins' drivers) can raise these.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class TilecError(Exception):
    """A mistake the user can fix: in a kernel, its launch, its options or a command's input."""

    call_site: str | None = None
    """`file:line` of the user's call that raised it: a launch (`kernel[grid](...)`,
    `compiled[grid](...)`), a warmup, a `tilec.compile`, an `@tilec.autotune` or
    `@tilec.heuristics` decorator (None elsewhere)."""


class KernelCallError(TilecError, RuntimeError):
    """Kernel code run as ordinary Python: a `@tilec.jit` kernel called as `kernel(...)` instead
    of launched as `kernel[grid](...)`, or a `tilec.language` function (`tl.load`) called
    outside a kernel."""


class LaunchError(TilecError):
    """A launch or compile that cannot be made as asked: the kernel's code is fine, but an
    argument, the grid, an option, the backend or the device does not fit it."""


class LaunchArgumentError(LaunchError, TypeError):
    """A kernel argument or keyword that does not fit: too many or too few, unknown, given
    twice, of a type or dtype no kernel takes, on another device, read-only but written."""


class ArgumentOverflowError(LaunchArgumentError, OverflowError):
    """An int argument beyond 64 bits (below -2**63 or from 2**64 on): also an `OverflowError`,
    as Triton's launch raises it."""


class ArgumentValueError(LaunchError, ValueError):
    """An argument whose value does not fit: a constexpr other than the one a `CompiledKernel`
    was compiled with, a signature type that `tilec.compile` does not know (`*fp99`)."""


class FreedArrayError(ArgumentValueError):
    """A `tilec.to_device` array used after its `free()`: launched (the message names the
    argument), copied (`numpy()`, `copy_from`) or handed on (`__cuda_array_interface__`)."""


class TensorDescriptorError(LaunchError, AssertionError):
    """A host-side `TensorDescriptor` that breaks one of Triton's rules (rank, 16-byte aligned
    base and strides, a contiguous last dimension, positive shape, padding): an `AssertionError`
    with Triton's text, as Triton's own checks raise it."""


class GridError(LaunchError):
    """A grid that is not 1 to 3 non-negative ints."""


class GridTypeError(GridError, TypeError):
    """A grid, or a size in it, that is no int (None, a str, a float)."""


class GridValueError(GridError, ValueError):
    """A grid of no or more than 3 sizes, or with a negative one."""


class OptionError(LaunchError):
    """A launch or backend option that the backend lacks or whose value it refuses."""


class OptionTypeError(OptionError, TypeError):
    """An option the backend does not have (as an unknown keyword is a `TypeError`), a Triton
    launch option it cannot honour, or a process-wide setting of the wrong kind
    (`tilec.set_allocator` of something that is no function)."""


class OptionValueError(OptionError, ValueError):
    """An option value the backend refuses (`num_warps=3`, an unknown `target`), or a `TILEC_*`
    variable's value that tilec refuses (`TILEC_CACHE_MAX_MB=lots`)."""


class BackendError(LaunchError):
    """A backend that cannot be used as asked."""


class UnknownBackendError(BackendError, ValueError):
    """A backend name that no installed plugin provides."""


class BackendUnavailableError(BackendError, RuntimeError):
    """A backend that cannot run here (no device, no driver), or that needs a `target=` to
    compile without a device."""


class DeviceLimitError(LaunchError, RuntimeError):
    """A launch that asks for more than the device allows: shared memory, threads a block,
    programs along a grid axis. The GPU backends raise it as their driver error too
    (`CudaLimitError` is a `CudaError`, `HipLimitError` a `HipError`)."""


class DeviceIndexError(LaunchError):
    """A device index that names no GPU: not an int >= 0, or beyond this machine's GPUs."""


class InvalidDeviceIndexError(DeviceIndexError, ValueError):
    """A device index that is no int >= 0 (`tilec.set_device(-1)`, `set_device("cuda:1")`)."""


class DeviceNotFoundError(DeviceIndexError, RuntimeError):
    """A launch or copy on a GPU this machine lacks (`tilec.set_device(5)` with two GPUs). The
    GPU backends raise it as their driver error too (`CudaDeviceNotFoundError` is a
    `CudaError`, `HipDeviceNotFoundError` a `HipError`)."""


class GraphCaptureError(LaunchError, RuntimeError):
    """A launch with NumPy arrays while a CUDA or HIP graph is being captured: their copies in
    and out would allocate and synchronize inside the capture. The GPU backends raise it as
    their driver error too (`CudaCaptureError` is a `CudaError`, `HipCaptureError` a
    `HipError`)."""


class DriverErrors(NamedTuple):
    """The errors of one GPU driver (`driver_errors`)."""

    error: type[RuntimeError]
    limit: type[DeviceLimitError]
    device_not_found: type[DeviceNotFoundError]
    capture: type[GraphCaptureError]


def driver_errors(prefix: str, module: str, failure: str) -> DriverErrors:
    """The error classes of a GPU driver, as a backend's driver module defines them:
    `<prefix>Error`, a RuntimeError (`failure` says when: "A HIP call failed"), and the user's
    mistakes, each both that error and the core's: `<prefix>LimitError` (`DeviceLimitError`),
    `<prefix>DeviceNotFoundError` (`DeviceNotFoundError`) and `<prefix>CaptureError`
    (`GraphCaptureError`). `module` is the driver module's `__name__`, where the classes are to
    be bound under these names (they print and pickle as its):
    `HipError, HipLimitError, ... = driver_errors("Hip", __name__, "A HIP call failed")`."""

    def error_class(name: str, bases: tuple[type, ...], doc: str) -> Any:
        name = f"{prefix}{name}"
        return type(name, bases, {"__doc__": doc, "__module__": module, "__qualname__": name})

    error = error_class("Error", (RuntimeError,), f"{failure}, or a launch exceeds a device limit.")
    mistake = "the user's to fix, a `tilec.TilecError`"
    return DriverErrors(
        error,
        error_class(
            "LimitError",
            (error, DeviceLimitError),
            f"A launch that asks for more than the device allows: {mistake}.",
        ),
        error_class(
            "DeviceNotFoundError",
            (error, DeviceNotFoundError),
            f"A device index beyond this machine's devices (`tilec.set_device(5)` with two "
            f"GPUs): {mistake}.",
        ),
        error_class(
            "CaptureError",
            (error, GraphCaptureError),
            f"NumPy arguments of a launch while a graph is being captured: {mistake}.",
        ),
    )


class DecoratorError(TilecError):
    """An `@tilec.autotune` or `@tilec.heuristics` that cannot wrap the kernel as written: its
    configs, key or parameter names, hooks or heuristics, or what it is put over (no
    `@tilec.jit` below it, or an autotuner over another). Raised where the decorator is
    applied; the message names the kernel and the fix."""


class DecoratorTypeError(DecoratorError, TypeError):
    """A decorator argument of the wrong kind: a config that is no `tilec.Config`, a key given
    as a str, a heuristic or hook that is no function, a decorator over something other than a
    `@tilec.jit` kernel, an `@tilec.autotune` over an autotuned kernel."""


class DecoratorValueError(DecoratorError, ValueError):
    """A decorator argument whose value does not fit: no configs, a name that is no parameter
    of the kernel, `top_k` without a `perf_model`."""


class AllConfigsFailed(TilecError, RuntimeError):
    """Every config of an autotuned kernel failed to compile, load or run; the message lists
    each one's reason. (Where every config failed with one and the same launch error, a
    mistake in the launch rather than in the configs, that error is raised instead.)"""
