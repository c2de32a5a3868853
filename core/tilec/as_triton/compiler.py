"""`triton.compiler` (and `triton.compiler.compiler`) under the alias: `CompiledKernel` is
tilec's, `compile(ASTSource(fn, signature, constexprs, attrs), target, options)` compiles with
`tilec.compile`, `CompilationError` is tilec's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tilec.as_triton import (
    backends,
    errors,  # noqa: F401 - triton.compiler.errors, as Triton's package has
)
from tilec.errors import LaunchArgumentError
from tilec.frontend import CompilationError
from tilec.runtime import compiler as tilec_compiler
from tilec.runtime.compiler import CompiledKernel
from tilec.runtime.driver import GPUTarget
from tilec.version import __version__ as tilec_version

__path__: list[str] = []
"""A package to the import system: `tilec.as_triton.finder` answers its submodules."""


class ASTSource:
    """Triton's source of a compile: the kernel, its signature (parameter name -> type, with
    "constexpr" for compile-time parameters), the constexpr values (by name or by a tuple of
    the parameter's index) and attributes (`{(index,): [["tt.divisibility", 16]]}`)."""

    def __init__(self, fn: Any, signature: Mapping[str, str], constexprs: Any = None,
                 attrs: Any = None) -> None:  # fmt: skip
        if getattr(fn, "arg_names", None) is None:
            raise LaunchArgumentError(f"ASTSource takes a @triton.jit kernel; got {fn!r}")
        for key in signature:
            if not isinstance(key, str):
                raise TypeError("Signature keys must be string")
        self.fn = fn
        self.name = fn.__name__
        self.signature = dict(signature)
        self.constants: dict[tuple[int, ...], Any] = {}
        for key, value in (constexprs or {}).items():
            key = (fn.arg_names.index(key),) if isinstance(key, str) else key
            if not isinstance(key, tuple):
                raise TypeError(f"ASTSource constexprs keys are names or index tuples; got {key!r}")
            self.constants[key] = value
        self.attrs = dict(attrs or {})

    def _name_of(self, key: tuple[int, ...]) -> str:
        if len(key) != 1:
            raise LaunchArgumentError(
                f"{self.name}: tilec compiles no tuple parameters' parts ({key}); pass the "
                "parameter's value as a whole"
            )
        return self.fn.arg_names[key[0]]

    def tilec_arguments(self) -> tuple[dict[str, str], dict[str, Any], list[str]]:
        """The signature, constexprs and divisible parameters of `tilec.compile`."""
        constexprs = {self._name_of(k): v for k, v in self.constants.items()}
        signature = {n: t for n, t in self.signature.items() if t != "constexpr"}
        divisible = []
        for key, facts in self.attrs.items():
            for fact, value in facts:
                if fact != "tt.divisibility" or value != 16:
                    raise LaunchArgumentError(
                        f'{self.name}: tilec takes only ["tt.divisibility", 16] as an '
                        f"attribute; got {[fact, value]!r} for parameter {self._name_of(key)}"
                    )
                divisible.append(self._name_of(key))
        return signature, constexprs, divisible


def compile(src: Any, target: Any = None, options: Mapping[str, Any] | None = None) -> Any:
    """Triton's `triton.compile(ASTSource(...), target=GPUTarget(...), options={...})`: the
    kernel compiled for the tilec backend of `target` (`tilec.as_triton.backends.backend_of`;
    None: the selected one). Options are sorted as a launch's: the backend's own, Triton options
    it lacks (accepted at the value it honours anyway) and other backends' (no effect);
    an option no backend knows is an OptionTypeError. The result's `src` is `src`."""
    if not isinstance(src, ASTSource):
        raise LaunchArgumentError(
            "tilec compiles Triton's ASTSource only (no TTIR/TTGIR/LLIR/PTX file sources); got "
            f"{src!r}"
        )
    signature, constexprs, divisible = src.tilec_arguments()
    backend, arch = backends.backend_of(target)
    honoured = backends.honoured_options(src.name, backend, options or {})
    compiled = tilec_compiler.compile(src.fn, signature, constexprs, backend=backend,
                                      target=arch, divisibility=divisible, **honoured)  # fmt: skip
    compiled.src = src
    compiled.keep_for_pickling()  # Inductor's compile workers send it back pickled
    return compiled


def make_backend(target: Any) -> backends.TritonBackend:
    """Triton's `make_backend(GPUTarget)`: the compiler of the backend for `target`."""
    return backends.TritonBackend(target)


def triton_key() -> str:
    """The compiler's identity in cache keys (torch's Inductor reads it): tilec's version and
    the fingerprint of its code."""
    return f"tilec-{tilec_version}-{tilec_compiler.code_fingerprint('tilec')}"


__all__ = [
    "ASTSource", "CompilationError", "CompiledKernel", "GPUTarget", "compile", "make_backend",
    "triton_key",
]  # fmt: skip
