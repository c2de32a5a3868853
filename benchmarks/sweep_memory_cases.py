"""The sweep's memory-bound families (benchmarks/sweep.py): layer norm forward and backward,
softmax, cross entropy, RMSNorm, rotary embedding and SwiGLU, rated in TB/s (each input read once,
each output written once). The candidate configs are the block size and the warps."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from gpu_vs_triton import next_power_of_2, triton_cdiv
from sweep_cases import Case, Env, poisoned, storage_dtype

EPS = 1e-5
ROW_WARPS = [(4,), (8,), (16,)]
"""The warps of a one-row-a-program kernel (its block is the row's next power of two)."""


def nbytes(dtype: torch.dtype, count: float) -> float:
    return count * torch.empty((), dtype=dtype).element_size()


@dataclass
class RowCase(Case):
    """An operator over the rows of a (rows, cols) tensor: fields["op"] is softmax,
    layer_norm_fwd, layer_norm_bwd or rms_norm."""

    def setup(self, env: Env) -> dict:
        rows, cols, kind = (
            self.fields["rows"],
            self.fields["cols"],
            storage_dtype(self.fields["dtype"]),
        )
        inputs = {"x": env.randn(rows, cols, dtype=kind), "sm_count": env.sm_count}
        if self.fields["op"] != "softmax":
            inputs["w"] = (1.0 + env.randn(cols, scale=0.1)).to(kind)
            inputs["b"] = env.randn(cols, dtype=kind, scale=0.1)
        if self.fields["op"] == "layer_norm_bwd":
            inputs["dy"] = env.randn(rows, cols, dtype=kind)
            x = inputs["x"].float()
            inputs["mean"] = x.mean(-1)
            inputs["rstd"] = torch.rsqrt(x.var(-1, unbiased=False) + EPS)
        return inputs

    def outputs(self, inputs: dict) -> dict:
        x, op = inputs["x"], self.fields["op"]
        rows, cols = x.shape
        if op == "layer_norm_fwd":
            stats = {n: poisoned((rows,), torch.float32, x.device) for n in ("mean", "rstd")}
            return {"y": poisoned(x.shape, x.dtype, x.device), **stats}
        if op == "layer_norm_bwd":
            programs = min(rows, 2 * inputs["sm_count"])
            parts = {n: poisoned((programs, cols), torch.float32, x.device) for n in ("dwp", "dbp")}
            grads = {n: poisoned((cols,), x.dtype, x.device) for n in ("dw", "db")}
            return {"dx": poisoned(x.shape, x.dtype, x.device), **parts, **grads}
        return {"y": poisoned(x.shape, x.dtype, x.device)}

    def launch(self, kernels, inputs, outputs, config) -> None:
        (warps,) = config
        x, op = inputs["x"], self.fields["op"]
        rows, cols = x.shape
        block = next_power_of_2(cols)
        if op == "softmax":
            y = outputs["y"]
            kernels["sweep_softmax"][(rows,)](
                y, x, x.stride(0), y.stride(0), cols, BLOCK=block, num_warps=warps
            )
        elif op == "rms_norm":
            kernels["sweep_rms_norm"][(rows,)](
                x, outputs["y"], inputs["w"], x.stride(0), cols, EPS, BLOCK=block, num_warps=warps
            )
        elif op == "layer_norm_fwd":
            kernels["sweep_layer_norm_fwd"][(rows,)](
                x,
                outputs["y"],
                inputs["w"],
                inputs["b"],
                outputs["mean"],
                outputs["rstd"],
                x.stride(0),
                cols,
                EPS,
                BLOCK=block,
                num_warps=warps,
            )
        else:
            dwp, dbp = outputs["dwp"], outputs["dbp"]
            kernels["sweep_layer_norm_bwd"][(dwp.shape[0],)](
                x,
                inputs["dy"],
                outputs["dx"],
                inputs["w"],
                inputs["mean"],
                inputs["rstd"],
                dwp,
                dbp,
                x.stride(0),
                rows,
                cols,
                BLOCK=block,
                num_warps=warps,
            )
            column_block = min(block, 128)
            for part, total in ((dwp, outputs["dw"]), (dbp, outputs["db"])):
                kernels["sweep_column_sum"][(triton_cdiv(cols, column_block),)](
                    part, total, part.shape[0], cols, BLOCK_ROWS=32, BLOCK_COLS=column_block
                )

    def compile_key(self) -> tuple:
        f = self.fields
        return (f["op"], f["dtype"], next_power_of_2(f["cols"]), f["cols"] % 16, f["rows"] % 16)

    def expected(self, inputs: dict) -> dict:
        x, op = inputs["x"].double(), self.fields["op"]
        if op == "softmax":
            return {"y": torch.softmax(x, dim=-1)}
        w = inputs["w"].double()
        if op == "rms_norm":
            return {"y": x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS) * w}
        mean = x.mean(-1, keepdim=True)
        rstd = torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + EPS)
        x_hat = (x - mean) * rstd
        if op == "layer_norm_fwd":
            y = x_hat * w + inputs["b"].double()
            return {"y": y, "mean": mean[:, 0], "rstd": rstd[:, 0]}
        dy = inputs["dy"].double()
        w_dy = w * dy
        c1 = (x_hat * w_dy).mean(-1, keepdim=True)
        c2 = w_dy.mean(-1, keepdim=True)
        return {"dx": (w_dy - (x_hat * c1 + c2)) * rstd, "dw": (dy * x_hat).sum(0), "db": dy.sum(0)}


