"""NVIDIA code generation: LLVM IR -> PTX (llvmlite's NVPTX target) -> cubin (`ptxas`).

LLVM aborts the whole process on an unknown CPU name or a PTX version the CPU does not accept, so
every arch is looked up in the arch table (`tilec_nvidia.arch.ARCHS`) first, and its PTX feature
comes from there, never from the caller.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import os
import re
import shutil
import tempfile
import threading
import warnings
from pathlib import Path

import attrs

from tilec.lowering.external_tools import run_tool
from tilec.lowering.llvm_codegen import (
    LLVM_LOCK,
    InvalidLLVMIR,
    check_opt_level,
    describe_kernels,
    optimized_module,
    target_machine,
)
from tilec_nvidia import ptxas_memo
from tilec_nvidia.arch import ARCHS
from tilec_nvidia.backend import PTXAS

TRIPLE = "nvptx64-nvidia-cuda"

PTXAS_ENV = PTXAS.name
SPILLS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
PTXAS_TIMEOUT_S = 300


class CodegenError(RuntimeError):
    """LLVM or ptxas rejected a kernel; the message names the kernel and the tool's diagnostic."""


def ptx_features(arch: str, llvm_ir: str = "") -> str:
    """The LLVM feature string (`+ptxNN`) selecting the PTX ISA version emitted for `arch`: the
    arch's, or the newer one `llvm_ir`'s `tilec.ptx_version` metadata asks for (the cache hints
    of `tilec_nvidia.cache_hints` need PTX ISA 7.4)."""
    version = ARCHS.check(arch).ptx_version
    match = _PTX_VERSION.search(llvm_ir)
    if match:
        node = re.search(
            rf"^{re.escape(match.group(1))} = !{{\s*i32 (\d+)\s*}}", llvm_ir, re.MULTILINE
        )
        if node:
            version = max(version, int(node.group(1)))
    return f"+ptx{version}"


_PTX_VERSION = re.compile(r"^!tilec\.ptx_version = !{\s*(![0-9]+)\s*}", re.MULTILINE)


def _describe(llvm_ir: str) -> str:
    return describe_kernels(llvm_ir, "ptx_kernel")


CODEGEN_LEVEL = 2
"""The highest code-generation level of the NVPTX target machine (the IR pipeline runs at the
compile's `opt_level`). At 3, NVPTX cleans up after its straight-line strength reduction with
GVN, twice, where 2 runs EarlyCSE (`NVPTXPassConfig::addEarlyCSEOrGVNPass`). On the 13 kernels
of benchmarks/compile_time.py --all (after the O3 IR pipeline) level 3 cost 15-45 ms CPU a
kernel, 10-30% of the emission, for byte-identical PTX in 12 of them; in the 13th, the matmul
128x256x64, level 2 computes one comparison of the prologue twice (one `setp` more)."""


def llir_to_ptx(llvm_ir: str, arch: str, *, opt_level: int = 3, widen: bool = True) -> str:
    """Optimize `llvm_ir` at `opt_level` (0-3) and emit PTX for `arch` (`sm_90`, ...), the code
    generation at `CODEGEN_LEVEL` at most; with `widen`, the loops' wide multiplies rewritten
    (`widen_then_shift`: the backend's `ptx` stage passes False and rewrites them itself, unless
    that spills).

    Raises ValueError for an unsupported arch or level, CodegenError when LLVM rejects the module.
    """
    features = ptx_features(arch, llvm_ir)
    check_opt_level(opt_level)
    with LLVM_LOCK:  # llvmlite's global state (targets, contexts) is not thread-safe
        machine = target_machine(TRIPLE, arch, features, min(opt_level, CODEGEN_LEVEL))
        try:
            module = optimized_module(llvm_ir, machine, TRIPLE, opt_level)
        except InvalidLLVMIR as error:
            raise CodegenError(f"invalid LLVM IR for {_describe(llvm_ir)}:\n{error}") from None
        try:
            ptx = machine.emit_assembly(module)
        except RuntimeError as error:
            raise CodegenError(
                f"LLVM could not emit PTX for {_describe(llvm_ir)}: {error}"
            ) from None
    ptx = avoid_ptxas_negation_bugs(ptx)
    return widen_then_shift(ptx) if widen else ptx


WIDE_AS_SHIFT = True
"""Whether `widen_then_shift` rewrites the wide multiplies of loops (in `llir_to_ptx` and in the
backend's `ptx` stage); off, the PTX is LLVM's. The compile cache does not key on it: set it
before compiling, with a `TILEC_CACHE_DIR` of its own."""

