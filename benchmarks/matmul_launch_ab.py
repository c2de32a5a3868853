"""Where the sweep's long-K matmul loses to Triton (issue 23): the kernel binary or its launch.

    python benchmarks/matmul_launch_ab.py [--cases longk1024,longk,skinny,square3072,square] [--rounds 3]

Needs an NVIDIA GPU, torch and Triton. The sweep's `sweep_matmul` for a case of
benchmarks/matmul_static.py (its sizes, dtype and config) is compiled by both compilers
(`matmul_static.compiled`); each cubin is then loaded and launched by one ctypes launcher on
libcuda (`cuModuleLoadData`, `cuLaunchKernel`), under three ways of loading it:

- `driver`: the dynamic shared memory allowed up to the kernel's need and no cache
  configuration (the driver picks the L1/shared split), as tilec's loader does;
- `triton`: `CU_FUNC_CACHE_PREFER_SHARED` and the device's opt-in limit, as Triton's loader
  (`backends/nvidia/driver.c`) does for a kernel of more than 48 KB;
- `prefer-l1`: `CU_FUNC_CACHE_PREFER_L1` (how much the split matters at all).

tilec's PTX is also timed in the hand-made variants of benchmarks/matmul_ptx_variants.py
(`select-slot`, `loads-first`, both), assembled by tilec's ptxas, through the `driver` load.

Each side's own launch (`jit` kernel `[grid](...)`, as the sweep launches) is timed too. Every
variant is timed with `triton.testing.do_bench` (median), tilec's own launch also with
`tilec.testing.do_bench` (as the sweep times it), the variants interleaved over `--rounds`, and
checked against torch first. Read: if Triton's cubin through the `driver` load
is as slow as tilec's, the loss is the launch; if tilec's cubin through the `triton` load is as
slow as through `driver`, it is the binary.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import matmul_static  # noqa: E402
from matmul_ptx_variants import VARIANTS  # noqa: E402

CACHE = {"driver": None, "triton": 1, "prefer-l1": 2}
"""CUfunc_cache per load: none set, CU_FUNC_CACHE_PREFER_SHARED, CU_FUNC_CACHE_PREFER_L1."""
MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
SHARED_STATIC = 1  # CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
SHARED_OPTIN = 97  # CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN


class Driver:
    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.cu.cuLaunchKernel.argtypes = [ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                                           ctypes.c_void_p, ctypes.c_void_p]  # fmt: skip

    def check(self, result: int, what: str) -> None:
        if result:
            name = ctypes.c_char_p()
            self.cu.cuGetErrorName(result, ctypes.byref(name))
            raise RuntimeError(f"{what}: {name.value.decode() if name.value else result}")

    def load(self, image: bytes, name: str, shared: int, way: str):
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(module), image), "cuModuleLoadData")
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(function), module, name.encode()),
                   "cuModuleGetFunction")  # fmt: skip
        limit = shared
        if way == "triton":
            optin, static, device = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
            self.check(self.cu.cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
            self.check(self.cu.cuDeviceGetAttribute(ctypes.byref(optin), SHARED_OPTIN, device),
                       "cuDeviceGetAttribute")  # fmt: skip
            self.check(self.cu.cuFuncGetAttribute(ctypes.byref(static), SHARED_STATIC, function),
                       "cuFuncGetAttribute")  # fmt: skip
            limit = optin.value - static.value
        if shared > 48 * 1024:
            self.check(self.cu.cuFuncSetAttribute(function, MAX_DYNAMIC_SHARED, limit),
                       "cuFuncSetAttribute")  # fmt: skip
            if CACHE[way] is not None:
                self.check(
                    self.cu.cuFuncSetCacheConfig(function, CACHE[way]), "cuFuncSetCacheConfig"
                )
        return function

    def launcher(self, function, grid: tuple, threads: int, shared: int, params: list):
        import torch

        slots = (ctypes.c_void_p * len(params))(*[ctypes.addressof(p) for p in params])

        def launch():
            stream = torch.cuda.current_stream().cuda_stream
            self.check(self.cu.cuLaunchKernel(function, *grid, threads, 1, 1, shared, stream,
                                              slots, None), "cuLaunchKernel")  # fmt: skip

        launch.keep = (params, slots)
        return launch


def variants(case: str, driver: Driver) -> tuple[dict, object]:
    import torch

    m, n, k, dtype, config, _bias = matmul_static.CASES[case]
    kind = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    block_m, block_n, block_k, warps, stages = config
    a = torch.randn(1, m, k, device="cuda", dtype=kind)
    b = torch.randn(1, k, n, device="cuda", dtype=kind)
    c = torch.empty(1, m, n, device="cuda", dtype=kind)
    grid = ((m + block_m - 1) // block_m * ((n + block_n - 1) // block_n), 1, 1)
    strides = [*a.stride(), *b.stride(), *c.stride()]
    pointers = [ctypes.c_uint64(t.data_ptr()) for t in (a, b, c, c)]
    ints = [m, n, k, *strides]
    launches = {}
    ptx = {}
    for side in ("tilec", "triton"):
        kernel = matmul_static.compiled(side, case)
        ptx[side] = kernel.asm["ptx"]
        if side == "tilec":
            image, name, shared = kernel.asm["cubin"], kernel.metadata["name"], kernel.metadata["shared_bytes"]  # fmt: skip
            params = pointers + [ctypes.c_int32(v) for v in ints]
        else:
            meta = kernel.metadata
            image, name, shared = kernel.asm["cubin"], meta.name, meta.shared
            assert not getattr(meta, "global_scratch_size", 0), "a global scratch is not passed"
            unit = {2, 5, 8}  # the last strides (of a, b and c): compiled in as 1
            kept = [v for i, v in enumerate(strides) if i not in unit]
            params = pointers + [ctypes.c_int32(v) for v in [m, n, k, *kept]]
            params += [ctypes.c_uint64(0), ctypes.c_uint64(0)]  # global and profile scratch
        for way in CACHE:
            function = driver.load(image, name, shared, way)
            launches[f"{side} cubin, {way} load"] = driver.launcher(function, grid, 32 * warps, shared, params)  # fmt: skip
        if side == "tilec":  # hand-made PTX variants (matmul_ptx_variants), tilec's ptxas
            from tilec_nvidia.codegen import ptx_to_cubin

            for variant, make in VARIANTS.items():
                text = make(ptx[side])
                if text is None:
                    print(f"{case}: variant {variant} does not apply")
                    continue
                function = driver.load(ptx_to_cubin(text, "sm_90a"), name, shared, "driver")
                launches[f"tilec {variant} cubin, driver load"] = driver.launcher(function, grid, 32 * warps, shared, params)  # fmt: skip
    from sweep import load_kernels

    for side in ("tilec", "triton"):
        jitted = load_kernels(side)["sweep_matmul"]

        def native(jitted=jitted):
            jitted[(*grid[:1], 1)](a, b, c, c, m, n, k, *strides, BLOCK_M=block_m,
                                    BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, BIAS_RELU=False,
                                    num_warps=warps, num_stages=stages)  # fmt: skip

        launches[f"{side} own launch"] = native
        own = jitted.warmup(a, b, c, c, m, n, k, *strides, BLOCK_M=block_m, BLOCK_N=block_n,
                            BLOCK_K=block_k, GROUP_M=8, BIAS_RELU=False, num_warps=warps,
                            num_stages=stages, grid=grid[:2])  # fmt: skip
        same = own.asm["ptx"] == ptx[side]
        print(f"{case}: {side}'s own launch compiles the PTX of matmul_static: {same}")
    reference = torch.matmul(a.float(), b.float())

    def check(name: str) -> float:
        c.fill_(float("nan"))
        launches[name]()
        torch.cuda.synchronize()
        error = float(torch.linalg.norm((c.float() - reference).flatten()) / torch.linalg.norm(reference.flatten()))  # fmt: skip
        if not error < 2e-2:
            raise SystemExit(f"{case}: {name} is wrong (relative error {error:.2e})")
        return error

    for name in launches:
        check(name)
    return launches, 2.0 * m * n * k


def open_driver() -> Driver:
    """The launcher, on torch's primary context (made current); prints the device."""
    import torch

    torch.cuda.init()
    torch.empty(1, device="cuda")  # the primary context, current
    print(torch.cuda.get_device_name(), flush=True)
    return Driver()


