"""Translation validation of tir passes: the interpreter runs every kernel of the module on
random inputs before the pipeline and again after each pass that rewrote the tir; the first pass
after which a result differs is named, with the IR before and after it.

`ValidatePasses` is a pass instrumentation, so it checks any pass, core or third-party, that the
pass manager runs: `tilec opt --validate` adds it, and so does every compile while
`TILEC_VALIDATE_PASSES=1` (`tilec.settings.VALIDATE_PASSES`). A function is validated when the
interpreter can run it on the module as given: every argument a pointer or a scalar, no result;
inputs that make the original IR fail (an access out of bounds for the random sizes) are replaced
by other random inputs. A function that cannot be run so (one that returns a value, say) or that
no input runs is listed in `skipped` with the reason, not validated; `tilec opt --validate` says
so and fails when it validated nothing.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from tilec.ir import print_module, verify
from tilec.ir.core import Operation
from tilec.ir.type_names import BY_IR_TYPE
from tilec.ir.types import FloatType, IntegerType, PointerType
from tilec.passes.instrumentation import PassInstrumentation
from tilec.plugin import manager as plugin_host

log = logging.getLogger(__name__)

BUFFER_ELEMENTS = 4096
"""Elements of each random pointer argument's buffer."""
ATTEMPTS = ((2, 16), (1, 4), (1, 1))
"""(programs, largest integer argument) of the input sets tried, until one runs."""
TOLERANCE = {"f16": 1e-2, "bf16": 2e-2, "f32": 1e-5, "f64": 1e-12}
"""Relative tolerance of float results: passes may reassociate or contract what they fold."""


class ValidationError(Exception):
    """A pass changed what a kernel computes: names the pass, the kernel, the first difference,
    and holds the IR before and after the pass."""

    def __init__(self, pass_name: str, difference: str, before: str, after: str):
        self.pass_name, self.difference, self.before, self.after = (
            pass_name, difference, before, after,
        )  # fmt: skip
        super().__init__(
            f"translation validation: pass '{pass_name}' changed the results: {difference}\n"
            f"// -----// IR Before {pass_name} //----- //\n{before}"
            f"// -----// IR After {pass_name} //----- //\n{after}"
        )


def _interpreter() -> Any:
    backend = plugin_host.load_backends().get("interp")
    if backend is None or not hasattr(backend, "execute"):
        raise RuntimeError(
            "translation validation runs the interpreter: install the interp backend "
            "(pip install -e plugins/interp)"
        )
    return backend


def _storage(t: Any) -> np.dtype:
    if isinstance(t, FloatType) and t.name == "bf16":
        return np.dtype(np.uint16)
    names = BY_IR_TYPE[t]
    return np.dtype(names.numpy or names.storage)  # float8: its uint8 codes, compared exactly


def _random_argument(rng: np.random.Generator, t: Any, attrs: dict, largest: int) -> Any:
    divisibility = getattr(attrs.get("tile.divisibility"), "value", 1) or 1
    if isinstance(t, PointerType):
        pointee = t.pointee
        if isinstance(pointee, FloatType):
            values = (rng.integers(-32, 33, BUFFER_ELEMENTS) / 8).astype(np.float32)
            if pointee.name == "bf16":
                return (values.view(np.uint32) >> 16).astype(np.uint16)
            return values.astype(_storage(pointee))
        dtype = _storage(pointee)
        if dtype.kind == "b":
            return rng.integers(0, 2, BUFFER_ELEMENTS).astype(bool)
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), BUFFER_ELEMENTS, dtype)
    if isinstance(t, FloatType):
        return float(rng.integers(-32, 33) / 8)
    if isinstance(t, IntegerType) and t.width == 1:
        return bool(rng.integers(0, 2))
    return int(rng.integers(1, largest + 1)) * int(divisibility)


def _not_runnable(function: Operation) -> str:
    """Why the interpreter cannot run `function` on its own as a kernel; empty if it can."""
    signature = function.signature
    if signature.results:
        return (
            "it returns a value (the interpreter runs kernels, which return nothing): store "
            "the value through a pointer argument to have it validated"
        )
    for t in signature.inputs:
        if not isinstance(t, PointerType | IntegerType | FloatType):
            return f"its argument of type {t} is no pointer or scalar"
        if isinstance(getattr(t, "pointee", None), PointerType):
            return f"its argument of type {t} points to pointers"
    return ""


def _kernels(module: Operation) -> list[Operation]:
    """The functions the interpreter can run on their own: pointer and scalar arguments."""
    return [f for f in getattr(module, "functions", []) if not _not_runnable(f)]


