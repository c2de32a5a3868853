"""What a TMA store does where `tilec_nvidia.tma_store.exact` would not take it (run as a script
by test_tma_store_rules_gpu.py, one case a process: an illegal instruction ruins the process's
CUDA context). `tma_store.exact` is patched to hold everywhere, so every block of the case is
stored through TMA; the result, against the interpreter's masked store, is printed as JSON:

    {"outcome": "exact" | "differs" | "trap", "past": [byte columns written past the tensor],
     "inside": number of differing bytes inside the tensor, "error": the error's text}

Usage: python tma_store_probe.py ELEMENT ROWS COLUMNS BM BN SHIFT CSHIFT (TILEC_NVIDIA_TMA=1).
"""

from __future__ import annotations

import json
import sys

import torch
from llvmlite import ir
from test_tma_gpu import STORE_DTYPES, _store

import tilec
from tilec_nvidia import tma_lowering, tma_store


def main(argv: list[str]) -> None:
    element = argv[0]
    rows, columns, bm, bn, shift, cshift = (int(a) for a in argv[1:7])
    tma_lowering.STORES = True
    tma_store.exact = lambda b, *rest: ir.Constant(ir.IntType(1), 1)
    dtype = STORE_DTYPES[element]
    torch.manual_seed(1)
    grid_rows = tilec.cdiv(rows + shift, bm) * bm
    grid_columns = tilec.cdiv(columns + cshift, bn) * bn
    source = (torch.randn((grid_rows, grid_columns)) * 50).to(dtype)
    shape, block = (rows, columns), (bm, bn)
    expected = _store(shape, block, (shift, cshift), dtype, "interp", "cpu", source)
    try:
        got = _store(shape, block, (shift, cshift), dtype, "nvidia", "cuda", source)
    except Exception as error:  # the device's report, whatever its class
        print(json.dumps({"outcome": "trap", "past": [], "inside": 0, "error": str(error)[:300]}))
        return
    wrong = (got.view(torch.uint8) != expected.view(torch.uint8)).nonzero().tolist()
    edge = columns * got.element_size()
    past = sorted({c for _, c in wrong if c >= edge})
    inside = sum(1 for _, c in wrong if c < edge)
    outcome = "exact" if not wrong else "differs"
    print(json.dumps({"outcome": outcome, "past": past, "inside": inside, "error": ""}))


if __name__ == "__main__":
    main(sys.argv[1:])
