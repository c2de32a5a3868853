"""The op sets of the tile IR. Importing this package registers every op with the parser, and
lets the parser load the plugins when it meets a name no class has (a backend's layouts and ops
are registered by its plugin as it loads: `_load_plugins`)."""

from tilec.dialects import (
    arith,
    float8,
    func,
    gpu,
    gpu_bulk,
    gpu_matrix,
    gpu_shared,
    gpu_warp_specialize,
    inline_asm,
    math,
    scf,
    tile,
)
from tilec.ir import parser


def _load_plugins(name: str) -> str | None:
    """A `tilec.ir.parser.UNKNOWN_NAME_HOOKS` hook: the plugin host's
    `load_for_unknown_ir_name`."""
    # deferred: the plugin host (pluggy, entry points) loads only where a name is unknown
    from tilec.plugin.manager import load_for_unknown_ir_name

    return load_for_unknown_ir_name(name)


parser.UNKNOWN_NAME_HOOKS.append(_load_plugins)

__all__ = [
    "arith",
    "float8",
    "func",
    "gpu",
    "gpu_bulk",
    "gpu_matrix",
    "gpu_shared",
    "gpu_warp_specialize",
    "inline_asm",
    "math",
    "scf",
    "tile",
]
