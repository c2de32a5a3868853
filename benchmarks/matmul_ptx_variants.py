"""Hand-made variants of tilec's PTX of the sweep's pipelined matmul (issue 23), for timing on
the GPU beside the compiler's own (benchmarks/matmul_launch_ab.py) before changing a pass.

    python benchmarks/matmul_ptx_variants.py [--cases longk1024,square] [--out DIR]

prints, for each variant that applies, the SASS figures of matmul_static (registers, the main
loop's instructions) and the static stall cycles of the loop's critical path: the control
words' stall counts from the loop's `cp.async` wait to its last `cp.async` copy (the time from
a tile's arrival to the issue of the copies that refill the ring, barriers not counted), with
`ptxas` on PATH and `CUOBJDUMP` (or cuobjdump on PATH).

Variants (each a function of tilec's PTX text, None where the loop is not of the form):
- `select-slot`: the slot the copies go to, `(slot + S - 1) mod S`, by a compare and a select
  (`slot > 0 ? slot - 1 : slot + S - 1`) where LLVM emits a multiply-high, a shift and a
  multiply-subtract (Triton carries a second wrapped counter instead).
- `loads-first`: each iteration first waits for the previous iteration's wgmma group (none left
  in flight), then issues the copies of iteration i + S - 1 into the slot that group read, and
  only then waits for tile i's copies and issues its wgmmas. Tile i's arrival no longer gates
  the refill: S tiles are in flight while the tensor cores wait (S - 1 in tilec's and Triton's
  order, where the copies are issued after the wgmmas of iteration i and a wait that leaves
  one group in flight). The price: no wgmma group is in flight across iterations, so the
  tensor cores idle from one group's end to the next group's issue (a barrier, the copies'
  issue, the wait, a barrier).
- `wide-as-shift`: each `mul.wide.s32 d, x, 2^k` as `cvt.s64.s32 d, x; shl.b64 d, d, k`, the
  form of Triton's PTX. ncu (ninth session) shows tilec's loop stalled on dispatch at the
  `IMAD.WIDE`s that ptxas rematerializes from the `mul.wide`s into the loop (the B copies'
  64-bit addresses from 32-bit offsets); from `cvt` and `shl` ptxas builds them with `LEA`.
  The compiler now does this for the multiplies of loops (`tilec_nvidia.codegen.widen_then_shift`);
  the variant rewrites every one, those outside the loops too.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

_MULHI = re.compile(
    r"^\s*add\.s32\s+(%r\d+), (%r\d+), (\d+);\n"
    r"\s*mul\.hi\.u32\s+(%r\d+), \1, (-?\d+);\n"
    r"\s*shr\.u32\s+(%r\d+), \4, (\d+);\n"
    r"\s*mul\.lo\.s32\s+(%r\d+), \6, (\d+);\n"
    r"\s*sub\.s32\s+(%r\d+), \1, \8;\n",
    re.MULTILINE,
)


def select_slot(ptx: str) -> str | None:
    """`(slot + a) mod S` (the multiply-high form) as `slot >= S - a ? slot + a - S : slot + a`."""
    found = _MULHI.search(ptx)
    if found is None:
        return None
    total, slot, ahead, _hi, _magic, _q, _shift, _prod, stages, result = found.groups()
    ahead_i, stages_i = int(ahead), int(stages)
    replacement = (
        f"\tadd.s32 \t{total}, {slot}, {ahead_i};\n"
        f"\tsetp.ge.u32 \t%tilec_wrap, {slot}, {stages_i - ahead_i};\n"
        f"\tadd.s32 \t{result}, {slot}, {ahead_i - stages_i};\n"
        f"\tselp.b32 \t{result}, {result}, {total}, %tilec_wrap;\n"
    )
    text = ptx[: found.start()] + replacement + ptx[found.end() :]
    return _declare(text, ".reg .pred \t%tilec_wrap;")


def _declare(ptx: str, declaration: str) -> str:
    head = re.search(r"^\s*\.reg\s+\.pred\s+%p<\d+>;\n", ptx, re.MULTILINE)
    assert head is not None, "no predicate registers declared"
    return ptx[: head.end()] + f"\t{declaration}\n" + ptx[head.end() :]


def loads_first(ptx: str) -> str | None:
    """The loop body reordered (module doc): wgmma wait 0, barrier, copies, commit, the copies'
    wait (one group more left in flight), barrier, wgmmas, commit; the increments unchanged."""
    loop = re.search(r"^(\$L__BB\d+_\d+):\n(.*?)^(\s*@%p\d+ bra \s*\1;\n)", ptx, re.M | re.S)
    if loop is None:
        return None
    body = loop.group(2)
    wait = re.search(r"^\s*cp\.async\.wait_group \s*(\d+);\n\s*bar\.sync \s*0;\n", body, re.M)
    commit = re.search(r"^\s*wgmma\.commit_group\.sync\.aligned;\n", body, re.M)
    if wait is None or commit is None:
        return None
    group_wait = re.compile(
        r"\s*// begin inline asm\n\s*wgmma\.wait_group\.sync\.aligned (\d+);\n"
        r"\s*// end inline asm\n\s*bar\.sync \s*0;\n"
    )
    dot_wait = group_wait.match(body, commit.end())
    copies_end = re.compile(r"^\s*cp\.async\.commit_group;\n", re.M).search(
        body, dot_wait.end() if dot_wait else 0
    )
    if dot_wait is None or copies_end is None or dot_wait.group(1) != "1":
        return None
    addresses = body[: wait.start()]
    dots = body[wait.end() : commit.end()]
    copies = body[dot_wait.end() : copies_end.end()]
    rest = body[copies_end.end() :]
    pending = int(wait.group(1)) + 1
    new_body = (
        addresses
        + "\t// begin inline asm\n\twgmma.wait_group.sync.aligned 0;\n\t// end inline asm\n"
        + "\tbar.sync \t0;\n"
        + copies
        + f"\tcp.async.wait_group \t{pending};\n\tbar.sync \t0;\n"
        + dots
        + rest
    )
    return ptx[: loop.start(2)] + new_body + ptx[loop.end(2) :]


_WIDE = re.compile(r"mul\.wide\.s32\s+(%rd\d+), (%r\d+), (\d+);")


def wide_as_shift(ptx: str) -> str | None:
    """Each `mul.wide.s32` by a power of two as a sign extension and a 64-bit shift."""

    def rewrite(found: re.Match) -> str:
        wide, narrow, factor = found.group(1), found.group(2), int(found.group(3))
        if factor & (factor - 1):
            return found.group(0)
        shift = factor.bit_length() - 1
        return f"cvt.s64.s32 \t{wide}, {narrow};\n\tshl.b64 \t{wide}, {wide}, {shift};"

    text = _WIDE.sub(rewrite, ptx)
    return None if text == ptx else text


VARIANTS = {"select-slot": select_slot, "loads-first": loads_first, "wide-as-shift": wide_as_shift}


def both(ptx: str) -> str | None:
    first = loads_first(ptx)
    return None if first is None else select_slot(first)


VARIANTS["loads-first+select-slot"] = both


def stall_path(sass: str) -> tuple[int, int]:
    """(instructions, stall cycles) of the main loop from its cp.async wait (`DEPBAR.LE SB0`) to
    its last LDGSTS, from `cuobjdump -sass` text; the whole loop's where it has neither."""
    lines = sass.splitlines()
    code = []
    for i, line in enumerate(lines):
        found = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* 0x[0-9a-f]+ \*/", line)
        if found and i + 1 < len(lines):
            high = re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1])
            stall = (int(high.group(1), 16) >> 41) & 0xF if high else 0
            code.append((int(found.group(1), 16), found.group(2), stall))
    loop = (0, -1)
    for address, instruction, _ in code:
        target = re.search(r"BRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)", instruction)
        if target and int(target.group(1), 16) < address:
            start = int(target.group(1), 16)
            if address - start > loop[1] - loop[0]:
                loop = (start, address)
    body = [c for c in code if loop[0] <= c[0] <= loop[1] and not c[1].startswith("NOP")]
    waits = [i for i, c in enumerate(body) if c[1].startswith("DEPBAR.LE SB0")]
    copies = [i for i, c in enumerate(body) if "LDGSTS" in c[1]]
    if not waits or not copies:  # no cp.async ring (synchronous copies)
        return len(body), sum(stall for _, _, stall in body)
    first, last = waits[0], copies[-1]
    if last < first:  # loads-first: from the wait back around to the next iteration's copies
        path = body[first:] + body[: last + 1]
    else:
        path = body[first : last + 1]
    return len(path), sum(stall for _, _, stall in path)


def main() -> int:
    import os
    import shutil
    import subprocess

    import matmul_static

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=lambda s: s.split(","), default=["longk1024", "square"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="matmul-variants-"))
    folder.mkdir(parents=True, exist_ok=True)
    cuobjdump = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "cuobjdump"
    print("| case | variant | registers | loop | path: instructions, stall cycles |")
    print("|---|---|---:|---:|---|")
    for case in args.cases:
        ptx = matmul_static.compile_side("tilec", case)
        for name, make in {"tilec": lambda p: p, **VARIANTS}.items():
            text = make(ptx)
            if text is None:
                print(f"| {case} | {name} | - | - | does not apply |")
                continue
            figures = matmul_static.sass_figures(text, folder, f"{case}-{name}")
            sass = subprocess.run([cuobjdump, "-sass", str(folder / f"{case}-{name}.cubin")],
                                  capture_output=True, text=True, check=True).stdout  # fmt: skip
            count, stalls = stall_path(sass)
            print(f"| {case} | {name} | {figures['registers']} | {figures['loop']} | "
                  f"{count}, {stalls} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
