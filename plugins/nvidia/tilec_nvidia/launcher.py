"""`NvidiaDriver`: the NVIDIA backend's `tilec.driver.Driver`, on `CudaDriver`'s primitives.

Arrays and the general launch path are the core's (`tilec.interop.gpu_driver.GpuDriver`); what is NVIDIA's
own is loading a cubin (else its PTX) and `make_runner`, a launch function compiled per kernel and
argument kinds that calls `cuLaunchKernel` directly.
"""

from __future__ import annotations

import functools
import struct
import textwrap
from collections.abc import Sequence
from typing import Any

from tilec.driver import Availability, InlineLaunch, NativeLaunch, Runner
from tilec.interop.device import stream_handle
from tilec.interop.gpu_driver import GpuDriver
from tilec.interop.placement import launch_device
from tilec.interop.pointers import device_array_getter, is_torch_tensor
from tilec.interop.streams import torch_stream_getter
from tilec_nvidia import driver as cuda


class NvidiaDriver(GpuDriver):
    def is_available(self) -> Availability:
        return cuda.runtime_availability()

    def runtime(self, ordinal: int | None = None) -> cuda.CudaDriver:
        return cuda.get_driver(ordinal)

    def load_binary(self, runtime: cuda.CudaDriver, compiled: Any) -> cuda.CudaKernel:
        """The kernel's cubin, else its PTX (JIT-compiled by the driver)."""
        md = compiled.metadata
        binary = compiled.asm.get("cubin")
        is_ptx = binary is None
        kernel = runtime.load(
            compiled.asm["ptx"] if is_ptx else binary,
            md["kernel"],
            is_ptx=is_ptx,
            shared_bytes=md["shared_bytes"],
            signature=md["params"],
            param_names=compiled.runtime_params,
            num_warps=md["num_warps"],
            threads_per_warp=md["threads_per_warp"],
        )
        one_wave = compiled.asm.get("cubin_one_wave")
        if isinstance(one_wave, bytes) and not is_ptx:
            runtime.add_one_wave(kernel, one_wave, md["num_warps"] * md["threads_per_warp"])
        if not md.get("tensor_maps") and not md.get("global_scratch_size"):
            return kernel
        # deferred: the tensor maps' packer and encoder (4-5 ms to import) wait for a kernel
        # that reads host descriptors through TMA; a plain kernel's first launch loads neither
        from tilec_nvidia import tma_launch

        return tma_launch.install(runtime, kernel, md, compiled.runtime_params)

    def resource_usage(self, loaded: Any) -> dict[str, int]:
        """Registers a thread, spilled 4-byte words (local memory, as Triton counts spills) and
        shared memory (static and dynamic) a block."""
        return {
            "num_regs": loaded.num_regs,
            "n_spills": loaded.local_bytes // 4,
            "shared": loaded.shared_bytes + loaded.static_shared_bytes,
        }

    def make_runner(self, compiled: Any, sample_args: Sequence[Any]) -> Runner:
        """Without NumPy arrays (which are copied in and out) the runner packs the arguments and
        calls `cuLaunchKernel` directly; else it is the general path, `run`. Without `stream=`,
        a runner for torch tensors launches on torch's current stream of the device. It runs on
        the device of its sample arguments (`launch_device`). A runner for torch tensors also
        has `run_values(grid, values, stream)`, which takes device addresses for pointers: the
        launcher's fast path (`tilec.runtime.hot_path`) has read them for its guards already."""
        driver = self.runtime(launch_device(sample_args))
        getters = []
        for kind, value in zip(compiled.metadata["params"], sample_args, strict=True):
            if not kind.startswith("*"):
                getters.append(None)
                continue
            getter = device_array_getter(driver, value)
            if getter is None:  # NumPy (copies) or anything unusual: the general path
                return super().make_runner(compiled, sample_args)
            getters.append(getter)
        loaded = self.load(compiled, driver)
        max_x, max_y, max_z = driver.properties.max_grid
        md = compiled.metadata
        threads = md["num_warps"] * md["threads_per_warp"]
        if threads > loaded.max_threads:
            driver.check_block(loaded, md["num_warps"], md["threads_per_warp"])
        current = torch_stream_getter() if any(map(is_torch_tensor, sample_args)) else None
        namespace = {
            "cu_launch": driver.cu.cuLaunchKernel, "function": loaded.function,
            "shared": loaded.shared_bytes, "pack": loaded.packer.pack, "threads": threads,
            "streams": driver._streams, "driver": driver,
            "stream_handle": stream_handle, "current": current, "multi": cuda.MULTI_DEVICE,
            "active": driver.active, "launch_device": launch_device,
            "general": super().make_runner(compiled, sample_args),
            "ordinal": driver.properties.ordinal, "loaded": loaded,
            "max_x": max_x, "max_y": max_y, "max_z": max_z, "md": md,
            "pack_into": loaded.packer.struct.pack_into, "buffer": loaded.packer.buffer,
            "params": loaded.packer.address, "acquire": loaded.packer.lock.acquire,
            "release": loaded.packer.lock.release, "GRID": None, "XYZ": None,
            "struct_error": struct.error, "one_wave_function": loaded.one_wave_function,
            "one_wave_programs": loaded.one_wave_programs,
        }  # fmt: skip
        names = [f"a{i}" for i in range(len(getters))]
        values = []
        for i, getter in enumerate(getters):
            if getter is not None:
                namespace[f"get{i}"] = getter
            values.append(f"a{i}" if getter is None else f"get{i}(a{i})")
        default = "0" if current is None else "current(ordinal)"
        source = _RUNNER.format(
            unpack=", ".join(names) + ("," if len(names) == 1 else "") or "()",
            values=", ".join(values) + ("," if len(values) == 1 else "") or "()",
            device_check="" if current is not None else _DEVICE_CHECK,
            launch=textwrap.indent(_launch_body(loaded, default, "values", "None"), "    "),
        )
        exec(compile(source, f"<tilec launcher {compiled.name}>", "exec"), namespace)
        run = namespace["run"]
        if current is not None:  # torch tensors: the device is in the launcher's key
            run.run_values = namespace["run_values"]
            run.inline = InlineLaunch(
                namespace,
                functools.partial(_launch_body, loaded, default),
                max_grid=(max_x, max_y, max_z),
                native=_native(driver, loaded, threads, current, (max_x, max_y, max_z))
                if native_packs(md)
                else None,
            )
        return run


