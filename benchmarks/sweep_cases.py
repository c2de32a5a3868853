"""The sweep's cases (benchmarks/sweep.py): what a case is, and the matmul and attention families.

A case makes fresh random inputs (`setup`), poisoned outputs (`outputs`, NaN where the type has
one), launches its kernels with one candidate config (`launch`, given the kernels of one
compiler), and says what the outputs must be (`expected`, from torch in float32 or better).
`work` is the FLOPs or the bytes (each input read once, each output written once) that its
rate is counted from. The memory-bound families are in sweep_memory_cases.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from gpu_vs_triton import ATTENTION_CONFIGS, triton_cdiv
from matmul_vs_triton import CONFIGS, CONFIGS_F32


@dataclass
class Env:
    """Where the cases run: the device ("cuda", or "cpu" for the interp smoke run) and the random
    source of their inputs."""

    device: str
    generator: torch.Generator
    sm_count: int = 4

    def randn(self, *shape, dtype=torch.float32, scale: float = 1.0) -> torch.Tensor:
        x = torch.randn(shape, device=self.device, generator=self.generator)
        return (x * scale).to(dtype)


def poisoned(shape, dtype, device) -> torch.Tensor:
    """An output buffer full of NaN (or of the type's largest value where it has no NaN)."""
    value = float("nan") if dtype.is_floating_point else torch.iinfo(dtype).max
    return torch.full(shape, value, dtype=dtype, device=device)


@dataclass
class Case:
    """One shape of one operator; `configs` are the candidates that both compilers get."""

    family: str
    label: str
    configs: list[tuple]
    config_names: tuple[str, ...]
    work: float
    unit: str = "TB/s"
    tol: float = 1e-2
    fields: dict = field(default_factory=dict)

    def describe(self, config: tuple) -> str:
        """Short: the BLOCK sizes joined by x, then w<num_warps> s<num_stages> and the rest
        (a matmul's 128x256x64 w8 s3)."""
        named = list(zip(self.config_names, config, strict=True))
        blocks = [str(v) for n, v in named if n.startswith("BLOCK")]
        short = {"num_warps": "w", "num_stages": "s"}
        rest = [f"{short.get(n, n + '=')}{v}" for n, v in named if not n.startswith("BLOCK")]
        return " ".join(["x".join(blocks)] * bool(blocks) + rest)

    def compile_key(self) -> tuple:
        """What its compiled kernels depend on besides the config (types, constexprs, which
        integer arguments are multiples of 16): cases with one key share their compiles."""
        return (self.label,)

    def setup(self, env: Env) -> dict:
        raise NotImplementedError

    def outputs(self, inputs: dict) -> dict:
        raise NotImplementedError

    def launch(self, kernels: dict, inputs: dict, outputs: dict, config: tuple) -> None:
        raise NotImplementedError

    def expected(self, inputs: dict) -> dict:
        raise NotImplementedError


# Matmul -------------------------------------------------------------------------------------

MATMUL_NAMES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
F16_CONFIGS = [CONFIGS[0], CONFIGS[1], CONFIGS[3]]
"""Three of matmul_vs_triton's five (Triton's tutorial configuration first)."""
F32_CONFIGS = CONFIGS_F32[:3]
FP8_CONFIGS = [(128, 256, 128, 8, 3), (128, 128, 128, 4, 4), (64, 128, 64, 4, 4)]
"""Three of the fp8 configurations of Triton's matmul tutorial (K blocks of 128 bytes)."""

FLOAT8 = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


def storage_dtype(name: str) -> torch.dtype:
    """A torch dtype by the sweep's name: float16, bfloat16, float32 (tf32 dots), e4m3, e5m2."""
    if name in FLOAT8:
        if not hasattr(torch, FLOAT8[name]):
            raise RuntimeError(f"this torch ({torch.__version__}) has no torch.{FLOAT8[name]}")
        return getattr(torch, FLOAT8[name])
    return getattr(torch, name)


@dataclass
class MatmulCase(Case):
    """C = A @ B (batched over z when batch > 1), optionally relu(C + bias). fp8 operands give an
    fp16 C and B stored K-major (the layout of Triton's fp8 tutorial), A and B of one fp8 type or
    mixed ("e4m3*e5m2": A e4m3, B e5m2); float32 dots run in tf32 (each compiler's default
    input_precision)."""

    def setup(self, env: Env) -> dict:
        batch, m, n, k, dtype = (self.fields[key] for key in ("batch", "m", "n", "k", "dtype"))
        a_name, _, b_name = dtype.partition("*")
        kind = storage_dtype(a_name)
        a = env.randn(batch, m, k, dtype=kind)
        if a_name in FLOAT8:
            b = env.randn(batch, n, k, dtype=storage_dtype(b_name or a_name)).transpose(1, 2)
        else:
            b = env.randn(batch, k, n, dtype=kind)
        out = torch.float16 if a_name in FLOAT8 else kind
        inputs = {"a": a, "b": b, "out_dtype": out}
        if self.fields["epilogue"]:
            inputs["bias"] = env.randn(n, dtype=out)
        return inputs

    def outputs(self, inputs: dict) -> dict:
        f = self.fields
        return {
            "c": poisoned((f["batch"], f["m"], f["n"]), inputs["out_dtype"], inputs["a"].device)
        }

    def launch(self, kernels, inputs, outputs, config) -> None:
        block_m, block_n, block_k, warps, stages = config
        a, b, c = inputs["a"], inputs["b"], outputs["c"]
        batch, m, n, k = (self.fields[key] for key in ("batch", "m", "n", "k"))
        grid = (triton_cdiv(m, block_m) * triton_cdiv(n, block_n), batch)
        kernels["sweep_matmul"][grid](
            a, b, c, inputs.get("bias", c), m, n, k, *a.stride(), *b.stride(), *c.stride(),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8,
            BIAS_RELU=self.fields["epilogue"], num_warps=warps, num_stages=stages,
        )  # fmt: skip

    def compile_key(self) -> tuple:
        m, n, k = (self.fields[key] for key in ("m", "n", "k"))
        sizes = (m, n, k, m * k, k * n, m * n)  # with the strides
        return (self.fields["dtype"], self.fields["epilogue"], *(s % 16 == 0 for s in sizes))

    def expected(self, inputs: dict) -> dict:
        c = torch.matmul(inputs["a"].float(), inputs["b"].float())
        if self.fields["epilogue"]:
            c = torch.relu(c + inputs["bias"].float())
        return {"c": c}


def matmul(m, n, k, dtype="float16", batch=1, epilogue=False, configs=None, tag="") -> MatmulCase:
    fp8 = dtype.partition("*")[0] in FLOAT8
    if configs is None:
        configs = FP8_CONFIGS if fp8 else F32_CONFIGS if dtype == "float32" else F16_CONFIGS
    shape = f"{batch}x{m}x{n}x{k}" if batch > 1 else f"{m}x{n}x{k}"
    label = f"{dtype if dtype != 'float32' else 'tf32'} {shape}"
    label += f" {tag}" if tag else ""
    label += " +bias+relu" if epilogue else ""
    fields = dict(m=m, n=n, k=k, dtype=dtype, batch=batch, epilogue=epilogue)
    return MatmulCase("matmul", label, configs, MATMUL_NAMES, 2.0 * batch * m * n * k, "TFLOP/s",
                      2e-2 if fp8 else 1e-2, fields)  # fmt: skip


def matmul_cases(quick: bool) -> list[Case]:
    if quick:
        return [
            matmul(4096, 4096, 4096, tag="square"),
            matmul(4095, 4095, 4095, tag="ragged"),
            matmul(64, 8192, 8192, "bfloat16", tag="skinny M"),
            matmul(4096, 4096, 256, tag="short K"),
            matmul(4096, 4096, 4096, "e4m3", tag="square"),
            matmul(4096, 4096, 4096, "float32", tag="square"),
            matmul(4096, 4096, 4096, epilogue=True, tag="square"),
        ]
    cases = [matmul(s, s, s, tag="square") for s in (512, 1024, 2048, 3072, 4096, 6144, 8192)]
    cases += [matmul(*s, tag="ragged") for s in
              ((1000, 1000, 1000), (2047, 2049, 2051), (3001, 4093, 2999), (4095, 4095, 4095),
               (8191, 8191, 8191))]  # fmt: skip
    skinny_m = ((16, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192), (256, 4096, 4096))
    cases += [matmul(*s, tag="skinny M") for s in skinny_m]
    cases += [matmul(*s, tag="skinny N") for s in
              ((8192, 64, 8192), (8192, 128, 8192), (16384, 256, 4096))]  # fmt: skip
    cases += [matmul(*s, tag="short K") for s in
              ((4096, 4096, 128), (4096, 4096, 256), (8192, 8192, 256), (8192, 8192, 384),
               (16384, 4096, 512))]  # fmt: skip
    long_k = ((512, 512, 65536), (1024, 1024, 32768), (2048, 2048, 16384), (4096, 4096, 16384))
    cases += [matmul(*s, tag="long K") for s in long_k]
    cases += [matmul(m, n, k, batch=z, tag="batched") for z, m, n, k in
              ((32, 256, 256, 1024), (16, 512, 512, 512), (8, 1024, 1024, 1024),
               (4, 2048, 2048, 2048))]  # fmt: skip
    for spec in ((1024, 1024, 1024, "square"), (4096, 4096, 4096, "square"),
                 (8192, 8192, 8192, "square"), (4095, 4095, 4095, "ragged"),
                 (64, 8192, 8192, "skinny M"), (8192, 8192, 256, "short K"),
                 (1024, 1024, 32768, "long K")):  # fmt: skip
        cases.append(matmul(*spec[:3], "bfloat16", tag=spec[3]))
    cases.append(matmul(2048, 2048, 2048, "bfloat16", batch=4, tag="batched"))
    for dtype, sizes in (("e4m3", (2048, 4096, 8192)), ("e5m2", (4096, 8192))):
        cases += [matmul(s, s, s, dtype, tag="square") for s in sizes]
    cases.append(matmul(4095, 4095, 4095, "e4m3", tag="ragged"))
    cases.append(matmul(4096, 4096, 4096, "e4m3*e5m2", tag="square"))
    cases += [matmul(s, s, s, "float32", tag="square") for s in (2048, 4096, 8192)]
    cases.append(matmul(4095, 4095, 4095, "float32", tag="ragged"))
    for spec in ((1024, 1024, 1024, "square"), (4096, 4096, 4096, "square"),
                 (8192, 8192, 8192, "square"), (4095, 4095, 4095, "ragged"),
                 (4096, 4096, 256, "short K")):  # fmt: skip
        cases.append(matmul(*spec[:3], epilogue=True, tag=spec[3]))
    cases.append(matmul(4096, 4096, 4096, "bfloat16", epilogue=True, tag="square"))
    return cases


# Attention ----------------------------------------------------------------------------------

ATTN_FWD_NAMES = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
ATTN_BWD_NAMES = ("BLOCK_M1", "BLOCK_N1", "BLOCK_M2", "BLOCK_N2", "SLICE", "num_warps",
                  "num_stages")  # fmt: skip
ATTN_BWD_CONFIGS = [(32, 128, 128, 32, 2, 4, 5), (64, 64, 64, 64, 2, 4, 3)]
"""The tutorial's backward configuration, and one with square 64 blocks."""
LOG2E = 1.4426950408889634


def attention_reference(q, k, v, causal: bool, scale: float, do=None) -> dict:
    """Attention in float32 from the (batch, heads, n, d) inputs, a group of heads at a time:
    o, m (log2 of each row's softmax sum of the scores in base 2) and, given do, dq, dk, dv."""
    batch, heads, n, d = q.shape
    flat = [t.reshape(batch * heads, n, d) for t in (q, k, v)]
    result = {name: torch.empty(batch * heads, n, d, device=q.device) for name in ("o",)}
    result["m"] = torch.empty(batch * heads, n, device=q.device)
    if do is not None:
        for name in ("dq", "dk", "dv"):
            result[name] = torch.empty(batch * heads, n, d, device=q.device)
    hidden = torch.triu(torch.ones(n, n, dtype=torch.bool, device=q.device), 1)
    chunk = max(1, (1 << 26) // (n * n))
    for first in range(0, batch * heads, chunk):
        part = slice(first, first + chunk)
        qf, kf, vf = (t[part].float() for t in flat)
        s = torch.matmul(qf, kf.transpose(1, 2)) * scale
        if causal:
            s.masked_fill_(hidden, -float("inf"))
        lse = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - lse[..., None])
        o = torch.matmul(p, vf)
        result["o"][part] = o
        result["m"][part] = lse * LOG2E
        if do is not None:
            dof = do.reshape(batch * heads, n, d)[part].float()
            result["dv"][part] = torch.matmul(p.transpose(1, 2), dof)
            ds = p * (torch.matmul(dof, vf.transpose(1, 2)) - (dof * o).sum(-1)[..., None])
            result["dq"][part] = torch.matmul(ds, kf) * scale
            result["dk"][part] = torch.matmul(ds.transpose(1, 2), qf) * scale
    return {name: t.reshape(batch, heads, *t.shape[1:]) for name, t in result.items()}


@dataclass
class AttentionCase(Case):
    """fp16 attention (batch, heads, n, d), forward or backward (fields["backward"])."""

    def setup(self, env: Env) -> dict:
        f = self.fields
        shape = (f["batch"], f["heads"], f["n"], f["d"])
        q, k, v = (env.randn(*shape, dtype=torch.float16, scale=0.5) for _ in range(3))
        inputs = {"q": q, "k": k, "v": v, "scale": f["d"] ** -0.5}
        if f["backward"]:
            inputs["do"] = env.randn(*shape, dtype=torch.float16)
            ref = attention_reference(q, k, v, f["causal"], inputs["scale"], inputs["do"])
            inputs["reference"] = ref
            inputs["o"] = ref["o"].half()
            inputs["m"] = ref["m"].contiguous()
            # the tutorial's host code: K pre-scaled by sm_scale log2(e) for the backward
            inputs["k_scaled"] = (k.float() * (inputs["scale"] * LOG2E)).half()
        return inputs

    def outputs(self, inputs: dict) -> dict:
        q = inputs["q"]
        if not self.fields["backward"]:
            m = poisoned(q.shape[:3], torch.float32, q.device)
            return {"o": poisoned(q.shape, q.dtype, q.device), "m": m}
        grads = {name: poisoned(q.shape, q.dtype, q.device) for name in ("dq", "dk", "dv")}
        return {**grads, "delta": poisoned(q.shape[:3], torch.float32, q.device)}

    def launch(self, kernels, inputs, outputs, config) -> None:
        q, v = inputs["q"], inputs["v"]
        batch, heads, n, d = q.shape
        causal = self.fields["causal"]
        if not self.fields["backward"]:
            block_m, block_n, warps, stages = config
            kernels["sweep_attn_fwd"][(n // block_m, batch * heads)](
                q, inputs["k"], v, outputs["o"], outputs["m"], inputs["scale"], *q.stride()[:3],
                heads, n, HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
                num_warps=warps, num_stages=stages,
            )  # fmt: skip
            return
        block_m1, block_n1, block_m2, block_n2, slice_, warps, stages = config
        kernels["sweep_attn_bwd_delta"][(n // block_n1, batch * heads)](
            inputs["o"], inputs["do"], outputs["delta"], n, BLOCK_M=block_n1, HEAD_DIM=d
        )
        kernels["sweep_attn_bwd"][(n // block_n1, batch * heads)](
            q, inputs["k_scaled"], v, inputs["scale"], inputs["do"], outputs["dq"],
            outputs["dk"], outputs["dv"], inputs["m"], outputs["delta"], *q.stride()[:3], heads,
            n, BLOCK_M1=block_m1, BLOCK_N1=block_n1, BLOCK_M2=block_m2, BLOCK_N2=block_n2,
            SLICE=slice_, HEAD_DIM=d, CAUSAL=causal, num_warps=warps, num_stages=stages,
        )  # fmt: skip

    def compile_key(self) -> tuple:
        return (self.fields["d"], self.fields["causal"], self.fields["backward"])

    def expected(self, inputs: dict) -> dict:
        if self.fields["backward"]:
            ref = inputs["reference"]
            delta = (inputs["o"].float() * inputs["do"].float()).sum(-1)
            return {"dq": ref["dq"], "dk": ref["dk"], "dv": ref["dv"], "delta": delta}
        f = self.fields
        ref = attention_reference(
            inputs["q"], inputs["k"], inputs["v"], f["causal"], inputs["scale"]
        )
        return {"o": ref["o"], "m": ref["m"]}


def attention(n, d, causal, backward, batch=None, heads=16, configs=None) -> AttentionCase:
    """Batch 16384 / n (a constant number of tokens) unless given."""
    batch = batch or max(1, 16384 // n)
    if configs is None:
        configs = ATTN_BWD_CONFIGS if backward else [c for h, c in ATTENTION_CONFIGS if h == d][:3]
    flops = 4.0 * batch * heads * n * n * d * (0.5 if causal else 1.0) * (2.5 if backward else 1.0)
    family = "attention bwd" if backward else "attention fwd"
    label = f"fp16 {batch}x{heads}x{n}x{d} {'causal' if causal else 'non-causal'}"
    fields = dict(n=n, d=d, causal=causal, backward=backward, batch=batch, heads=heads)
    names = ATTN_BWD_NAMES if backward else ATTN_FWD_NAMES
    return AttentionCase(family, label, configs, names, flops, "TFLOP/s",
                         3e-2 if backward else 1e-2, fields)  # fmt: skip


def attention_cases(quick: bool, backward: bool) -> list[Case]:
    if quick:
        short, long = (1024, 4096) if backward else (1024, 8192)
        picks = ((short, 64, True), (short, 128, False), (long, 64, False), (long, 128, True))
        return [attention(n, d, causal, backward) for n, d, causal in picks]
    sizes = (512, 1024, 4096, 16384) if backward else (512, 1024, 2048, 4096, 8192, 16384)
    return [attention(n, d, c, backward) for n in sizes for d in (64, 128) for c in (False, True)]


def smoke_cases() -> list[Case]:
    """Tiny shapes and blocks for the interp smoke run: a couple a family."""
    small = [(16, 16, 16, 1, 1), (32, 16, 32, 1, 1)]
    return [
        matmul(40, 36, 50, configs=small, tag="ragged"),
        matmul(32, 48, 64, "bfloat16", batch=2, epilogue=True, configs=small, tag="batched"),
        matmul(32, 32, 64, "e4m3", configs=small[:1], tag="square"),
        matmul(32, 48, 40, "e4m3*e5m2", configs=small[:1], tag="ragged"),
        matmul(32, 32, 32, "float32", configs=small[:1], tag="square"),
        attention(64, 16, False, False, batch=1, heads=2, configs=[(32, 16, 1, 1)]),
        attention(64, 32, True, False, batch=1, heads=2, configs=[(32, 16, 1, 1)]),
        attention(64, 16, False, True, batch=1, heads=2, configs=[(32, 32, 32, 32, 2, 1, 1)]),
        attention(64, 16, True, True, batch=1, heads=2, configs=[(16, 32, 32, 16, 1, 1, 1)]),
    ]