_WIDE_BY_CONSTANT = re.compile(r"^([ \t]*)mul\.wide\.s32\s+(%rd\d+),\s*(%r\d+),\s*(\d+);$")
_LABEL = re.compile(r"^(\$L__BB\w+):")
_BRANCH = re.compile(r"\bbra(?:\.uni)?\s+(\$L__BB\w+);")


def widen_then_shift(ptx: str) -> str:
    """Each `mul.wide.s32 d, x, 2^k` of a loop (inside one, or outside with `d` read inside one)
    written as `cvt.s64.s32 d, x; shl.b64 d, d, k`. Nothing else changes: a multiply outside
    every loop and unread in them, other factors, `mul.wide.u32`, `mad.wide`, a register factor.
    A loop is the lines from a label to a branch back to it.

    LLVM's NVPTX backend folds the sign extension and scaling of a 32-bit index into a 64-bit
    byte offset (`getelementptr half, ptr, i32 %i`) into one `mul.wide`, and ptxas makes of it
    an `IMAD.WIDE` in the loop: the loop's own, or one rematerialized each iteration from a
    32-bit index for a loop-invariant offset rather than its 64 bits kept in registers. Beside
    wgmmas in flight these stall the loop on dispatch: ncu counted 22.7% of the pipelined
    matmul's warp samples there against Triton's 3.9% (benchmarks/RESULTS.md, ninth session).
    From a widening and a shift, the form of Triton's PTX, ptxas builds the offsets with `LEA`:
    the 128x128x64 matmul at 3072^3 went from 105.4 to 98.3 us (Triton 97.6), and the attention
    forward from 0.98 to 1.04 of Triton's speed at head dim 128. The cost is registers: the
    caller keeps LLVM's form where this one spills (`keep_widened_unless_it_spills`).
    `WIDE_AS_SHIFT` turns it off."""
    if not WIDE_AS_SHIFT or "mul.wide.s32" not in ptx:
        return ptx
    lines = ptx.split("\n")
    in_loop = in_loops(lines)
    read_in_loops = set(re.findall(r"%rd\d+\b", "\n".join(
        line for line, inside in zip(lines, in_loop, strict=True) if inside)))  # fmt: skip
    for index, line in enumerate(lines):
        found = _WIDE_BY_CONSTANT.match(line)
        if found is None:
            continue
        indent, wide, narrow, factor = found.groups()
        value = int(factor)
        if value == 0 or value & (value - 1):
            continue
        if not in_loop[index] and wide not in read_in_loops:
            continue
        shift = value.bit_length() - 1
        lines[index] = f"{indent}cvt.s64.s32 \t{wide}, {narrow};" + (
            f"\n{indent}shl.b64 \t{wide}, {wide}, {shift};" if shift else ""
        )
    return "\n".join(lines)


def in_loops(lines: list[str]) -> list[bool]:
    """Whether each line of a PTX text is in a loop: the lines from a label to a branch back
    to it."""
    labels: dict[str, int] = {}
    in_loop = [False] * len(lines)
    for index, line in enumerate(lines):
        label = _LABEL.match(line)
        if label:
            labels[label.group(1)] = index
            continue
        branch = _BRANCH.search(line)
        if branch and branch.group(1) in labels:  # back to a label above: a loop
            for inside in range(labels[branch.group(1)], index + 1):
                in_loop[inside] = True
    return in_loop


def keep_widened_unless_it_spills(plain: str, arch: str) -> str:
    """`widen_then_shift(plain)` unless ptxas spills more registers for it than for `plain`
    (the PTX of LLVM); then `plain`. Where the rewrite changes nothing or there is no ptxas,
    the rewritten text without assembling. The cubin of the text returned is kept for the
    `ptx_to_cubin` that follows (the `cubin` stage), so that a kernel is assembled once where
    the rewrite does not spill, twice where it does."""
    widened = widen_then_shift(plain)
    if widened == plain or find_ptxas() is None:
        return widened
    from tilec_nvidia import one_wave  # deferred: it imports this module

    one_wave.start(widened, arch)  # its second cubin, beside this assembly
    info: dict[str, PtxasInfo] = {}
    cubin = ptx_to_cubin(widened, arch, info=info)
    if cubin is None or not spilled(info):
        return _remember(widened, arch, cubin, info)
    plain_info: dict[str, PtxasInfo] = {}
    plain_cubin = ptx_to_cubin(plain, arch, info=plain_info)
    if plain_cubin is not None and spilled(plain_info) < spilled(info):
        return _remember(plain, arch, plain_cubin, plain_info)
    return _remember(widened, arch, cubin, info)


def spilled(info: dict[str, PtxasInfo]) -> int:
    return sum(i.spill_stores + i.spill_loads + i.stack_bytes for i in info.values())


