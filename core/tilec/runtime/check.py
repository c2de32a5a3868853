"""`check=True` launches and `tilec run --check`: every launch also runs on the interpreter.

The interpreter is the reference: the launch's array arguments are copied to the host before the
launch, the kernel runs on the chosen backend, the same kernel and specialization runs on the
interpreter over the copies, and every array the kernel may write is compared with tolerances by
dtype. A mismatch raises `CheckError` naming the kernel, the argument and the first mismatching
index with both values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tilec import settings
from tilec.errors import LaunchArgumentError

if TYPE_CHECKING:
    import numpy as np

TOLERANCES = {
    "fp64": (1e-9, 1e-12),
    "fp32": (1e-4, 1e-5),
    "fp16": (1e-2, 1e-3),
    "bf16": (2e-2, 1e-2),
}
"""(rtol, atol) by element type; integer and boolean results must match exactly."""

DOT_F32_TOLERANCE = (1e-4, 1e-5, 1e-5)
"""(rtol, atol, atol per unit of the largest expected magnitude) of fp32 results of a kernel with a
`tl.dot` in f32 ("ieee", "tf32x3"): a backend sums the K products in another order than the
interpreter (tensor-core k-groups, one accumulator per thread), so a result that cancels to near zero
differs by a few ulps of the array's partial sums, not of its own size: on the H100, 0.0051730 against
0.0051839 in a 336-deep fp16 matmul whose results reach 80."""

TF32_TOLERANCE = (2e-3, 2e-3)
"""(rtol, atol) of fp32 results of a kernel with a `tl.dot` in tf32: backends cut the inputs to
tf32 as the interpreter does, but an input that differs from the interpreter's by one f32 ulp
(after an `exp`, say) may be cut to a neighbouring tf32, 2**-10 of its size away."""


FLOAT8_DOT_TOLERANCE = (1e-2, 1e-3, 1e-2)
"""(rtol, atol, atol per unit of the largest expected magnitude) of floating results of a kernel
with a `tl.dot` of float8 inputs: a backend may multiply them on float8 tensor cores, which sum
up to `max_num_imprecise_acc` products (all of them by default, as in Triton on sm_90) keeping
about 14 bits of the sum, where the interpreter's f32 sum keeps 24: each of the K / 32 additions
may lose 2^-13 of the partial sum, which a result that cancels keeps."""


class CheckError(AssertionError):
    """A backend's result differs from the interpreter's."""


enabled = settings.CHECK.enabled()
"""Whether launches without a `check=` option are checked: `TILEC_CHECK=1` (what
`tilec run --check` sets) or `tilec.runtime.check.enabled = True`."""


def run_checked(
    compiled: Any,
    grid: tuple[int, ...],
    args: list[Any],
    reference: Callable[[], Any],
) -> None:
    """Run `compiled` on its backend and `reference()` (the interp compile of the same kernel and
    specialization) on host copies of `args`; compare what the kernel wrote."""
    backend = compiled.backend
    params = compiled.runtime_params
    pointers = [i for i, p in enumerate(params) if compiled.signature[p].startswith("*")]
    host_args = list(args)
    for i in pointers:
        host_args[i] = _to_host(backend, args[i], params[i]).copy()
    compiled.run(grid, args)
    if backend.name == "interp":
        return
    interp = reference()
    interp.run(grid, host_args)
    written = compiled.metadata.get("written", pointers)
    tolerances = tolerances_of(interp.module)
    for i in written:
        actual = _to_host(backend, args[i], params[i])
        elem = compiled.signature[params[i]][1:]
        _compare(compiled.name, params[i], elem, actual, host_args[i], tolerances)


def tolerances_of(module: Any) -> dict[str, tuple[float, ...]]:
    """`TOLERANCES`, with `TF32_TOLERANCE` for fp32 where `module` (the kernel's tir) has a
    `tl.dot` of f32 inputs in tf32, `FLOAT8_DOT_TOLERANCE` for every float type where it has a
    `tl.dot` of float8 inputs (marked by its `max_num_imprecise_acc`), and `DOT_F32_TOLERANCE`
    where it has another `tl.dot` (3xTF32 is about as accurate as f32)."""
    from tilec.dialects.tile import DotOp  # deferred: launches load this module, checks only this

    dots = [op for op in module.walk() if isinstance(op, DotOp)] if module is not None else []
    if any("max_num_imprecise_acc" in op.attributes for op in dots):
        return {**TOLERANCES, **dict.fromkeys(("fp32", "fp16", "bf16"), FLOAT8_DOT_TOLERANCE)}
    if any(op.precision == "tf32" for op in dots):
        return {**TOLERANCES, "fp32": TF32_TOLERANCE}
    if dots:
        return {**TOLERANCES, "fp32": DOT_F32_TOLERANCE}
    return TOLERANCES


def _to_host(backend: Any, value: Any, param: str) -> np.ndarray:
    import numpy as np  # deferred: launches load this module, checks only NumPy

    if isinstance(value, np.ndarray):
        return value
    try:
        return backend.driver.to_host(value)
    except NotImplementedError:
        raise LaunchArgumentError(
            f"check=True cannot read argument '{param}' ({type(value).__name__}) back from "
            f"backend '{backend.name}'"
        ) from None


def _compare(
    kernel: str,
    param: str,
    elem: str,
    actual: np.ndarray,
    expected: np.ndarray,
    tolerances: dict[str, tuple[float, ...]] = TOLERANCES,
) -> None:
    import numpy as np  # deferred: launches load this module, checks only NumPy

    actual, expected = actual.reshape(-1), expected.reshape(-1)
    atol = 0.0
    if elem in tolerances:
        rtol, atol, *per_magnitude = tolerances[elem]
        a, e = _as_float(actual, elem), _as_float(expected, elem)
        finite = np.abs(e[np.isfinite(e)])
        if per_magnitude and finite.size:
            atol = max(atol, per_magnitude[0] * float(finite.max()))
        bad = ~(np.isclose(a, e, rtol=rtol, atol=atol) | (np.isnan(a) & np.isnan(e)))
    else:
        bad = actual != expected
    if not bad.any():
        return
    index = int(np.argmax(bad))
    position = np.unravel_index(index, actual.shape)
    raise CheckError(
        f"{kernel}: argument '{param}' differs from the interpreter at index "
        f"{position[0] if len(position) == 1 else position}: got {actual[index].item()!r}, "
        f"expected {expected[index].item()!r} ({int(bad.sum())} of {bad.size} elements differ"
        + (f"; rtol={tolerances[elem][0]}, atol={atol:.3g})" if elem in tolerances else ")")
    )


def _as_float(values: np.ndarray, elem: str) -> np.ndarray:
    import numpy as np  # deferred: launches load this module, checks only NumPy

    if elem == "bf16" and values.dtype == np.uint16:
        return (values.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return values.astype(np.float64)
