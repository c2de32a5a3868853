"""Lower a gir file for the golden tests: `lower.py FILE.gir --emit llir|ptx [--arch sm_90]`.

Prints the LLVM IR or the PTX of the file's first kernel (or `--kernel NAME`); with `--emit ptx`
the PTX is also assembled by `ptxas` when it is on the machine, so a golden test fails when
ptxas rejects it. A test helper, not a tool: `tilec compile` is the user's way to these stages.
"""

from __future__ import annotations

import argparse
import sys

import tilec.dialects  # noqa: F401  (registers the ops for the parser)
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec_nvidia.codegen import find_ptxas, llir_to_ptx, ptx_to_cubin
from tilec_nvidia.target_info import NvidiaTargetInfo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--emit", choices=("llir", "ptx"), default="ptx")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--kernel")
    args = parser.parse_args()
    with open(args.file) as f:
        module = parse_module(f.read(), args.file)
    kernel = args.kernel or next(
        op.attributes["sym_name"].value for op in module.walk() if op.name == "func.func"
    )
    lowered = lower_module(module, NvidiaTargetInfo(args.arch, 32), kernel)
    if args.emit == "llir":
        print(lowered.llvm_ir)
        return 0
    ptx = llir_to_ptx(lowered.llvm_ir, args.arch)
    print(ptx)
    if find_ptxas() is not None:
        ptx_to_cubin(ptx, args.arch)
    else:
        print("ptxas not found: the PTX was not assembled", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