def native_packs(md: dict) -> bool:
    """Whether the native launch (`tilec.runtime.native_launch`) may launch the kernel: it packs
    the parameters in C (no tensor maps, no global scratch)."""
    return not (md.get("tensor_maps") or md.get("global_scratch_size"))


def _native(
    driver: cuda.CudaDriver, loaded: Any, threads: int, current: Any, max_grid: tuple
) -> NativeLaunch | None:
    """The launch for `tilec.runtime.native_launch`: `cuLaunchKernel`'s entry point as the
    driver API resolves it (`cuGetProcAddress`, the call cuda-bindings makes), or None where it
    cannot be had (an older driver or a test's fake without it)."""
    entry = getattr(driver, "_native_entry", _UNKNOWN)
    if entry is _UNKNOWN:
        entry = driver._native_entry = _launch_entry(driver.cu)
    if entry is None:
        return None
    try:
        function = int(loaded.function)
        one_wave = loaded.one_wave_function
        one_wave = 0 if one_wave is None else int(one_wave)
    except (TypeError, ValueError):
        return None
    return NativeLaunch(
        entry=entry, function=function, block=(threads, 1, 1), shared=loaded.shared_bytes,
        current_stream=current, ordinal=driver.properties.ordinal,
        several_devices=cuda.MULTI_DEVICE, max_grid=max_grid, one_wave_function=one_wave,
        one_wave_programs=loaded.one_wave_programs,
    )  # fmt: skip


_UNKNOWN = object()


