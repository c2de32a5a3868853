"""The op sets of the tile IR. Importing this package registers every op with the parser."""

from tilec.dialects import (
    arith,
    float8,
    func,
    gpu,
    gpu_matrix,
    gpu_shared,
    inline_asm,
    math,
    scf,
    tile,
)

__all__ = [
    "arith",
    "float8",
    "func",
    "gpu",
    "gpu_matrix",
    "gpu_shared",
    "inline_asm",
    "math",
    "scf",
    "tile",
]