_ASSEMBLED: dict[tuple, tuple[bytes, dict]] = {}
_ASSEMBLED_LOCK = threading.Lock()
ASSEMBLED_KEPT = 8
"""How many cubins `keep_widened_unless_it_spills` keeps for `ptx_to_cubin` (the oldest go)."""


def _new_assembled_lock() -> None:
    """In a forked child: a lock another thread held at the fork (a one-wave assembly's
    `ptx_to_cubin`, `tilec_nvidia.one_wave`) would stay held there for ever."""
    global _ASSEMBLED_LOCK
    _ASSEMBLED_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_new_assembled_lock)


def _remember(ptx: str, arch: str, cubin: bytes | None, info: dict) -> str:
    if cubin is not None:
        with _ASSEMBLED_LOCK:
            _ASSEMBLED[assembly_key(ptx, arch)] = (cubin, dict(info))
            keep_newest(_ASSEMBLED, ASSEMBLED_KEPT)
    return ptx


def assembly_key(ptx: str, arch: str) -> tuple:
    """The key of an assembly of `ptx` for `arch` by this ptxas, for the memos of assemblies
    (this module's, `tilec_nvidia.one_wave`'s)."""
    return (hashlib.sha256(ptx.encode()).hexdigest(), arch, find_ptxas())


def keep_newest(memo: dict, kept: int) -> None:
    """Drop `memo`'s oldest entries (insertion order) beyond `kept`; the caller holds its lock."""
    while len(memo) > kept:
        del memo[next(iter(memo))]


_NEG = re.compile(r"^(\s*)neg\.s(16|32)\s+(%\w+),\s*(%\w+);", re.MULTILINE)
_ABS16 = re.compile(r"^(\s*)abs\.s16\s+(%\w+),\s*(%\w+);", re.MULTILINE)


def avoid_ptxas_negation_bugs(ptx: str) -> str:
    """Integer negations written as two's complement (`not`, then `add 1`), around two ptxas
    miscompiles (12.8 and 13.0) found by `tilec fuzz` on the H100 (tests/fuzz/RESULTS.md,
    findings 6 and 7):
    - `neg.s16` and `abs.s16` of -32768 give +32768: ptxas computes them in 32 bits and does not
      wrap, so an i16 (and an i8, which LLVM keeps in the high byte of 16 bits) negated at the
      bottom of its range reads back wrong;
    - `neg.s32` of a product feeding `min.s32 x, pid, -p` is dropped when ptxas merges the
      mins into one VIMNMX3 (the result is min(x, pid, p)).
    `abs.s16` becomes the max of the value and its two's complement."""
    ptx = _NEG.sub(r"\1not.b\2 \3, \4;\n\1add.s\2 \3, \3, 1;", ptx)
    return _ABS16.sub(
        r"\1{ .reg .b16 %abs_t; not.b16 %abs_t, \3; add.s16 %abs_t, %abs_t, 1; "
        r"max.s16 \2, \3, %abs_t; }",
        ptx,
    )


# ptxas ------------------------------------------------------------------------------------------


@functools.cache
def find_ptxas() -> str | None:
    """`TILEC_PTXAS`, else the ptxas `cuda.pathfinder` finds (installed with cuda-bindings: the
    CUDA toolkit of `CUDA_HOME`/`CUDA_PATH`, pip's nvidia-cuda-nvcc, conda), else `ptxas` on
    PATH, else the newest /usr/local/cuda*/bin/ptxas; or None. The search's answer is
    remembered in the cache folder (`tilec_nvidia.ptxas_memo`), used while it holds."""
    configured = PTXAS.get()
    if configured:
        if not os.access(configured, os.X_OK):
            raise CodegenError(f"{PTXAS_ENV}={configured} is not an executable ptxas")
        return configured
    found = ptxas_memo.remembered()
    if found is None:
        found = _search_ptxas()
        if found is not None:
            ptxas_memo.remember(found)
    return found


def _search_ptxas() -> str | None:
    found = _pathfinder_ptxas()
    if found:
        return found
    on_path = shutil.which("ptxas")
    if on_path:
        return on_path
    candidates = sorted(glob.glob("/usr/local/cuda*/bin/ptxas"), reverse=True)
    return next((path for path in candidates if os.access(path, os.X_OK)), None)


_lookup: threading.Thread | None = None


