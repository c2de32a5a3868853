"""`HostCpuDriver`: loads the kernels' objects into this process and runs them on the fibers.

Loading JIT-links the `obj` stage's ELF object (llvmlite's MCJIT) against the runtime
(`tilec_hostcpu.fibers`) and the C library, once per compiled kernel (`compiled.runtime`). A
launch packs the arguments with tilec's `Packer` (the `void *params[]` that CUDA's and HIP's
launches take too), then the runtime runs every thread of every block; the launch has finished
when `run` returns, which honours any stream order. Arrays live in host memory: NumPy arrays and
CPU torch tensors are passed by address and written in place.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from tilec.driver import Availability, Driver
from tilec.errors import GridTypeError, GridValueError, LaunchArgumentError
from tilec.interop.device import stream_handle
from tilec.runtime import packing

MAX_GRID = (2**31 - 1, 65535, 65535)
"""The most blocks along each grid axis (program ids are i32), as on CUDA."""


class HostCpuError(RuntimeError):
    """A kernel stopped on the host CPU (a failed `tl.device_assert`)."""


class Packer(packing.Packer):
    kernel_kind = "a hostcpu kernel"


@attrs.frozen
class LoadedKernel:
    """A kernel JIT-linked into this process: its entry point and its argument packer."""

    name: str
    engine: Any
    """The llvmlite execution engine that owns the code (kept alive with the kernel)."""
    entry: int
    packer: Packer


class HostCpuDriver(Driver):
    def is_available(self) -> Availability:
        machine = platform.machine().lower()
        if machine not in ("x86_64", "amd64") or not sys.platform.startswith("linux"):
            return Availability(
                False, f"runs on x86-64 Linux only (this is {machine} on {sys.platform})"
            )
        if platform.libc_ver()[0] != "glibc":
            return Availability(False, "needs the GNU C library (kernels call its printf and libm)")
        if ctypes.util.find_library("gcc_s") is None:
            return Availability(False, "needs libgcc_s (GCC's runtime: the f16 conversions)")
        return Availability(True, "runs on this CPU (x86-64 code for a fixed baseline CPU)")

    def load(self, compiled: Any) -> LoadedKernel:
        loaded = compiled.runtime.get("loaded")
        if loaded is not None:
            return loaded
        # deferred: llvmlite and the runtime are needed only once a kernel runs
        import llvmlite.binding as llvm

        from tilec.lowering.llvm_codegen import LLVM_LOCK
        from tilec_hostcpu import codegen, fibers
        from tilec_hostcpu.target_info import ENTRY_SUFFIX

        metadata = compiled.metadata
        with LLVM_LOCK:
            fibers.runtime()  # its symbols resolve the kernel's references
            engine = llvm.create_mcjit_compiler(
                llvm.parse_assembly(""), codegen.jit_target_machine()
            )
            engine.add_object_file(llvm.ObjectFileRef.from_data(compiled.asm["obj"]))
            engine.finalize_object()
            entry = engine.get_function_address(metadata["kernel"] + ENTRY_SUFFIX)
        packer = Packer(metadata["params"], compiled.runtime_params)
        loaded = LoadedKernel(metadata["kernel"], engine, entry, packer)
        compiled.runtime["loaded"] = loaded
        compiled.metadata.update(num_regs=0, n_spills=0, shared=metadata["shared_bytes"])
        return loaded

    def run(
        self, compiled: Any, grid: tuple[int, ...], args: Sequence[Any], stream: Any = None
    ) -> None:
        from tilec_hostcpu import fibers  # deferred: see `load`

        if stream is not None:
            stream_handle(stream)  # a wrong stream= fails here too
        loaded = self.load(compiled)
        sizes = _grid(grid, loaded.name)
        params = compiled.runtime_params
        if len(args) != len(params):
            raise LaunchArgumentError(
                f"{loaded.name} takes {len(params)} arguments ({', '.join(params)}); got "
                f"{len(args)}"
            )
        values = [
            _address(value, name) if kind.startswith("*") else value
            for value, name, kind in zip(args, params, compiled.metadata["params"], strict=True)
        ]
        if 0 in sizes:
            return
        metadata = compiled.metadata
        threads = metadata["num_warps"] * metadata["threads_per_warp"]
        runtime = fibers.runtime()
        with runtime.lock:
            finished = runtime.run(loaded.entry, loaded.packer.pack(values), sizes, threads)
            _flush_c_stdout()
            if not finished:
                block = tuple(runtime.variable("tilec_hostcpu_block", ctypes.c_int32 * 3))
                thread = runtime.variable("tilec_hostcpu_thread", ctypes.c_int32).value
        if not finished:
            raise HostCpuError(
                f"kernel {loaded.name} stopped in block {block}, thread {thread}: a "
                "tl.device_assert failed (its message is printed above)"
            )

    def to_host(self, value: Any) -> np.ndarray:
        """The array itself, as NumPy (host memory: no copy)."""
        return _host_array(value)


def _grid(grid: Any, kernel: str) -> tuple[int, int, int]:
    if not isinstance(grid, tuple) or not 1 <= len(grid) <= 3:
        raise GridTypeError(f"the grid of {kernel} must be 1 to 3 sizes, got {grid!r}")
    try:
        sizes = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    except (TypeError, ValueError):
        raise GridTypeError(f"the grid of {kernel} must hold ints, got {grid!r}") from None
    for axis, (size, limit) in enumerate(zip(sizes, MAX_GRID, strict=True)):
        if not 0 <= size <= limit:
            raise GridValueError(
                f"the grid of {kernel} is {size} blocks along axis {axis}; the hostcpu backend "
                f"runs 0 to {limit} along it"
            )
    return sizes  # type: ignore[return-value]


def _host_array(value: Any) -> np.ndarray:
    """A NumPy view of a host array argument (NumPy, CPU torch tensors, DLPack producers)."""
    if isinstance(value, np.ndarray):
        return value
    if type(value).__module__.split(".")[0] == "torch":
        if value.device.type != "cpu":
            raise LaunchArgumentError(f"a tensor on {value.device} is not in host memory")
        torch = sys.modules["torch"]
        tensor = value.detach()
        if tensor.dtype == torch.bfloat16:  # NumPy has no bf16: its bit patterns
            return tensor.view(torch.int16).numpy().view(np.uint16)
        if str(tensor.dtype).startswith("torch.float8"):
            return tensor.view(torch.uint8).numpy()
        return tensor.numpy()
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    if hasattr(value, "__array_interface__"):
        return np.asarray(value)
    raise LaunchArgumentError(
        f"a pointer argument must be a host array (NumPy, a CPU torch tensor), got "
        f"{type(value).__name__}"
    )


def _address(value: Any, name: str) -> int:
    """The host address of pointer argument `name`'s first element."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, np.ndarray):
        return value.__array_interface__["data"][0]
    try:
        if type(value).__module__.split(".")[0] == "torch":
            if value.device.type != "cpu":
                raise LaunchArgumentError(f"on {value.device}")
            return int(value.data_ptr())
        return _host_array(value).__array_interface__["data"][0]
    except LaunchArgumentError as error:
        raise LaunchArgumentError(
            f"argument '{name}': {error}; the hostcpu backend runs on host memory: pass a "
            "NumPy array or a CPU torch tensor"
        ) from None


_LIBC = ctypes.CDLL(None)


def _flush_c_stdout() -> None:
    """Write out what the kernels' printf buffered (C's stdout is not Python's)."""
    _LIBC.fflush(None)