ROW_FAMILIES = {
    "softmax": "softmax",
    "layer_norm_fwd": "layernorm fwd",
    "layer_norm_bwd": "layernorm bwd",
    "rms_norm": "rmsnorm",
}


def row_case(op, rows, cols, dtype="bfloat16", configs=None) -> RowCase:
    kind = storage_dtype(dtype)
    if op == "layer_norm_bwd":  # x, dy, w in; dx, dw, db out (the mean and rstd: 8 bytes a row)
        work = nbytes(kind, 3 * rows * cols + 3 * cols) + 8 * rows
    elif op == "layer_norm_fwd":
        work = nbytes(kind, 2 * rows * cols + 2 * cols) + 8 * rows
    else:
        work = nbytes(kind, 2 * rows * cols + (cols if op == "rms_norm" else 0))
    fields = dict(op=op, rows=rows, cols=cols, dtype=dtype)
    label = f"{dtype} {rows}x{cols}"
    return RowCase(
        ROW_FAMILIES[op], label, configs or ROW_WARPS, ("num_warps",), work, tol=1e-2, fields=fields
    )


@dataclass
class CrossEntropyCase(Case):
    """loss = logsumexp(logits) - logits[target] per row (tokens, vocabulary)."""

    def setup(self, env: Env) -> dict:
        tokens, vocab = self.fields["tokens"], self.fields["vocab"]
        logits = env.randn(tokens, vocab, dtype=storage_dtype(self.fields["dtype"]), scale=2.0)
        target = torch.randint(0, vocab, (tokens,), device=env.device, generator=env.generator)
        return {"logits": logits, "target": target}

    def outputs(self, inputs: dict) -> dict:
        return {"loss": poisoned(inputs["target"].shape, torch.float32, inputs["target"].device)}

    def launch(self, kernels, inputs, outputs, config) -> None:
        block, warps = config
        logits = inputs["logits"]
        kernels["sweep_cross_entropy"][(logits.shape[0],)](
            logits,
            inputs["target"],
            outputs["loss"],
            logits.stride(0),
            logits.shape[1],
            BLOCK=block,
            num_warps=warps,
        )

    def compile_key(self) -> tuple:
        return (self.fields["dtype"], self.fields["vocab"] % 16)

    def expected(self, inputs: dict) -> dict:
        loss = torch.nn.functional.cross_entropy(
            inputs["logits"].float(), inputs["target"], reduction="none"
        )
        return {"loss": loss}


