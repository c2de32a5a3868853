"""The errors tilec raises for a user's mistake, in one place (`tilec.TilecError` and below).

Every error that a launch (`kernel[grid](...)`), `tilec.compile` or a `tilec` command raises for
something the user can fix is a `TilecError`; anything else is a bug in tilec or a plugin. Each
launch error is also the builtin that tilec raised for it before (`TypeError`, `ValueError`,
`RuntimeError`), exactly that one, so that `except TypeError` code keeps catching what it caught
and no other handler starts to: where one kind of mistake was raised as two builtins (a grid of
floats was a `TypeError`, a negative grid size a `ValueError`), its class (`GridError`) has a
subclass for each. Messages name the kernel and the argument or option.

This module imports nothing of tilec, so that every layer (the frontend, the runtime, the
plugins' drivers) can raise these.
"""

from __future__ import annotations


class TilecError(Exception):
    """A mistake the user can fix: in a kernel, its launch, its options or a command's input."""

    call_site: str | None = None
    """`file:line` of the user's `kernel[grid](...)` whose launch raised it (None elsewhere)."""


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


class ArgumentValueError(LaunchError, ValueError):
    """An argument whose value does not fit: a constexpr other than the one a `CompiledKernel`
    was compiled with, a signature type that `tilec.compile` does not know (`*fp99`)."""


class GridError(LaunchError):
    """A grid that is not 1 to 3 non-negative ints."""


class GridTypeError(GridError, TypeError):
    """A grid, or a size in it, that is no int (None, a str, a float)."""


class GridValueError(GridError, ValueError):
    """A grid of no or more than 3 sizes, or with a negative one."""


class OptionError(LaunchError):
    """A launch or backend option that the backend lacks or whose value it refuses."""


class OptionTypeError(OptionError, TypeError):
    """An option the backend does not have (as an unknown keyword is a `TypeError`), or a
    Triton launch option it cannot honour."""


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
