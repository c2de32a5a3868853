"""The driver side of a backend: what the runtime calls to run compiled kernels.

A backend (`tilec.backend.Backend`) is a compiler and a driver, kept apart as in Triton. The
runtime reaches the driver through `Backend.driver` and calls only the methods declared here:

- `is_available()`: whether kernels can run on this machine (asked by backend selection);
- `load(compiled)`: the kernel's binary loaded once, kept in `compiled.runtime`;
- `run(compiled, grid, args, stream=None)`: one launch with the user's arguments
  (`CompiledKernel.run`);
- `make_runner(compiled, sample_args)`: a `(grid, args, stream)` launch function for arguments
  like `sample_args`, cached by the launcher for launches like this one (the hot path);
- `to_device(array)` / `to_host(value)`: memory for `tilec.to_device` and `check=True`.

`stream` is the `stream=` launch option as the user gave it (a torch or CuPy stream, a driver
stream object, an int handle) or None: the current torch stream of the arguments' device where
torch tensors are passed, else the default stream (`tilec.interop.streams.launch_stream`).
Drivers that run on the host (interp) finish each launch before returning, which honours any
stream order. Launches of one kernel from several threads at once must be safe.

A driver module imports nothing of its vendor (cuda.bindings, hip) at module level.
"""

from __future__ import annotations

import abc
import sys
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import attrs

from tilec.errors import InvalidDeviceIndexError

_selected_device: int | None = None


def set_device(index: int | None) -> None:
    """Launch on GPU `index` where a launch's arguments do not say (NumPy arrays, scalars, device
    arrays without a device); None: follow torch's current device (`torch.cuda.set_device`),
    else device 0. A launch with torch tensors (or DLPack arrays) runs on their device.

    Raises InvalidDeviceIndexError (a ValueError) for anything else; an index beyond the
    machine's GPUs is a DeviceNotFoundError at the launch that uses it."""
    global _selected_device
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
        raise InvalidDeviceIndexError(
            f"set_device takes a device index (an int >= 0) or None; got {index!r}"
        )
    _selected_device = index


def current_device() -> int:
    """The device of launches whose arguments do not say (see `set_device`)."""
    if _selected_device is not None:
        return _selected_device
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return int(torch.cuda.current_device())
    return 0


Runner = Callable[[tuple[int, ...], Sequence[Any], Any], None]
"""A prepared launch: `runner(grid, args, stream)`."""


def grid_sizes(grid: Any, max_grid: tuple[int, int, int]) -> tuple[int, int, int] | None:
    """`grid`'s three sizes where it is a tuple of 1 to 3 ints, each positive and inside
    `max_grid`: a grid whose checks a launch made for it may skip when the very tuple comes
    again (`InlineLaunch`, `tilec.runtime.native_launch`); None for any other grid."""
    if type(grid) is not tuple or not 1 <= len(grid) <= 3:
        return None
    sizes = (*grid, 1, 1)[:3]
    if all(type(d) is int and 0 < d <= m for d, m in zip(sizes, max_grid, strict=True)):
        return sizes  # type: ignore[return-value]
    return None


@attrs.frozen
class InlineLaunch:
    """A runner's launch, offered for inlining into the launcher's generated fast path
    (`tilec.runtime.hot_path`), which saves a call and a second unpacking a launch. A runner
    that has one sets it as its `inline` attribute (with `run_values`).

    `namespace` holds the names the statements read; `body(values, result)` gives them as
    source text, reading `grid` and `stream`, with `values` the expression of the packed
    values (device addresses for pointers) and `result` what a `return` among them gives. The
    fast path may set `GRID` (a grid tuple) and `XYZ` (its three sizes, checked against
    `max_grid`) in its copy of the namespace: a launch with that very tuple skips the grid's
    checks."""

    namespace: dict[str, Any]
    body: Callable[[str, str], str]
    max_grid: tuple[int, int, int]
    native: NativeLaunch | None = None
    """The same launch for native code (`tilec.runtime.native_launch`), where the backend's
    driver has a `cuLaunchKernel`-shaped entry point."""


@attrs.frozen
class NativeLaunch:
    """A runner's driver call, for `tilec.runtime.native_launch`: `entry(function, grid x, y, z,
    block x, y, z, shared, stream, kernelParams, extra)` returning 0 on success
    (`cuLaunchKernel`, `hipModuleLaunchKernel`), with the stream `current_stream(ordinal)`
    (torch's current stream's handle). `several_devices` is a list whose first item is true
    while the process uses several devices (the native launch then leaves the launch to the
    Python path, which enters the device's context). Where `one_wave_function` is not 0, a
    launch of at most `one_wave_programs` programs calls the entry with it instead of `function`
    (the kernel assembled for launches of one wave: `tilec_nvidia.one_wave`)."""

    entry: int
    function: int
    block: tuple[int, int, int]
    shared: int
    current_stream: Callable[[int], int]
    ordinal: int
    several_devices: list
    max_grid: tuple[int, int, int]
    one_wave_function: int = 0
    one_wave_programs: int = 0


@attrs.frozen
class Availability:
    """Whether a backend can run here, and if not, a reason a user can act on."""

    available: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.available


class Driver(abc.ABC):
    """Loads and launches a backend's compiled kernels and moves arrays to and from its memory."""

    torch_device: ClassVar[str] = "cpu"
    """PyTorch's device type of the memory the kernels address (`torch.device(torch_device,
    index)`, the module `torch.<torch_device>`), what `triton.runtime.driver.active` answers
    (`get_active_torch_device`, `get_device_interface`): `cpu` for a driver on host memory."""

    @abc.abstractmethod
    def is_available(self) -> Availability:
        """Whether this machine can run the backend's kernels. Must report, never raise."""

    def load(self, compiled: Any) -> Any:
        """Load `compiled` (a `tilec.runtime.compiler.CompiledKernel`) once and return the handle
        its launches use. Drivers that run kernels without loading (interp) return None."""
        return None

    @abc.abstractmethod
    def run(
        self, compiled: Any, grid: tuple[int, ...], args: Sequence[Any], stream: Any = None
    ) -> None:
        """Launch `compiled` on `grid` with its runtime `args` (NumPy arrays, device arrays,
        scalars) on `stream`, copying NumPy arrays in and back where the kernel writes them."""

    def make_runner(self, compiled: Any, sample_args: Sequence[Any]) -> Runner:
        """A launch function for arguments like `sample_args` (the launcher keys runners by
        argument types, dtypes, devices and alignment). The default runs `run`."""

        def runner(grid: tuple[int, ...], args: Sequence[Any], stream: Any = None) -> None:
            self.run(compiled, grid, args, stream)

        return runner

    def to_device(self, array: Any) -> Any:
        """A copy of the NumPy `array` in the backend's memory; the array itself where the
        backend runs on host memory (interp)."""
        return array

    def to_host(self, value: Any) -> Any:
        """A NumPy copy of a device array argument (for `check=True`).

        Raises NotImplementedError where the driver has no device memory to read from.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot copy arrays to the host")