def cross_entropy(tokens, vocab, dtype="bfloat16", configs=None) -> CrossEntropyCase:
    kind = storage_dtype(dtype)
    work = nbytes(kind, tokens * vocab) + 12 * tokens  # logits; int64 targets, float32 losses
    configs = configs or [(4096, 8), (8192, 8), (16384, 16)]
    fields = dict(tokens=tokens, vocab=vocab, dtype=dtype)
    return CrossEntropyCase(
        "cross entropy",
        f"{dtype} {tokens}x{vocab}",
        configs,
        ("BLOCK", "num_warps"),
        work,
        fields=fields,
    )


@dataclass
class RotaryCase(Case):
    """Rotary embedding of x (batch, seq, heads, dim) with cos, sin (seq, dim / 2) in float32."""

    def setup(self, env: Env) -> dict:
        f = self.fields
        x = env.randn(f["batch"], f["seq"], f["heads"], f["dim"], dtype=storage_dtype(f["dtype"]))
        half = f["dim"] // 2
        angle = torch.arange(f["seq"], device=env.device, dtype=torch.float32)[:, None] * (
            10000.0 ** (-torch.arange(half, device=env.device, dtype=torch.float32) / half)
        )
        return {"x": x, "cos": torch.cos(angle), "sin": torch.sin(angle)}

    def outputs(self, inputs: dict) -> dict:
        x = inputs["x"]
        return {"out": poisoned(x.shape, x.dtype, x.device)}

    def launch(self, kernels, inputs, outputs, config) -> None:
        block_h, warps = config
        x = inputs["x"]
        batch, seq, heads, dim = x.shape
        kernels["sweep_rotary"][(batch * seq, triton_cdiv(heads, block_h))](
            x,
            inputs["cos"],
            inputs["sin"],
            outputs["out"],
            seq,
            heads,
            HALF=dim // 2,
            BLOCK_H=block_h,
            num_warps=warps,
        )

    def compile_key(self) -> tuple:
        f = self.fields
        return (f["dtype"], f["dim"], f["seq"] % 16, f["heads"] % 16)

    def expected(self, inputs: dict) -> dict:
        x = inputs["x"].double()
        half = x.shape[-1] // 2
        cos, sin = (inputs[n].double()[None, :, None, :] for n in ("cos", "sin"))
        x1, x2 = x[..., :half], x[..., half:]
        return {"out": torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)}


def rotary(batch, seq, heads, dim, dtype="bfloat16", configs=None) -> RotaryCase:
    kind = storage_dtype(dtype)
    work = nbytes(kind, 2 * batch * seq * heads * dim) + 4 * seq * dim  # x, out; cos and sin
    configs = configs or [(4, 4), (8, 4), (16, 8)]
    fields = dict(batch=batch, seq=seq, heads=heads, dim=dim, dtype=dtype)
    return RotaryCase(
        "rotary",
        f"{dtype} {batch}x{seq}x{heads}x{dim}",
        configs,
        ("BLOCK_H", "num_warps"),
        work,
        fields=fields,
    )


@dataclass
class SwigluCase(Case):
    """out = silu(gate) * up over (rows, cols) tensors."""

    def setup(self, env: Env) -> dict:
        shape, kind = (
            (self.fields["rows"], self.fields["cols"]),
            storage_dtype(self.fields["dtype"]),
        )
        return {"gate": env.randn(*shape, dtype=kind), "up": env.randn(*shape, dtype=kind)}

    def outputs(self, inputs: dict) -> dict:
        gate = inputs["gate"]
        return {"out": poisoned(gate.shape, gate.dtype, gate.device)}

    def launch(self, kernels, inputs, outputs, config) -> None:
        block, warps = config
        n = inputs["gate"].numel()
        kernels["sweep_swiglu"][(triton_cdiv(n, block),)](
            inputs["gate"], inputs["up"], outputs["out"], n, BLOCK=block, num_warps=warps
        )

    def compile_key(self) -> tuple:
        return (self.fields["dtype"], self.fields["rows"] * self.fields["cols"] % 16)

    def expected(self, inputs: dict) -> dict:
        gate = inputs["gate"].double()
        return {"out": torch.nn.functional.silu(gate) * inputs["up"].double()}


