"""The three checks of one random program, each returning a `Finding` or None:

- `interp`: the interpreter against the program's NumPy model;
- `codegen`: code generation of every installed GPU backend on the CPU, for each of the targets
  its plugin names (`GpuBackend.check_targets`; nvidia: PTX assembled by ptxas for sm_80 and
  sm_90a, amd: code objects for gfx942 and gfx1100): any exception is a finding;
- `device`: a GPU backend on its device against the interpreter: the one `TILEC_BACKEND` names
  (`tilec fuzz --backend`), else the first available GPU backend by priority.

They run in-process; `tilec.fuzz.worker` runs them in a child process so that an LLVM abort or a
hang is caught and reported too.
"""

from __future__ import annotations

import linecache
import traceback
from typing import Any

import attrs
import numpy as np

import tilec
from tilec import settings
from tilec.backend import GpuBackend
from tilec.errors import BackendUnavailableError
from tilec.fuzz.program import RTOL, Program, Store, is_float, tolerances, walk_statements
from tilec.runtime.compiler import automatic_order, get_backend

MODES = ("interp", "codegen", "device")
KERNEL_NAME = "fuzz_kernel"


@attrs.frozen
class Finding:
    """A bug the fuzzer found: its kind (`mismatch`, `exception`, `crash`, `timeout`), a key that
    stays the same while the shrinker reduces the kernel, and what happened."""

    kind: str
    key: str
    message: str

    def same_as(self, other: Finding | None) -> bool:
        return other is not None and other.kind == self.kind and other.key == self.key


def load_kernel(program: Program) -> Any:
    """The program's `@tilec.jit` kernel, exec'd from its source under a linecache name (so the
    frontend reads the source and diagnostics show its lines)."""
    source = program.source(KERNEL_NAME)
    filename = f"<tilec-fuzz-{program.seed}-{abs(hash(source)):x}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[KERNEL_NAME]


def _exception(err: BaseException, where: str) -> Finding:
    frames = traceback.extract_tb(err.__traceback__)
    inner = next((f for f in reversed(frames) if "tilec" in f.filename), None)
    place = f"{inner.filename.rsplit('/', 2)[-1]}:{inner.name}" if inner else ""
    key = f"{where}: {type(err).__name__} {place}"
    text = "\n".join(str(err).splitlines()[:20])
    stack = "".join(traceback.format_list(frames[-3:]))
    return Finding("exception", key, f"{where}: {type(err).__name__}: {text}\n{stack}")


def _compile(program: Program, backend: str, target: str | None = None) -> Any:
    kernel = load_kernel(program)
    return tilec.compile(
        kernel,
        signature=program.signature(),
        constexprs=program.constexprs(),
        backend=backend,
        target=target,
        num_warps=program.num_warps,
    )


def check_interp(program: Program) -> Finding | None:
    rng = np.random.default_rng(program.seed)
    inputs, outputs = program.make_inputs(rng)
    expected = [o.copy() for o in outputs]
    program.evaluate([i.copy() for i in inputs], expected)
    actual = [o.copy() for o in outputs]
    try:
        compiled = _compile(program, "interp")
        compiled.run((program.grid,), program.arguments(inputs, actual))
    except Exception as err:
        return _exception(err, "interp")
    return compare(program, actual, expected, "interp", "numpy")


def gpu_backends() -> list[GpuBackend]:
    """The installed GPU backends, by the priority their plugins declare."""
    return [b for b in automatic_order() if isinstance(b, GpuBackend)]


def codegen_targets() -> tuple[tuple[str, str], ...]:
    """`(backend, target)` of each installed GPU backend's `check_targets`."""
    return tuple((b.name, target) for b in gpu_backends() for target in b.check_targets)


def device_backend() -> str:
    """The GPU backend `device` checks: `TILEC_BACKEND`'s, else the first available one."""
    named = settings.backend()
    if named is not None:
        return named
    for backend in gpu_backends():
        if backend.is_available():
            return backend.name
    raise BackendUnavailableError("no GPU backend is available for the device checks")


def check_codegen(program: Program, targets=None) -> Finding | None:
    for backend, target in codegen_targets() if targets is None else targets:
        try:
            compiled = _compile(program, backend, target)
        except Exception as err:
            return _exception(err, f"{backend} {target}")
        binary = get_backend(backend, require_available=False).binary_stage
        if binary not in compiled.asm:
            stages = ", ".join(compiled.asm)
            return Finding("exception", f"{backend} {target}: no {binary}",
                           f"{backend} {target}: no {binary} was produced (stages: {stages})")  # fmt: skip
    return None


def check_device(program: Program) -> Finding | None:
    rng = np.random.default_rng(program.seed)
    inputs, outputs = program.make_inputs(rng)
    expected = [o.copy() for o in outputs]
    actual = [o.copy() for o in outputs]
    try:
        reference = _compile(program, "interp")
        reference.run((program.grid,), program.arguments([i.copy() for i in inputs], expected))
    except Exception as err:
        return _exception(err, "interp")
    backend = device_backend()
    try:
        compiled = _compile(program, backend)
        compiled.run((program.grid,), program.arguments([i.copy() for i in inputs], actual))
    except Exception as err:
        return _exception(err, backend)
    return compare(program, actual, expected, backend, "interp")


CHECKS = {"interp": check_interp, "codegen": check_codegen, "device": check_device}


def run_check(mode: str, program: Program) -> Finding | None:
    return CHECKS[mode](program)


def _as_float(values: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (values.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return values.astype(np.float64)


def compare(
    program: Program, actual: list, expected: list, name: str, reference: str
) -> Finding | None:
    """The first output element where `actual` differs from `expected`: exactly for integers and
    exact floats, within the dtype's tolerance of the stored value's bound otherwise."""
    stores = {s.output: s for s in walk_statements(program.body) if isinstance(s, Store)}
    rtols = tolerances(program)
    for index, dtype in enumerate(program.outputs):
        if index not in stores:
            continue
        value = stores[index].value
        a, e = actual[index], expected[index]
        if is_float(dtype):
            af, ef = _as_float(a, dtype), _as_float(e, dtype)
            rtol = max(rtols[index], RTOL[dtype]) if rtols[index] else 0.0
            atol = rtol * max(value.bound, 1.0)
            bad = ~(np.isclose(af, ef, rtol=0.0, atol=atol) | (np.isnan(af) & np.isnan(ef)))
        else:
            bad = a != e
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            return Finding(
                "mismatch",
                f"{name} vs {reference}",
                f"{name} vs {reference}: out{index} ({dtype}) differs at {first} of "
                f"{bad.size} ({int(bad.sum())} elements): {a[first]!r} instead of {e[first]!r}",
            )
    return None