def _launch_entry(cu: Any) -> int | None:
    """The address of `cuLaunchKernel` (the version of it for the driver's CUDA version), asked
    once per driver (kept as its `_native_entry`)."""
    try:
        error, version = cu.cuDriverGetVersion()
        if int(error):
            return None
        error, address, _status = cu.cuGetProcAddress(b"cuLaunchKernel", int(version), 0)
        return (int(address) or None) if not int(error) else None
    except (AttributeError, TypeError, ValueError):
        return None


def _launch_body(loaded: Any, default: str, values: str, result: str) -> str:
    """The statements of a launch, for `run_values` and for inlining into the launcher's fast path
    (`InlineLaunch`): `values` is the expression of the packed values (device addresses for
    pointers), `result` what a `return` inside gives; they read `grid` and `stream`."""
    if getattr(loaded.packer, "scratch_size", 0):  # global scratch for the programs
        pack = f"pack({values}, x * y * z, handle)"
    elif not loaded.packer.direct:  # bf16 or float8 scalars: converted by `pack`
        pack = f"pack({values})"
    else:
        spread = values[1:-1] if values.startswith("(") else f"*{values}"
        pack = _PACK_DIRECT.format(spread=spread, values=values)
    function = (
        "function"
        if loaded.one_wave_function is None
        else "(one_wave_function if x * y * z <= one_wave_programs else function)"
    )
    return _LAUNCH.format(
        default=default, values=values, result=result, pack=pack, function=function
    )


_PACK_DIRECT = """try:
        pack_into(buffer, 0, {spread})
    except struct_error:
        pack({values})  # raises the error that names the argument"""
"""Packing without conversions (no bf16 or float8 scalar): `struct.pack_into` into the kernel's
buffer."""


_LAUNCH = """\
if stream is None:
    handle = {default}
else:
    handle = stream if type(stream) is int else stream_handle(stream)
hstream = streams.get(handle)
if hstream is None:
    hstream = driver.stream(handle)
if grid is GRID:
    x, y, z = XYZ
else:
    n = len(grid)
    x = grid[0]
    y = grid[1] if n > 1 else 1
    z = grid[2] if n > 2 else 1
    if n > 3 or not (0 < x <= max_x and 0 < y <= max_y and 0 < z <= max_z):
        if n > 3 or (x and y and z):
            driver.launch(loaded, grid, md["num_warps"], md["threads_per_warp"], {values}, handle)
        return {result}
acquire()
try:
    {pack}
    if multi[0]:
        with active():
            result = cu_launch({function}, x, y, z, threads, 1, 1, shared, hstream, params, 0)
    else:
        result = cu_launch({function}, x, y, z, threads, 1, 1, shared, hstream, params, 0)
finally:
    release()
if result[0]:
    driver._launch_error(loaded, result, (x, y, z), threads, hstream, params)
"""
"""A launch on a cache hit: the stream (torch's current one unless `stream=`), the grid (checked
against the device's limits unless it is the very tuple `GRID` checked when the code was made),
the arguments packed into the kernel's buffer with one `struct.pack_into` and `cuLaunchKernel`
(of the one-wave function where the kernel has one and the grid fits it: `CudaKernel.function_for`),
under the kernel's lock (the driver copies the buffer during the call), so that a launch costs
little more than `cuLaunchKernel` itself. A grid over the limits or of a zero size goes to the
general path (`driver.launch`: the error, or nothing to do)."""

_RUNNER = """
def run_values(grid, values, stream=None):
{launch}

def run(grid, args, stream=None):
{device_check}    {unpack} = args
    run_values(grid, ({values}), stream)
"""
"""The launch functions `make_runner` compiles per kernel and argument kinds: `run` unpacks the
arguments and reads device pointers with a getter per array; `run_values` takes the raw values
(addresses for pointers: the launcher's fast path has read them already)."""

_DEVICE_CHECK = """\
    if launch_device(args) != ordinal:
        return general(grid, args, stream)
"""
"""Without torch tensors (whose devices are in the launcher's key), the device of a launch may
differ from the runner's (`tilec.set_device`, arrays of another device): the general path."""
