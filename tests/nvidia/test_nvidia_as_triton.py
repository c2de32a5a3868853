"""`tilec.as_triton` on an NVIDIA GPU: a Triton program with plain `import triton` runs on the
nvidia backend with CUDA tensors, `triton.runtime.driver.active` answers for the GPU, and
torch.compile of a CUDA graph runs Inductor's Triton kernels on tilec (or, with
`TILEC_AS_TRITON_INDUCTOR=0`, meets Inductor's own "no Triton" error).
Each check runs in a subprocess, so that the alias stays out of the other tests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="needs PyTorch")
pytestmark = pytest.mark.gpu

PROGRAMS = Path(__file__).parents[1] / "compat" / "triton_programs"


def run(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache"), "TILEC_BACKEND": "nvidia",
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), **extra}  # fmt: skip
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)  # fmt: skip


def test_a_triton_program_runs_on_the_gpu(tmp_path):
    result = run(tmp_path, "-m", "tilec.as_triton", str(PROGRAMS / "vector_ops.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[:4] == [
        "interpret False device cuda:0", "add ok", "scale ok", "reinterpret ok",
    ]  # fmt: skip


def test_the_active_driver_answers_for_the_gpu(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(
        textwrap.dedent("""
        import tilec.as_triton
        import torch, triton
        active = triton.runtime.driver.active
        target = active.get_current_target()
        major, minor = torch.cuda.get_device_capability()
        assert (target.backend, target.arch, target.warp_size) == ("cuda", major * 10 + minor, 32)
        assert active.get_device_interface() is torch.cuda
        assert active.get_active_torch_device() == torch.device("cuda", 0)
        assert active.get_current_stream() == torch.cuda.current_stream().cuda_stream
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            assert active.get_current_stream() == side.cuda_stream
        properties = active.utils.get_device_properties(0)
        assert properties["multiprocessor_count"] == torch.cuda.get_device_properties(0).multi_processor_count
        print("ok")
    """)
    )
    result = run(tmp_path, str(script))
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


INDUCTOR_ON_CUDA = """
import gc
import sys
import tilec.as_triton
import torch
import triton
import triton.language as tl
import torch._inductor.config as config
from torch._inductor.async_compile import AsyncCompile
from tilec.runtime.compiler import CompiledKernel

print(config.use_static_cuda_launcher)
torch.manual_seed(0)
if len(sys.argv) > 1:  # compile in Inductor's compile workers, sent back pickled
    config.compile_threads = 4
    AsyncCompile.warm_pool()
    AsyncCompile.wait_pool_ready()
else:
    config.compile_threads = 1

def check(name, f, *args, **options):
    expected = f(*args)
    result = torch.compile(f, **options)(*args)
    result = result if isinstance(result, tuple) else (result,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    print(name, all(torch.allclose(r, e, atol=1e-4, rtol=1e-4) for r, e in zip(result, expected)))

def cuda(*shape):
    return torch.randn(*shape, device="cuda")

def gradients(x, w):
    x, w = x.clone().requires_grad_(), w.clone().requires_grad_()
    (torch.relu(x @ w) ** 2).sum().backward()
    return x.grad, w.grad

check("pointwise", lambda x, y: torch.relu(x + y) * 2, cuda(4096), cuda(4096))
check("reduction", lambda x: x.sum(dim=1) + x.amax(dim=1), cuda(64, 3000))
check("softmax", lambda x: torch.softmax(x, dim=-1), cuda(32, 500))
check("layer norm", lambda x, w, b: torch.nn.functional.layer_norm(x, (256,), w, b),
      cuda(16, 256), cuda(256), cuda(256))
check("matmul epilogue", lambda a, b, c: torch.relu(a @ b + c), cuda(64, 32), cuda(32, 48), cuda(48))
check("gradients", gradients, cuda(16, 32), cuda(32, 8))
check("dynamic shapes", lambda x: torch.sin(x) * 2, cuda(333), dynamic=True)
check("cuda graphs", lambda x: torch.cos(x) + 1, cuda(1000), mode="reduce-overhead")


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})],
                 key=["n"])
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    total = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, total, mask=mask)


def user_kernel(x, y):
    out = torch.empty_like(x)
    add_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, out, x.numel())
    return torch.sin(out) * y


check("user kernel", user_kernel, cuda(5000), cuda(5000), fullgraph=True)


@triton.heuristics({"EVEN": lambda args: args["n"] % 256 == 0})
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def heuristics_kernel(x):
    out = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out + 1


check("heuristics kernel", heuristics_kernel, cuda(5000), fullgraph=True)


def positions(cu_seqlens):  # flash-linear-attention's prepare_position_ids
    counts = torch.diff(cu_seqlens)
    segment = torch.repeat_interleave(torch.arange(counts.numel(), device=counts.device), counts)
    starts = torch.nn.functional.pad(counts.cumsum(0), (1, 0))[:-1]
    return torch.arange(segment.shape[0], device=counts.device) - starts[segment]


torch._dynamo.config.capture_dynamic_output_shape_ops = True
torch._dynamo.utils.counters.clear()
compiled = torch.compile(positions, fullgraph=True, dynamic=True)
cases = [[0, 5, 12, 20], [0, 10, 30, 45, 80, 100], [0, 7, 14]]
cases = [torch.tensor(c, device="cuda") for c in cases]
same = all(torch.equal(compiled(c), positions(c)) for c in cases)
print("data-dependent shapes", same, torch._dynamo.utils.counters["stats"]["unique_graphs"])
kernels = [k for k in gc.get_objects() if type(k) is CompiledKernel]
print(len({k.name for k in kernels}) >= 8, sorted({k.backend.name for k in kernels}))
"""


@pytest.mark.parametrize("where", ["process", "workers"])
def test_torch_compile_of_cuda_graphs_runs_inductors_kernels_on_tilec(tmp_path, where):
    """Inductor's Triton kernels for CUDA tensors (pointwise, reductions, softmax, layer norm,
    a matmul's epilogue, a backward pass, dynamic shapes, CUDA graphs, an autotuned kernel and
    a heuristics kernel of the user's, data-dependent shapes compiled once as
    flash-linear-attention's index helpers are) compile with tilec's nvidia backend, in the
    process or in Inductor's compile workers, and launch through `CompiledKernel.run`."""
    script = tmp_path / "compile.py"
    script.write_text(INDUCTOR_ON_CUDA)
    result = run(tmp_path, str(script), *(["workers"] if where == "workers" else []))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        "False", "pointwise True", "reduction True", "softmax True", "layer norm True",
        "matmul epilogue True", "gradients True", "dynamic shapes True", "cuda graphs True",
        "user kernel True", "heuristics kernel True", "data-dependent shapes True 1",
        "True ['nvidia']",
    ]  # fmt: skip


def test_torch_compile_meets_inductors_no_triton_error_when_the_alias_steps_aside(tmp_path):
    script = tmp_path / "compile.py"
    script.write_text(
        textwrap.dedent("""
        import tilec.as_triton
        import torch, triton
        compiled = torch.compile(lambda x: torch.sin(x) + 1, fullgraph=True)
        try:
            compiled(torch.randn(16, device="cuda"))
        except Exception as error:
            print("refused:", "triton" in str(error).lower())
    """)
    )
    result = run(tmp_path, str(script), TILEC_AS_TRITON_INDUCTOR="0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[:1] == ["refused: True"]
