"""tilec's nvidia backend against Triton and torch on the same inputs, in one run.

    python benchmarks/gpu_vs_triton.py [--quick] [--json FILE] [--only PARTS]

Needs an NVIDIA GPU, torch and triton (the device machine has both). The kernels are written once
(`KERNELS`, plus the matmul of `matmul_vs_triton.py` and the flash-attention forward of
`examples/attention.py`) and exec'd twice, under `tilec` and under `triton`, so both compile the
same source. Memory-bound kernels are reported in TB/s, the matmul and attention in TFLOP/s
(torch's column there is `torch.matmul` and `scaled_dot_product_attention`).
Times are `do_bench` medians (CUDA events; `tilec.testing`'s for tilec, Triton's for the others) in microseconds; bandwidth counts each
input read once and each output written once. Also measured: host time per launch on a cache hit
(tilec, Triton, a bare `cuLaunchKernel`), the cold compile of the vector add (source to loaded
module, fresh cache, fresh process) and a disk-cache hit in a new process.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNELS = """
@jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


@jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    row = tl.load(input_ptr + row_idx * input_row_stride + col_offsets, mask=mask,
                  other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    tl.store(output_ptr + row_idx * output_row_stride + col_offsets, numerator / denominator,
             mask=mask)


@jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)
"""


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PARTS = ("memory", "flops", "launch", "cold")


def example_kernels(path: Path, names: tuple[str, ...]) -> str:
    """The source of the @jit functions `names` of an example, decorated `@jit` instead."""
    text = path.read_text()
    lines = text.splitlines()
    found = {
        node.name: "\n".join(lines[node.lineno - 1 : node.end_lineno])
        for node in ast.parse(text).body
        if isinstance(node, ast.FunctionDef) and node.name in names
    }
    return "".join(f"\n\n@jit\n{found[name]}\n" for name in names)


def all_kernels() -> str:
    from matmul_vs_triton import KERNEL as MATMUL

    attention = example_kernels(EXAMPLES / "attention.py", ("_attn_fwd_inner", "attn_fwd"))
    return KERNELS + MATMUL + attention


def load_kernels(flavour: str) -> dict:
    """The kernels (`all_kernels`) exec'd under tilec or triton."""
    if flavour == "tilec":
        import tilec as front
        import tilec.language as tl
    else:
        import triton as front
        import triton.language as tl
    # A module name: Triton's code generator reads `__module__` of the @jit functions a kernel
    # calls (attention's inner loop), which exec'd functions lack without one.
    module = f"gpu_vs_triton_kernels_{flavour}"
    namespace = {"jit": front.jit, "tl": tl, "__name__": module}
    path = Path(tempfile.gettempdir()) / f"{module}.py"
    source = all_kernels()
    path.write_text(source)  # inspect.getsource (both JITs need it) reads the file
    exec(compile(source, str(path), "exec"), namespace)
    return namespace


def next_power_of_2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def softmax_warps(block: int) -> int:
    return 4 if block < 2048 else 8 if block < 4096 else 16


def bench(fn, quick: bool, tilec_side: bool = False, warmup=None, rep=None) -> float:
    """Median microseconds of `fn` (CUDA events, do_bench: tilec.testing's for tilec's side);
    `warmup` and `rep` (milliseconds) replace the defaults of `quick`."""
    from triton.testing import do_bench

    if tilec_side:
        from tilec.testing import do_bench

    warmup = warmup if warmup is not None else 10 if quick else 50
    rep = rep if rep is not None else 50 if quick else 300
    ms = do_bench(fn, warmup=warmup, rep=rep, return_mode="median")
    return ms * 1e3


def rel_error(out, ref) -> float:
    import torch

    return float(
        torch.linalg.norm((out.double() - ref.double()).flatten())
        / torch.linalg.norm(ref.double().flatten())
    )