def look_for_ptxas_early() -> None:
    """Start `find_ptxas` in a background thread, once a process, so that the compile's first
    stages overlap it: cuda.pathfinder may start a Python subprocess to find the CUDA toolkit
    (its runtime-library canary: 150-200 ms of a first compile on the CPU machine, issue 24).
    `ptx_to_cubin` waits for it; a fork waits for it too (no child inherits a half-done
    lookup)."""
    global _lookup
    if _lookup is not None or find_ptxas.cache_info().currsize:
        return
    _lookup = threading.Thread(target=_look_quietly, name="tilec-find-ptxas", daemon=True)
    _lookup.start()


def _look_quietly() -> None:
    with contextlib.suppress(Exception):  # a bad TILEC_PTXAS: the compile's own call raises it
        find_ptxas()


def _wait_for_lookup() -> None:
    lookup = _lookup
    if lookup is not None and lookup is not threading.current_thread():
        lookup.join()


os.register_at_fork(before=_wait_for_lookup)


def _pathfinder_ptxas() -> str | None:
    try:
        # deferred: cuda.pathfinder comes with cuda-bindings, which a CPU-only install may lack
        from cuda.pathfinder import find_nvidia_binary_utility
    except ImportError:
        return None
    try:
        found = find_nvidia_binary_utility("ptxas")
    except Exception:  # a broken toolkit layout: fall back to tilec's own search
        return None
    return found if found and os.access(found, os.X_OK) else None


@attrs.frozen
class PtxasInfo:
    """What `ptxas -v` reports for one kernel."""

    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    shared_bytes: int = 0
    stack_bytes: int = 0


def parse_ptxas_info(log: str) -> dict[str, PtxasInfo]:
    """Per-kernel register, spill and shared-memory counts from `ptxas -v` output."""
    infos: dict[str, dict[str, int]] = {}
    current = None
    for line in log.splitlines():
        match = re.search(r"Compiling entry function '([^']+)'", line)
        if match:
            current = infos.setdefault(match.group(1), {})
            continue
        if current is None:
            continue
        match = SPILLS.search(line)
        if match:
            current["stack_bytes"], current["spill_stores"], current["spill_loads"] = map(
                int, match.groups()
            )
        match = re.search(r"Used (\d+) registers", line)
        if match:
            current["registers"] = int(match.group(1))
            shared = re.search(r"(\d+) bytes smem", line)
            current["shared_bytes"] = int(shared.group(1)) if shared else 0
    return {name: PtxasInfo(**fields) for name, fields in infos.items()}


def ptx_to_cubin(ptx: str, arch: str, *, info: dict[str, PtxasInfo] | None = None) -> bytes | None:
    """Assemble `ptx` for `arch` with ptxas -O3; None where there is no ptxas (the driver JITs
    the PTX instead), also where this ptxas no longer knows `arch` (CUDA 13 dropped sm_70).
    Fills `info` (when given) with each kernel's registers and spills.

    Raises CodegenError with ptxas's message when it rejects the PTX.
    """
    ARCHS.check(arch)
    _wait_for_lookup()
    ptxas = find_ptxas()
    if ptxas is None:
        return None
    with _ASSEMBLED_LOCK:
        kept = _ASSEMBLED.pop(assembly_key(ptx, arch), None)
    if kept is not None:  # assembled by keep_widened_unless_it_spills just before
        if info is not None:
            info.update(kept[1])
        return kept[0]
    names = re.findall(r"\.entry\s+([\w.$]+)", ptx) or ["<no .entry>"]
    with tempfile.TemporaryDirectory(prefix="tilec-ptxas-") as folder:
        source, binary = Path(folder) / "kernel.ptx", Path(folder) / "kernel.cubin"
        source.write_text(ptx)
        command = [ptxas, f"-arch={arch}", "-O3", "-v", str(source), "-o", str(binary)]
        result = run_tool(
            command, PTXAS_TIMEOUT_S, CodegenError, f"ptxas failed on kernel {', '.join(names)}",
            check=False,
        )  # fmt: skip
        message = (result.stderr or result.stdout).strip()
        if result.returncode != 0 and "not defined for option 'gpu-name'" in message:
            _warn_unsupported_arch(ptxas, arch)
            return None
        if result.returncode != 0:
            raise CodegenError(
                f"ptxas ({ptxas}) rejected kernel {', '.join(names)} for {arch} "
                f"(exit status {result.returncode}):\n{message}"
            )
        if info is not None:
            info.update(parse_ptxas_info(result.stdout + result.stderr))
        return binary.read_bytes()


@functools.cache
def _warn_unsupported_arch(ptxas: str, arch: str) -> None:
    warnings.warn(
        f"{ptxas} cannot assemble for {arch}; tilec keeps the PTX and the CUDA driver compiles it "
        f"at load time (set {PTXAS_ENV} to an older ptxas to get a cubin)",
        RuntimeWarning,
        stacklevel=3,
    )