def swiglu(rows, cols, dtype="bfloat16", configs=None) -> SwigluCase:
    work = nbytes(storage_dtype(dtype), 3 * rows * cols)
    configs = configs or [(1024, 4), (2048, 8), (4096, 8)]
    fields = dict(rows=rows, cols=cols, dtype=dtype)
    return SwigluCase(
        "swiglu", f"{dtype} {rows}x{cols}", configs, ("BLOCK", "num_warps"), work, fields=fields
    )


def memory_cases(quick: bool) -> list[Case]:
    if quick:
        return [
            row_case("softmax", 8192, 4096),
            row_case("softmax", 4096, 32768, "float32"),
            row_case("layer_norm_fwd", 8192, 4096),
            row_case("layer_norm_fwd", 8192, 5120),
            row_case("layer_norm_bwd", 8192, 4096),
            row_case("layer_norm_bwd", 8192, 1024),
            cross_entropy(4096, 32000),
            cross_entropy(1024, 256000),
            row_case("rms_norm", 16384, 4096),
            row_case("rms_norm", 16384, 8192),
            rotary(4, 4096, 32, 128),
            rotary(4, 4096, 32, 64),
            swiglu(8192, 14336),
            swiglu(4096, 11008),
        ]
    cases = [
        row_case("softmax", r, c)
        for r, c in ((16384, 1024), (8192, 4096), (4096, 8192), (2048, 32768), (8192, 3000))
    ]
    cases += [
        row_case("softmax", 4096, 4096, "float32"),
        row_case("softmax", 4096, 32768, "float32"),
    ]
    for op in ("layer_norm_fwd", "layer_norm_bwd"):
        cases += [row_case(op, 8192, c) for c in (1024, 2048, 4096, 5120, 8192)]
        cases.append(row_case(op, 4096, 4096, "float32"))
    cases += [
        cross_entropy(t, v)
        for t, v in ((4096, 32000), (4096, 50257), (2048, 128256), (1024, 256000))
    ]
    cases.append(cross_entropy(2048, 128256, "float32"))
    cases += [row_case("rms_norm", 16384, c) for c in (2048, 4096, 5120, 8192)]
    cases += [rotary(4, 4096, 32, 128), rotary(4, 4096, 32, 64), rotary(1, 16384, 8, 128)]
    cases += [swiglu(r, c) for r, c in ((4096, 11008), (8192, 14336), (16384, 4096), (2048, 5504))]
    return cases


def memory_smoke_cases() -> list[Case]:
    """Tiny shapes for the interp smoke run: a couple a family."""
    one = [(1,)]
    return [
        row_case("softmax", 5, 100, configs=one),
        row_case("softmax", 3, 64, "float32", configs=one),
        row_case("layer_norm_fwd", 6, 100, configs=one),
        row_case("layer_norm_fwd", 4, 64, "float32", configs=one),
        row_case("layer_norm_bwd", 9, 100, configs=one),
        row_case("layer_norm_bwd", 5, 64, "float32", configs=one),
        cross_entropy(4, 1000, configs=[(256, 1)]),
        cross_entropy(3, 300, "float32", configs=[(512, 1)]),
        row_case("rms_norm", 6, 100, configs=one),
        row_case("rms_norm", 3, 64, "float32", configs=one),
        rotary(2, 5, 3, 16, configs=[(2, 1)]),
        rotary(1, 4, 4, 8, "float32", configs=[(4, 1)]),
        swiglu(7, 100, configs=[(256, 1)]),
        swiglu(3, 64, "float32", configs=[(64, 1)]),
    ]
