"""The kernel's source object lives in the frontend; the runtime adds launching on top."""

import ast
from pathlib import Path

import tilec
import tilec.language as tl
from tilec.frontend import KernelFunction
from tilec.runtime.jit import JITFunction

CORE = Path(tilec.__file__).parent


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_frontend_does_not_import_the_runtime():
    for path in (CORE / "frontend").glob("*.py"):
        runtime = {m for m in _imported_modules(path) if m.startswith("tilec.runtime")}
        assert not runtime, f"{path.name} imports {runtime}"


def test_the_ir_layer_imports_nothing_else_of_tilec():
    """Nothing but the IR, and for settings the error types (`tilec.errors` imports nothing)."""
    for path in [CORE / "ir" / "type_names.py", CORE / "settings.py"]:
        imported = {m for m in _imported_modules(path) if m.startswith("tilec")}
        allowed = ("tilec.ir", "tilec.errors")
        assert all(m.startswith(allowed) for m in imported), f"{path.name}: {imported}"


def scale(x_ptr, n, FACTOR: tl.constexpr = 2, BLOCK: "tl.constexpr" = 16):
    pass


def test_parameters_constexprs_and_defaults():
    kernel = KernelFunction(scale)
    assert kernel.arg_names == ["x_ptr", "n", "FACTOR", "BLOCK"]
    assert kernel.constexpr_flags == (False, False, True, True)
    assert kernel.defaults == {"FACTOR": 2, "BLOCK": 16}
    assert kernel.cache_key == KernelFunction(scale).cache_key


def test_jit_functions_are_kernel_functions():
    kernel = tilec.jit(scale)
    assert isinstance(kernel, JITFunction) and isinstance(kernel, KernelFunction)
    assert repr(kernel) == f"JITFunction({__name__}:scale)"
    assert kernel.cache_key == KernelFunction(scale).cache_key
