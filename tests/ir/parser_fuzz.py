"""Mutation fuzzing of the IR parser and verifier: any text gives a module or a located
`ParseError` / verifier `Diagnostic`, never another exception, a hang or a recursion error.

Inputs are mutations of valid IR (the `.tir`/`.gir` golden files of `tests/filecheck`): spans
deleted, duplicated, moved or replaced by tokens of the IR grammar, numbers changed to extremes,
nesting deepened, the text cut short. A parsed and verified module is printed and parsed again,
and a verified tir module (no gpu types or layouts) goes through the tir passes, which must not
crash or produce invalid IR on what the verifier accepted.

    python tests/ir/parser_fuzz.py --count 100000 [--seed 0]   # a campaign
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

from tilec.ir.parser import ParseError, parse_module
from tilec.ir.printer import print_module
from tilec.ir.verifier import Diagnostic, verify
from tilec.passes.manager import PassManager
from tilec.plugin.manager import load_ir_modules, load_pass_classes

load_ir_modules()  # the backends' layouts and ops (#gpu.mma, gpu.warp_group_dot) register as imported
ROOT = Path(__file__).resolve().parents[2]
TOKENS = [
    "%", "%0", "%x", "^bb0", "(", ")", "{", "}", "<", ">", "[", "]", ",", ":", "=", "->", "x",
    "tensor<", "tensor<4xf32>", "tensor<0xf32>", "tensor<3xi32>", "!tile.ptr<f32>", "!tile.ptr<",
    "!gpu.memdesc<2x16x16xf16>", "!gpu.memdesc<", "#blocked", "#gpu.blocked<{", "#mma",
    "#gpu.mma<{version = 3, warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}>",
    "#gpu.nvmma_shared<{swizzle = 128, transposed = true}>", "#gpu.dot_op<{opIdx = 0",
    "f16", "bf16", "f32", "f64", "i1", "i8", "i32", "i64", "index", "true", "false", "-1", "0",
    "1e309", "nan", "0x7fffffff", "99999999999999999999999999", "9" * 5000, "\"", "\"\\",
    "scf.for", "scf.if", "scf.yield", "scf.while", "scf.condition", "tile.return", "tile.dot",
    "tile.load", "tile.store", "arith.addi", "arith.constant", "func.func", "gpu.convert_layout",
    "gpu.warp_group_dot", "gpu.local_load", "{value = 1 : i32}", "attributes {", "\n", " ", "@k",
]  # fmt: skip
ALLOWED = (ParseError, Diagnostic)
"""What a bad input may raise: located, user-facing errors."""
TIR_PASSES = ["inline", "canonicalize", "licm", "cse", "dce"]
_managers: list[PassManager] = []


def _pass_manager() -> PassManager:
    if not _managers:
        _managers.append(PassManager.from_classes(load_pass_classes(), verify_each=True))
    return _managers[0]


def corpus() -> list[str]:
    files = sorted(ROOT.glob("tests/filecheck/**/*.tir")) + sorted(
        ROOT.glob("tests/filecheck/**/*.gir")
    )
    texts = []
    for path in files:
        if "Output" in path.parts:
            continue
        lines = [line for line in path.read_text().splitlines() if not line.startswith("//")]
        texts.append("\n".join(lines) + "\n")
    return texts


def _spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"%[\w.]+|[\w.!#^@]+|\S", text)]


def mutate(text: str, rng: random.Random) -> str:
    """One to four random edits of `text`."""
    for _ in range(rng.randint(1, 4)):
        spans = _spans(text) or [(0, 0)]
        start, end = rng.choice(spans)
        kind = rng.randrange(8)
        if kind == 0:  # delete a token
            text = text[:start] + text[end:]
        elif kind == 1:  # replace a token
            text = text[:start] + rng.choice(TOKENS) + text[end:]
        elif kind == 2:  # insert a token
            text = text[:start] + rng.choice(TOKENS) + " " + text[start:]
        elif kind == 3:  # duplicate a region of lines
            lines = text.splitlines(keepends=True) or [""]
            i = rng.randrange(len(lines))
            j = min(len(lines), i + rng.randint(1, 6))
            text = "".join(lines[:j] + lines[i:j] + lines[j:])
        elif kind == 4:  # cut the text short
            text = text[: rng.randrange(len(text) + 1)]
        elif kind == 5:  # move a token elsewhere
            token = text[start:end]
            text = text[:start] + text[end:]
            at = rng.randrange(len(text) + 1)
            text = text[:at] + token + text[at:]
        elif kind == 6:  # deep nesting
            depth = rng.choice([50, 500, 5000])
            opener = rng.choice(["tensor<", "!tile.ptr<", "(", "{", "[", "#gpu.slice<{parent = "])
            text = text[:start] + opener * depth + text[start:]
        else:  # an extreme number
            number = rng.choice(["-0", "2147483648", "-9223372036854775809", "1e400", "0.0"])
            text = text[:start] + number + text[end:]
    return text


def check_one(text: str, limit_s: float = 5.0) -> None:
    """Parse, verify, print and re-parse `text`; raise AssertionError for anything but a
    located error, or for taking more than `limit_s` seconds."""
    start = time.perf_counter()
    try:
        module = parse_module(text, "fuzz.tir")
        verify(module)
        printed = print_module(module)
        verify(parse_module(printed, "fuzz-printed.tir"))
        if "gpu" not in printed and "#" not in printed:  # tir: the tir passes take it
            _pass_manager().run(module, TIR_PASSES)
    except ALLOWED:
        pass
    except Exception as error:  # the finding
        raise AssertionError(
            f"{type(error).__name__}: {error}\n--- input ---\n{text[:4000]}"
        ) from error
    elapsed = time.perf_counter() - start
    assert elapsed < limit_s, f"took {elapsed:.1f} s\n--- input ---\n{text[:4000]}"


def campaign(count: int, seed: int) -> list[str]:
    """`count` mutated inputs; the findings (one message each)."""
    texts = corpus()
    rng = random.Random(seed)
    findings = []
    for _ in range(count):
        text = mutate(rng.choice(texts), rng)
        try:
            check_one(text)
        except AssertionError as finding:
            findings.append(str(finding))
    return findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    findings = campaign(args.count, args.seed)
    kinds: dict[str, int] = {}
    for finding in findings:
        kinds[finding.splitlines()[0][:120]] = kinds.get(finding.splitlines()[0][:120], 0) + 1
    for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"{n:6d}  {kind}")
    print(f"{args.count} inputs, {len(findings)} findings, {time.perf_counter() - start:.0f} s")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
