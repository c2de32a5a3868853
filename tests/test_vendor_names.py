"""No vendor name in the core's code paths (issue 21): the core is target-neutral, and what a
vendor's hardware does lives in its backend plugin (`plugins/nvidia`, `plugins/amd`), which
contributes it through the documented hooks (`tilec.lowering.matrix_units`).

The source of `core/tilec` is read with `tokenize`: comments and docstrings are left out (they
may name the hardware a neutral piece was written after); every name and every other string is
cut into words (at `_`, `.`, case changes and digits) and checked against `VENDOR_WORDS` and the
arch patterns (`sm_80`, `gfx942`, `cp.async`). What remains is listed in `ALLOWED`, module by
module and word by word, each with its reason; the test fails both on a vendor word outside the
list and on an entry the code no longer needs, so the list only shrinks.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core" / "tilec"

VENDOR_WORDS = frozenset(
    {
        "nvidia", "cuda", "ptx", "ptxas", "nvptx", "cubin", "wgmma", "ldmatrix", "nvmma",
        "amd", "hip", "rocm", "hsaco", "amdgcn", "amdgpu", "mfma", "wmma",
    }
)  # fmt: skip
ARCH = re.compile(r"(?i)(?<![a-z0-9])(sm_?\d{2,3}a?|gfx\d{3,4}[a-z]?|cp\.async)(?![a-z0-9])")

# Names others define, which the core must spell as they do.
COMPAT = "Triton's or the ecosystem's own name, which tilec must spell as they do"
EXTRA = (
    "Triton's vendor namespaces tl.extra.cuda and tl.extra.hip (their functions, Triton's names, "
    "and errors naming the backend that compiles them) and CUDA's libdevice file name"
)
INTEROP = (
    "a device-interchange protocol's name (__cuda_array_interface__, DLPack's kDLCUDA/kDLROCM, "
    "PyTorch's 'cuda' device, its stream attributes and its graphs, torch.cuda.CUDAGraph)"
)

DOCS = "user documentation text of a language function (what its targets accept)"
ALLOWED: dict[str, dict[str, str]] = {}
"""Per module (path under core/; a path ending in `/`: every module of that package), per vendor
word found there, why it is allowed."""


def _allow(reason: str, entries: dict[str, list[str]]) -> None:
    for module, words in entries.items():
        ALLOWED.setdefault(module, {}).update({word: reason for word in words})


_allow(
    COMPAT,
    {
        # Triton's backend and target names, its knobs namespaces (knobs.nvidia, knobs.amd),
        # its tl.extra.cuda and triton.language.target_info (is_cuda, is_hip, gfx942 checks)
        "tilec/as_triton/": ["amd", "cuda", "hip", "nvidia", "ptx", "ptxas"],  # the whole package
        "tilec/language/target_info.py": ["cuda", "gfx942", "gfx950", "hip"],
        # Triton's Autotuner attribute use_cuda_graph, which torch's Dynamo reads
        "tilec/runtime/autotune/tuner.py": ["cuda"],
    },
)
_allow(
    EXTRA,
    {
        "tilec/extern_libraries.py": ["cuda"],
        "tilec/frontend/extra_builtins.py": ["amd", "cuda", "hip", "nvidia"],
        "tilec/language/extra/": ["cuda", "hip", "sm70", "sm80", "sm90"],  # the whole package
    },
)
_allow(
    INTEROP,
    {
        "tilec/driver.py": ["cuda"],
        "tilec/interop/": ["cuda", "hip", "rocm"],  # the whole package
        "tilec/runtime/specialization.py": ["cuda"],
        "tilec/tools/tensor_descriptor.py": ["cuda"],
    },
)
_allow(DOCS, {"tilec/language/docs.py": ["amd", "amdgcn", "nvidia", "ptx"]})


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            for stmt in node.body:
                value = stmt.value if isinstance(stmt, ast.Expr) else None
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def _words(text: str) -> set[str]:
    found = {m.lower().replace("_", "") for m in ARCH.findall(text)}
    for part in re.split(r"[^A-Za-z0-9]+", text):
        for word in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", part):
            if word.lower() in VENDOR_WORDS:
                found.add(word.lower())
    return found


def vendor_names() -> dict[str, set[str]]:
    """Per module of core/tilec, the vendor words of its code (module doc)."""
    names: dict[str, set[str]] = {}
    for path in sorted(CORE.rglob("*.py")):
        source = path.read_text()
        skipped = _docstring_lines(ast.parse(source))
        kinds = (tokenize.NAME, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1))
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in kinds and token.start[0] not in skipped:
                words = _words(token.string)
                if words:
                    names.setdefault(str(path.relative_to(CORE.parent)), set()).update(words)
    return names


def test_the_scan_finds_vendor_words_in_names_and_strings_only():
    assert _words("is_wgmma") == {"wgmma"}
    assert _words("AmdMatrixLayout") == {"amd"}
    assert _words("'compile for sm_80 or gfx942'") == {"sm80", "gfx942"}
    assert _words("smem_bytes gfx") == set()
    assert _words("cp.async.wait_group") == {"cp.async"}
    assert _words("relationship chip amid") == set()


def allowed_words(module: str) -> set[str]:
    """The vendor words `ALLOWED` lets `module` use (its own entry and its packages')."""
    return {
        word
        for key, words in ALLOWED.items()
        if key == module or (key.endswith("/") and module.startswith(key))
        for word in words
    }


def test_no_vendor_name_in_the_core_code_paths():
    found = vendor_names()
    unexpected = sorted(
        f"{module}: {word}"
        for module, words in found.items()
        for word in words
        if word not in allowed_words(module)
    )
    assert not unexpected, (
        "vendor names in the core's code (move the vendor's part into its plugin, behind a "
        "documented hook, or list a name others define in ALLOWED with its reason):\n"
        + "\n".join(unexpected)
    )


def test_every_allowed_vendor_name_is_still_needed():
    found = vendor_names()
    stale = sorted(
        f"{key}: {word}"
        for key, words in ALLOWED.items()
        for word in words
        if not any(
            word in used
            for module, used in found.items()
            if module == key or (key.endswith("/") and module.startswith(key))
        )
    )
    assert not stale, "drop these entries of ALLOWED, the code no longer has them:\n" + "\n".join(
        stale
    )
