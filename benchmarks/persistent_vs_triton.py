"""Persistent and descriptor-based matmuls: tilec's nvidia backend against Triton, same source.

    python benchmarks/persistent_vs_triton.py [--sizes 4096,8192] [--quick] [--only VARIANTS]
        [--json FILE]

Needs an NVIDIA GPU, torch and triton (the device machine has them). Issue 23 names the kernels
no benchmark measured yet: persistent matmuls (a grid of one program per SM looping over output
tiles, Triton's persistent-matmul tutorial's pattern) and matmuls that read through tensor
descriptors (host-side `TensorDescriptor`s and in-kernel `tl.make_tensor_descriptor`), which
Triton lowers to TMA on Hopper, with and without `warp_specialize`. The kernels below are
written once and exec'd under `tilec` and under `triton`; each variant runs the same configs on
both sides (fp16 operands, f32 accumulation, B stored N x K for the descriptor variants) and each
side's best config is compared. Times: every config of both sides that passed, timed turn about in
one loop by benchmarks/paired_timer.py (the sweep's timer: one flush and one event timer for all,
the order rotated each repetition; each side's own do_bench, side after side, had Triton's own
kernel at 8192^3 move from 682 to 742 TFLOP/s between two runs of one tree); TFLOP/s = 2 M N K /
time; every result is checked against torch.matmul first.

Variants:
- `plain`: one program a tile, pointer loads (tutorial 03's kernel), the baseline;
- `persistent`: `NUM_SMS` programs, `tl.range(start, tiles, NUM_SMS, flatten=True)`;
- `persistent-nest`: the same with `flatten=False` (the K loop pipelined alone, each tile's
  pipeline drained and refilled): whether fusing pays, on each side;
- `host-desc` / `host-desc-ws`: one program a tile, host-side descriptors, the K loop
  `tl.range(..., warp_specialize=False/True)`;
- `device-desc-persistent` / `...-ws`: `NUM_SMS` programs, descriptors made in the kernel
  (`tl.make_tensor_descriptor`, a global scratch from `set_allocator`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

KERNELS = """
@jit
def tile_of(tile, num_m, num_n, GROUP: tl.constexpr):
    per_group = GROUP * num_n
    first_m = (tile // per_group) * GROUP
    rows = tl.minimum(num_m - first_m, GROUP)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


@jit
def tile_product(a_ptr, b_ptr, pid_m, pid_n, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + rm[:, None] * K + (k * BK + rk)[None, :],
                    mask=(k * BK + rk)[None, :] < K, other=0.0)
        b = tl.load(b_ptr + rn[None, :] * K + (k * BK + rk)[:, None],
                    mask=(k * BK + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    return acc


@jit
def store_tile(c_ptr, acc, pid_m, pid_n, M, N, BM: tl.constexpr, BN: tl.constexpr):
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * N + cn[None, :], acc.to(tl.float16),
             mask=(cm[:, None] < M) & (cn[None, :] < N))


@jit
def plain_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr, GROUP: tl.constexpr):
    pid_m, pid_n = tile_of(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP)
    acc = tile_product(a_ptr, b_ptr, pid_m, pid_n, M, N, K, BM, BN, BK)
    store_tile(c_ptr, acc, pid_m, pid_n, M, N, BM, BN)


@jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr, GROUP: tl.constexpr, NUM_SMS: tl.constexpr,
                      FLATTEN: tl.constexpr):
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), num_m * num_n, NUM_SMS, flatten=FLATTEN):
        pid_m, pid_n = tile_of(tile, num_m, num_n, GROUP)
        acc = tile_product(a_ptr, b_ptr, pid_m, pid_n, M, N, K, BM, BN, BK)
        store_tile(c_ptr, acc, pid_m, pid_n, M, N, BM, BN)


@jit
def host_desc_matmul(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr, GROUP: tl.constexpr, WS: tl.constexpr):
    pid_m, pid_n = tile_of(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=WS):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([pid_n * BN, k * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))


@jit
def device_desc_persistent(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr, GROUP: tl.constexpr, NUM_SMS: tl.constexpr,
                           WS: tl.constexpr, FLATTEN: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), num_m * num_n, NUM_SMS, flatten=FLATTEN,
                         warp_specialize=WS):
        pid_m, pid_n = tile_of(tile, num_m, num_n, GROUP)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([pid_n * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))