def _copy(args: list) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


class ValidatePasses(PassInstrumentation):
    """Runs the module's kernels on the interpreter before the pipeline and after every pass of
    `stages` whose output differs from its input (as text); raises `ValidationError` at the
    first pass whose results differ. `checked` counts the passes compared per kernel."""

    def __init__(self, *, seed: int = 0, stages: Sequence[str] = ("tir",)):
        self.seed = seed
        self.stages = tuple(stages)
        self.inputs: dict[str, tuple[tuple[int, ...], list]] = {}
        self.results: dict[str, Any] = {}
        self.skipped: dict[str, str] = {}
        self.checked: dict[str, int] = {}
        self.text = ""

    def before_pipeline(self, passes: Sequence[Any], module: Operation) -> None:
        self.inputs.clear()
        self.results.clear()
        self.text = print_module(module)
        interp = _interpreter()
        rng = np.random.default_rng(self.seed)
        for function in getattr(module, "functions", []):
            reason = _not_runnable(function)
            if reason:
                self.skipped[function.name_str] = reason
        for function in _kernels(module):
            name = function.name_str
            reason = ""
            for programs, largest in ATTEMPTS:
                attributes = [
                    function.argument_attributes(i) for i in range(len(function.signature.inputs))
                ]
                args = [
                    _random_argument(rng, t, a, largest)
                    for t, a in zip(function.signature.inputs, attributes, strict=True)
                ]
                try:
                    result = self._run(interp, module, name, (programs,), args)
                except Exception as err:  # the inputs do not fit this kernel: try others
                    reason = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                    continue
                self.inputs[name] = ((programs,), args)
                self.results[name] = result
                self.checked[name] = 0
                break
            else:
                self.skipped[name] = reason

    @staticmethod
    def _run(interp: Any, module: Operation, name: str, grid: tuple, args: list) -> list:
        args = _copy(args)
        with contextlib.redirect_stdout(io.StringIO()):  # the kernel's prints are not output
            interp.execute(module, name, grid, args)
        return [a for a in args if isinstance(a, np.ndarray)]

    def after_pipeline(self, module: Operation, changed: bool) -> None:
        for name, count in self.checked.items():
            log.info("translation validation: @%s: results equal after %d passes", name, count)
        for name, reason in self.skipped.items():
            log.info("translation validation: @%s not validated: no random input runs (%s)",
                     name, reason)  # fmt: skip

    def after_pass(self, pass_: Any, module: Operation, changed: bool, seconds: float) -> None:
        cls = type(pass_)
        if cls.stage not in self.stages or getattr(cls, "is_analysis", False) or not self.inputs:
            return
        text = print_module(module)
        if text == self.text:
            return
        before, self.text = self.text, text
        try:
            verify(module)
        except Exception:
            return  # the pass manager reports invalid IR, naming the pass
        interp = _interpreter()
        for name, (grid, args) in self.inputs.items():
            if module.lookup(name) is None:  # type: ignore[attr-defined]
                raise ValidationError(cls.name, f"@{name} is gone", before, text)
            try:
                result = self._run(interp, module, name, grid, args)
            except Exception as err:
                difference = (
                    f"@{name} fails on inputs the IR before ran: {type(err).__name__}: {err}"
                )
                raise ValidationError(cls.name, difference, before, text) from None
            difference = _difference(self.results[name], result, module.lookup(name))  # type: ignore[attr-defined]
            if difference:
                raise ValidationError(cls.name, f"@{name}: {difference}", before, text)
            self.results[name] = result
            self.checked[name] += 1


def _difference(expected: list, actual: list, function: Any) -> str:
    pointers = [t for t in function.signature.inputs if isinstance(t, PointerType)]
    for index, (e, a, t) in enumerate(zip(expected, actual, pointers, strict=True)):
        pointee = t.pointee
        if isinstance(pointee, FloatType):
            ef, af = e.astype(np.float64), a.astype(np.float64)
            if pointee.name == "bf16":
                ef = (e.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
                af = (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
            rtol = TOLERANCE.get(pointee.name, 1e-5)
            bad = ~(np.isclose(af, ef, rtol=rtol, atol=rtol) | (np.isnan(af) & np.isnan(ef)))
        else:
            bad = a != e
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            return (
                f"pointer argument {index} ({pointee}) differs at element {first} "
                f"({int(bad.sum())} elements): {a[first]!r} instead of {e[first]!r}"
            )
    return ""


__all__ = ["ValidatePasses", "ValidationError"]
