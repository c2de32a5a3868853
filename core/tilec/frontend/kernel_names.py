"""A kernel's symbol name: its function's name, or what `@jit(repr=...)` makes of the
specialization, as Triton names the kernel (`JITFunction.repr`): its `repr` function is called
with a `SpecializationProxy` whose `constants` are the compile-time arguments by parameter name
(those specialized as equal to 1 included) and whose `signature` is each parameter's type
(`"i32"`, `"*fp32"`, `"constexpr"`). The name is the compiled kernel's (`compiled.name`, the
PTX entry)."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable
from typing import Any

from tilec.errors import DecoratorValueError

SpecializationProxy = namedtuple("SpecializationProxy", ["constants", "signature"])


def symbol_name(
    kernel: Any, signature: dict[str, str], constexprs: dict[str, Any], equal_to_1: Iterable[str]
) -> str:
    """The symbol name of `kernel` (a `KernelFunction`) compiled for this specialization."""
    make_name = getattr(kernel, "repr_function", None)
    if make_name is None:
        return kernel.__name__
    ones = set(equal_to_1)
    names = list(dict.fromkeys([*kernel.arg_names, *signature, *constexprs]))  # parameter order
    constants = {n: constexprs.get(n, 1) for n in names
                 if n in constexprs or n in ones}  # fmt: skip
    types = {n: "constexpr" if n in constants else signature.get(n, "constexpr") for n in names}
    name = make_name(SpecializationProxy(constants, types))
    if not isinstance(name, str) or not name.isidentifier():
        raise DecoratorValueError(
            f"@jit(repr=...) of {kernel.__name__} returned {name!r} for its name; a kernel's "
            "name must be an identifier (letters, digits and _)"
        )
    return name