def run_kernels(quick: bool) -> list[dict]:
    import torch

    ours, theirs = load_kernels("tilec"), load_kernels("triton")
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(int(time.time()))

    # vector add --------------------------------------------------------------------------------
    n = 1 << 27
    x = torch.randn(n, device="cuda", generator=gen)
    y = torch.randn(n, device="cuda", generator=gen)
    outputs = {}
    for name, ns in (("tilec", ours), ("triton", theirs)):
        out = torch.full_like(x, float("nan"))
        kernel = ns["add_kernel"]

        def call(kernel=kernel, out=out):
            kernel[(triton_cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)

        call()
        torch.cuda.synchronize()
        outputs[name] = (out, call)
    ref = x + y
    rows.append(compare("vector add fp32 2^27", 3 * n * 4, outputs, ref, lambda: x + y, quick))

    # softmax -----------------------------------------------------------------------------------
    for rows_, cols in ((4096, 4096), (32768, 1024)):
        a = torch.randn(rows_, cols, device="cuda", generator=gen)
        block = next_power_of_2(cols)
        outputs = {}
        for name, ns in (("tilec", ours), ("triton", theirs)):
            out = torch.full_like(a, float("nan"))
            kernel = ns["softmax_kernel"]

            def call(kernel=kernel, out=out, a=a, block=block, cols=cols, rows_=rows_):
                kernel[(rows_,)](
                    out, a, a.stride(0), out.stride(0), cols, BLOCK_SIZE=block,
                    num_warps=softmax_warps(block),
                )  # fmt: skip

            call()
            torch.cuda.synchronize()
            outputs[name] = (out, call)
        ref = torch.softmax(a.double(), dim=1)
        rows.append(
            compare(
                f"softmax fp32 {rows_}x{cols}", 2 * a.numel() * 4, outputs, ref,
                lambda a=a: torch.softmax(a, dim=1), quick,
            )
        )  # fmt: skip

    # layernorm ---------------------------------------------------------------------------------
    m, n_cols = 4096, 8192
    a = torch.randn(m, n_cols, device="cuda", generator=gen)
    w = torch.rand(n_cols, device="cuda", generator=gen)
    b = torch.randn(n_cols, device="cuda", generator=gen)
    block = min(65536 // a.element_size(), next_power_of_2(n_cols))
    warps = min(max(block // 256, 1), 8)
    outputs = {}
    for name, ns in (("tilec", ours), ("triton", theirs)):
        out = torch.full_like(a, float("nan"))
        mean = torch.empty(m, device="cuda")
        rstd = torch.empty(m, device="cuda")
        kernel = ns["layer_norm_fwd"]

        def call(kernel=kernel, out=out, mean=mean, rstd=rstd):
            kernel[(m,)](
                a, out, w, b, mean, rstd, a.stride(0), n_cols, 1e-5, BLOCK_SIZE=block,
                num_warps=warps,
            )  # fmt: skip

        call()
        torch.cuda.synchronize()
        outputs[name] = (out, call)
    ref = torch.nn.functional.layer_norm(a.double(), (n_cols,), w.double(), b.double(), 1e-5)
    rows.append(
        compare(
            f"layernorm fwd fp32 {m}x{n_cols}", 2 * a.numel() * 4, outputs, ref,
            lambda: torch.nn.functional.layer_norm(a, (n_cols,), w, b, 1e-5), quick,
        )
    )  # fmt: skip
    return rows


ATTENTION_CONFIGS = [
    (64, (128, 64, 8, 3)),
    (64, (128, 32, 8, 2)),
    (64, (64, 64, 4, 3)),
    (128, (128, 64, 8, 3)),
    (128, (128, 32, 8, 3)),
    (128, (64, 64, 4, 3)),
    (128, (64, 32, 4, 3)),
]
"""Head dim, then BLOCK_M, BLOCK_N, num_warps, num_stages (configurations of Triton's tutorial
autotuning list), given to both compilers. tilec's registers (ptxas -v, sm_90a) for these: 206,
128, 255 with spills, 245."""


def run_flop_kernels(quick: bool) -> list[dict]:
    """The fp16 matmul (4096^3, Triton's tutorial configuration) and the attention forward
    (batch 4, 32 heads, sequence 4096, head dims 64 and 128, causal and not) in TFLOP/s."""
    import torch

    ours, theirs = load_kernels("tilec"), load_kernels("triton")
    gen = torch.Generator(device="cuda").manual_seed(int(time.time()))
    rows = []
    size = 4096
    a = torch.randn(size, size, device="cuda", generator=gen).half()
    b = torch.randn(size, size, device="cuda", generator=gen).half()
    outputs = {}
    for name, ns in (("tilec", ours), ("triton", theirs)):
        c = torch.full((size, size), float("nan"), device="cuda", dtype=torch.float16)

        def call(kernel=ns["matmul_kernel"], c=c):
            kernel[(triton_cdiv(size, 128) * triton_cdiv(size, 256),)](
                a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                c.stride(0), c.stride(1), BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64,
                GROUP_SIZE_M=8, num_warps=8, num_stages=3,
            )  # fmt: skip

        call()
        torch.cuda.synchronize()
        outputs[name] = (c, call)
    ref = a.double() @ b.double()
    rows.append(compare_flops("matmul fp16 4096^3 (128x256x64, 8 warps, 3 stages)",
                              2 * size**3, outputs, ref, lambda: a @ b, quick))  # fmt: skip
    for head_dim, config in ATTENTION_CONFIGS:
        q, k, v = (
            torch.randn(4, 32, 4096, head_dim, device="cuda", generator=gen).half()
            for _ in range(3)
        )
        for causal in (False, True):
            rows.append(attention_row(ours, theirs, q, k, v, causal, config, quick))
    return rows


def attention_row(ours, theirs, q, k, v, causal: bool, config: tuple, quick: bool) -> dict:
    """The attention forward of `examples/attention.py` on (batch, heads, seq, head_dim) inputs."""
    import torch

    batch, heads, n_ctx, head_dim = q.shape
    block_m, block_n, warps, stages = config
    sm_scale = head_dim**-0.5
    outputs = {}
    for name, ns in (("tilec", ours), ("triton", theirs)):
        out = torch.full_like(q, float("nan"))

        def call(kernel=ns["attn_fwd"], out=out):
            return kernel[(triton_cdiv(n_ctx, block_m), batch * heads)](
                q, k, v, out, sm_scale, *q.stride(), *k.stride(), *v.stride(), *out.stride(),
                heads, n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
                CAUSAL=causal, num_warps=warps, num_stages=stages,
            )  # fmt: skip

        launched = call()
        torch.cuda.synchronize()
        outputs[name] = (out, call)
        if name == "triton":  # Triton's resource report, for the profile notes
            metadata = getattr(launched, "metadata", None)
            resources = (getattr(launched, "n_regs", None), getattr(launched, "n_spills", None),
                         getattr(metadata, "shared", None))  # fmt: skip
            print(f"triton attn_fwd {tuple(q.shape)} {config} causal={causal}: "
                  f"registers, spills, shared bytes = {resources}", flush=True)  # fmt: skip

    def sdpa():
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=causal, scale=sm_scale
        )

    flops = 4 * batch * heads * n_ctx * n_ctx * head_dim // (2 if causal else 1)
    label = (f"attention fwd fp16 {batch}x{heads}x{n_ctx}x{head_dim} "
             f"{'causal' if causal else 'non-causal'} ({block_m}x{block_n}, {warps} warps, "
             f"{stages} stages)")  # fmt: skip
    return compare_flops(label, flops, outputs, sdpa(), sdpa, quick)


def compare_flops(label, flops, outputs, ref, torch_fn, quick) -> dict:
    row = {"kernel": label, "flops": flops}
    for name, (out, call) in outputs.items():
        row[f"{name}_error"] = rel_error(out, ref)
        row[f"{name}_us"] = bench(call, quick, name == "tilec")
    row["torch_us"] = bench(torch_fn, quick)
    for name in ("tilec", "triton", "torch"):
        row[f"{name}_tflops"] = flops / row[f"{name}_us"] / 1e6
    row["ratio"] = row["triton_us"] / row["tilec_us"]
    return row


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def compare(label, nbytes, outputs, ref, torch_fn, quick) -> dict:
    row = {"kernel": label, "bytes": nbytes}
    for name, (out, call) in outputs.items():
        row[f"{name}_error"] = rel_error(out, ref)
        row[f"{name}_us"] = bench(call, quick, name == "tilec")
    row["torch_us"] = bench(torch_fn, quick)
    for name in ("tilec", "triton", "torch"):
        row[f"{name}_tbs"] = nbytes / row[f"{name}_us"] / 1e6
    row["ratio"] = row["triton_us"] / row["tilec_us"]
    return row


def launch_overhead(quick: bool) -> dict:
    """Host microseconds per launch on a cache hit: tilec, Triton and a bare cuLaunchKernel."""
    import torch
    from cuda.bindings import driver as cu

    ours, theirs = load_kernels("tilec"), load_kernels("triton")
    n = 1024
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    count = 2000 if quick else 20000
    result = {}
    for name, ns in (("tilec", ours), ("triton", theirs)):
        kernel = ns["add_kernel"]
        launch = kernel[(1,)]
        for _ in range(100):
            launch(x, y, out, n, BLOCK_SIZE=1024)
        torch.cuda.synchronize()
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(count):
                launch(x, y, out, n, BLOCK_SIZE=1024)
            samples.append((time.perf_counter() - start) / count * 1e6)
            torch.cuda.synchronize()
        result[f"{name}_launch_us"] = statistics.median(samples)
    # tilec with an explicit stream= (torch's current stream's handle): no stream lookup. An
    # older tilec (without stream=, timed as a baseline) leaves this row out.
    handle = torch.cuda.current_stream().cuda_stream
    launch = ours["add_kernel"][(1,)]
    try:
        launch(x, y, out, n, BLOCK_SIZE=1024, stream=handle)
    except TypeError:
        launch = None
    samples = []
    for _ in range(5 if launch else 0):
        start = time.perf_counter()
        for _ in range(count):
            launch(x, y, out, n, BLOCK_SIZE=1024, stream=handle)
        samples.append((time.perf_counter() - start) / count * 1e6)
        torch.cuda.synchronize()
    if samples:
        result["tilec stream=_launch_us"] = statistics.median(samples)
    # A bare cuLaunchKernel of tilec's loaded kernel, arguments packed once.
    import tilec.runtime.cache as tilec_cache

    compiled = next(c for c in tilec_cache.memory.values() if c.name == "add_kernel")
    loaded = compiled.runtime["loaded"]
    params = loaded.packer.pack([x.data_ptr(), y.data_ptr(), out.data_ptr(), n])
    warps = compiled.metadata["num_warps"] * 32
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count):
            cu.cuLaunchKernel(loaded.function, 1, 1, 1, warps, 1, 1, 0, 0, params, 0)
        samples.append((time.perf_counter() - start) / count * 1e6)
        torch.cuda.synchronize()
    result["bare_launch_us"] = statistics.median(samples)
    return result


COLD = """
import os, sys, time
start = time.perf_counter()
flavour = sys.argv[1]
sys.path.insert(0, {here!r})
import gpu_vs_triton as g
import torch
x = torch.randn(1 << 20, device="cuda"); y = torch.randn_like(x); out = torch.empty_like(x)
torch.cuda.synchronize()
ns = g.load_kernels(flavour)
t0 = time.perf_counter()
ns["add_kernel"][(1024,)](x, y, out, 1 << 20, BLOCK_SIZE=1024)
torch.cuda.synchronize()
t1 = time.perf_counter()
assert torch.equal(out, x + y)
print((t1 - t0) * 1e3)
"""


def cold_compile(quick: bool) -> dict:
    """Milliseconds from launch call to finished first launch in a fresh process: fresh cache
    (cold compile) and then the same cache (disk hit)."""
    script = COLD.format(here=str(Path(__file__).parent))
    result = {}
    for flavour in ("tilec", "triton"):
        cold, warm = [], []
        for _ in range(2 if quick else 5):
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, TILEC_CACHE_DIR=cache, TRITON_CACHE_DIR=cache)
                for samples in (cold, warm):
                    done = subprocess.run(
                        [sys.executable, "-c", script, flavour], env=env, capture_output=True,
                        text=True, check=False,
                    )  # fmt: skip
                    if done.returncode != 0:
                        raise RuntimeError(f"{flavour} cold compile failed:\n{done.stderr}")
                    samples.append(float(done.stdout.strip().splitlines()[-1]))
        result[f"{flavour}_cold_ms"] = statistics.median(cold)
        result[f"{flavour}_disk_hit_ms"] = statistics.median(warm)
    return result


def print_launches(launches: dict) -> None:
    bare = launches["bare_launch_us"]
    print("| host time a launch (cache hit) | us | x bare |")
    print("|---|---|---|")
    for key, value in launches.items():
        print(f"| {key.removesuffix('_launch_us')} | {value:.2f} | {value / bare:.2f} |")


def print_tables(rows: list, flop_rows: list, launches: dict, cold: dict) -> None:
    if rows:
        print(
            "| kernel | tilec us | Triton us | torch us | tilec TB/s | Triton TB/s | tilec/Triton "
            "speed | tilec rel. error | Triton rel. error |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['kernel']} | {r['tilec_us']:.1f} | {r['triton_us']:.1f} | {r['torch_us']:.1f} "
            f"| {r['tilec_tbs']:.2f} | {r['triton_tbs']:.2f} | {r['ratio']:.3f} "
            f"| {r['tilec_error']:.1e} | {r['triton_error']:.1e} |"
        )
    if flop_rows:
        print()
        print(
            "| kernel | tilec us | Triton us | torch us | tilec TFLOP/s | Triton TFLOP/s | "
            "torch TFLOP/s | tilec/Triton speed | tilec rel. error | Triton rel. error |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
    for r in flop_rows:
        print(
            f"| {r['kernel']} | {r['tilec_us']:.1f} | {r['triton_us']:.1f} | {r['torch_us']:.1f} "
            f"| {r['tilec_tflops']:.1f} | {r['triton_tflops']:.1f} | {r['torch_tflops']:.1f} "
            f"| {r['ratio']:.3f} | {r['tilec_error']:.1e} | {r['triton_error']:.1e} |"
        )
    if launches:
        print()
        print_launches(launches)
    if cold:
        print()
        print("| vector add, fresh process | tilec ms | Triton ms |")
        print("|---|---|---|")
        print(
            f"| cold compile + load + launch | {cold['tilec_cold_ms']:.0f} | "
            f"{cold['triton_cold_ms']:.0f} |"
        )
        print(
            f"| disk-cache hit + load + launch | {cold['tilec_disk_hit_ms']:.0f} | "
            f"{cold['triton_disk_hit_ms']:.0f} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--only", help=f"comma-separated parts to run, of {', '.join(PARTS)}")
    parser.add_argument(
        "--launch-only", action="store_true", help="only the host time a launch (cache hit)"
    )
    args = parser.parse_args()
    import torch

    device = torch.cuda.get_device_name()
    if args.launch_only:
        import tilec

        print(f"device: {device}; date: {time.strftime('%Y-%m-%d')}; tilec: {tilec.__file__}")
        print_launches(launch_overhead(args.quick))
        return 0
    parts = set(args.only.split(",")) if args.only else set(PARTS)
    if parts - set(PARTS):
        parser.error(f"--only: unknown part(s) {sorted(parts - set(PARTS))}; use {PARTS}")
    rows = run_kernels(args.quick) if "memory" in parts else []
    flop_rows = run_flop_kernels(args.quick) if "flops" in parts else []
    launches = launch_overhead(args.quick) if "launch" in parts else {}
    cold = cold_compile(args.quick) if "cold" in parts else {}
    print(f"device: {device}; date: {time.strftime('%Y-%m-%d')}")
    print_tables(rows, flop_rows, launches, cold)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "device": device,
                    "kernels": rows,
                    "flop_kernels": flop_rows,
                    "launch": launches,
                    "cold": cold,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