"""

CONFIGS = [  # BM, BN, BK, warps, stages
    (128, 256, 64, 8, 3),
    (128, 128, 64, 8, 4),
    (128, 128, 64, 4, 3),
]

VARIANTS = (
    "plain",
    "persistent",
    "persistent-nest",
    "host-desc",
    "host-desc-ws",
    "device-desc-persistent",
    "device-desc-persistent-ws",
)


def load(flavour: str) -> dict:
    """The kernels exec'd under tilec or triton, with that side's descriptor and allocator."""
    if flavour == "tilec":
        import tilec as front
        import tilec.language as tl
        from tilec.tools.tensor_descriptor import TensorDescriptor
    else:
        import triton as front
        import triton.language as tl
        from triton.tools.tensor_descriptor import TensorDescriptor
    module = f"persistent_vs_triton_{flavour}"
    namespace = {"jit": front.jit, "tl": tl, "__name__": module}
    path = Path(tempfile.gettempdir()) / f"{module}.py"
    path.write_text(KERNELS)  # both JITs read the source through inspect
    exec(compile(KERNELS, str(path), "exec"), namespace)
    namespace["TensorDescriptor"] = TensorDescriptor
    namespace["set_allocator"] = front.set_allocator
    return namespace


def launcher(ns: dict, variant: str, a, b, c, config, num_sms: int):
    """A no-argument function running `variant` once with `config` on (a, b^T) into c."""
    bm, bn, bk, warps, stages = config
    m, k = a.shape
    n = b.shape[0]
    tiles = math.ceil(m / bm) * math.ceil(n / bn)
    meta = dict(BM=bm, BN=bn, BK=bk, GROUP=8, num_warps=warps, num_stages=stages)
    if variant == "plain":
        return lambda: ns["plain_matmul"][(tiles,)](a, b, c, m, n, k, **meta)
    if variant.startswith("persistent"):
        kernel, grid = ns["persistent_matmul"], (min(num_sms, tiles),)
        flat = variant == "persistent"
        return lambda: kernel[grid](a, b, c, m, n, k, NUM_SMS=num_sms, FLATTEN=flat, **meta)
    if variant.startswith("host-desc"):
        descs = [ns["TensorDescriptor"].from_tensor(t, block)
                 for t, block in ((a, [bm, bk]), (b, [bn, bk]), (c, [bm, bn]))]  # fmt: skip
        ws = variant.endswith("-ws")
        return lambda: ns["host_desc_matmul"][(tiles,)](*descs, m, n, k, WS=ws, **meta)
    ws = variant.endswith("-ws")
    kernel, grid = ns["device_desc_persistent"], (min(num_sms, tiles),)
    # Triton's tutorial: Hopper's warp specialization does not take a flattened loop
    return lambda: kernel[grid](a, b, c, m, n, k, NUM_SMS=num_sms, WS=ws, FLATTEN=not ws, **meta)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,8192", help="M = N = K values")
    parser.add_argument("--only", default=",".join(VARIANTS), help="variants, comma-separated")
    parser.add_argument("--quick", action="store_true", help="shorter timing")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args(argv)
    variants = [v for v in args.only.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    import torch
    import triton.testing

    import tilec.testing

    def alloc(size: int, alignment: int, stream):
        return torch.empty(size, device="cuda", dtype=torch.int8)

    sides = {"tilec": load("tilec"), "triton": load("triton")}
    for ns in sides.values():
        ns["set_allocator"](alloc)
    timers = {"tilec": tilec.testing.do_bench, "triton": triton.testing.do_bench}
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from paired_timer import paired_bench

    num_sms = torch.cuda.get_device_properties("cuda").multi_processor_count
    warmup, rep = (10, 50) if args.quick else (25, 200)
    print(f"device: {torch.cuda.get_device_name()}, {num_sms} SMs; fp16, f32 accumulation")
    print("| variant | size | tilec best config | Triton best config | tilec TFLOP/s | "
          "Triton TFLOP/s | tilec/Triton | notes |")  # fmt: skip
    print("|---|---|---|---|---:|---:|---:|---|")
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(0)
    for size in (int(s) for s in args.sizes.split(",")):
        a = torch.randn(size, size, device="cuda", generator=gen).half()
        b = torch.randn(size, size, device="cuda", generator=gen).half()  # N x K
        ref = a.float() @ b.float().T
        for variant in variants:
            best, notes, runs = {}, [], {}
            for side, ns in sides.items():
                for config in CONFIGS:
                    c = torch.full((size, size), float("nan"), device="cuda", dtype=torch.float16)
                    try:
                        run = launcher(ns, variant, a, b, c, config, num_sms)
                        run()
                        torch.cuda.synchronize()
                    except Exception as error:  # report it and go on
                        notes.append(f"{side} {config}: {type(error).__name__}: "
                                     f"{str(error).splitlines()[0][:120]}")  # fmt: skip
                        continue
                    err = float((c.float() - ref).norm() / ref.norm())
                    if not err < 1e-2:
                        notes.append(f"{side} {config}: wrong result (relative error {err:.2e})")
                        continue
                    runs[side, config] = run
            try:
                times_us = paired_bench(runs, warmup, rep) if runs else {}
            except Exception as error:  # each alone, with its side's do_bench
                notes.append(f"paired timing: {type(error).__name__}; each timed alone")
                times_us = {key: timers[key[0]](run, warmup=warmup, rep=rep,
                                                return_mode="median") * 1e3
                            for key, run in runs.items()}  # fmt: skip
            for (side, config), us in times_us.items():
                tflops = 2 * size**3 / us / 1e6
                if tflops > best.get(side, (0, None))[0]:
                    best[side] = (tflops, config)
            t, r = best.get("tilec", (float("nan"), None)), best.get("triton", (float("nan"), None))
            ratio = t[0] / r[0] if r[0] == r[0] and r[0] > 0 else float("nan")
            name = lambda cfg: "-" if cfg is None else "{}x{}x{} w{} s{}".format(*cfg)  # noqa: E731
            print(f"| {variant} | {size}^3 | {name(t[1])} | {name(r[1])} | {t[0]:.1f} | "
                  f"{r[0]:.1f} | **{ratio:.3f}** | {'; '.join(notes)} |", flush=True)  # fmt: skip
            rows.append({"variant": variant, "size": size, "tilec": t[0], "triton": r[0],
                         "tilec_config": t[1], "triton_config": r[1], "ratio": ratio,
                         "notes": notes})  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps({"device": torch.cuda.get_device_name(),
                                               "rows": rows}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
