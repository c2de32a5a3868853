"""The errors tilec raises for a user's mistake, in one place (`tilec.TilecError` and below).

Every error that a launch (`kernel[grid](...)`), `tilec.compile` or a `tilec` command raises for
something the user can fix is a `TilecError`; anything else is a bug in tilec or a plugin. The
launch errors also subclass the builtin that tilec raised for them before (`TypeError`,
`ValueError`, `RuntimeError`), so that `except TypeError` keeps working; where one kind of
mistake was raised as two builtins (a grid of floats is a `TypeError`, a negative grid size a
`ValueError`), its class subclasses both, as NumPy's `AxisError` is a `ValueError` and an
`IndexError`. Messages name the kernel and the argument or option.

This module imports nothing of tilec, so that every layer (the frontend, the runtime, the
plugins' drivers) can raise these.
"""

from __future__ import annotations


class TilecError(Exception):
    """A mistake the user can fix: in a kernel, its launch, its options or a command's input."""


class LaunchError(TilecError):
    """A launch or compile that cannot be made as asked: the kernel's code is fine, but an
    argument, the grid, an option, the backend or the device does not fit it."""


class LaunchArgumentError(LaunchError, TypeError, ValueError):
    """A kernel argument or keyword that does not fit: too many or too few, unknown, given
    twice, of a type or dtype no kernel takes, on another device, read-only but written (a
    `TypeError` before), or a constexpr other than the one a `CompiledKernel` was compiled
    with (a `ValueError`)."""


class GridError(LaunchError, TypeError, ValueError):
    """A grid that is not 1 to 3 non-negative ints (a `TypeError` where a size is no int, a
    `ValueError` where the count or a size is out of range, before)."""


class OptionError(LaunchError, TypeError, ValueError):
    """A launch or backend option that the backend does not have (a `TypeError`, as for an
    unknown keyword, before) or whose value it refuses (a `ValueError`)."""


class BackendError(LaunchError, ValueError, RuntimeError):
    """A backend that cannot be used as asked: an unknown name (a `ValueError` before), one that
    is not available here, or one that needs a target to compile without a device (a
    `RuntimeError` before)."""


class DeviceLimitError(LaunchError, RuntimeError):
    """A launch that asks for more than the device allows: shared memory, threads a block,
    programs along a grid axis. The GPU backends raise it as their driver error too
    (`CudaError`, `HipError`)."""


__all__ = [
    "BackendError",
    "DeviceLimitError",
    "GridError",
    "LaunchArgumentError",
    "LaunchError",
    "OptionError",
    "TilecError",
]