def time_table(title: str, timed: list, rounds: int, flops: float) -> None:
    """Time each `(name, launch, bench)` of `timed` (`bench`: a do_bench), interleaved over
    `rounds`, and print the medians as a table against "triton own launch"."""
    times: dict[str, list[float]] = {name: [] for name, _, _ in timed}
    for _ in range(rounds):
        for name, launch, bench in timed:
            times[name].append(bench(launch, warmup=25, rep=200, return_mode="median") * 1e3)
    print_table(title, times, flops)


def print_table(title: str, times: dict[str, list[float]], flops: float) -> None:
    """`times` ({variant: microseconds a round}) as a table of medians against "triton own
    launch"."""
    base = statistics.median(times["triton own launch"])
    print(f"\n{title}")
    print("| variant | us (median of rounds) | TFLOP/s | Triton own launch / this |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        us = statistics.median(values)
        print(f"| {name} | {us:.1f} | {flops / us / 1e6:.1f} | {base / us:.3f} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=lambda s: s.split(","), default=["longk1024", "longk", "skinny", "square3072", "square"])  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from triton.testing import do_bench

    from tilec.testing import do_bench as own_bench

    driver = open_driver()
    for case in args.cases:
        launches, flops = variants(case, driver)
        timed = [(name, launch, do_bench) for name, launch in launches.items()]
        timed.append(("tilec own launch, tilec.testing timer (the sweep's)",
                      launches["tilec own launch"], own_bench))  # fmt: skip
        time_table(f"{case} {matmul_static.CASES[case][:5]}", timed, args.rounds, flops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
