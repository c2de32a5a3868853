"""Lower a gir file for the AMD golden tests: `lower_amd.py FILE.gir --emit llir|amdgcn
[--arch gfx942]`.

Prints the LLVM IR or the AMDGCN assembly (with its `.amdgpu_metadata` block) of the file's
first kernel (or `--kernel NAME`). A test helper, not a tool: `tilec compile` is the user's way
to these stages.
"""

from __future__ import annotations

import argparse
import sys

import tilec.dialects  # noqa: F401  (registers the ops for the parser)
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec_amd.arch import ARCHS
from tilec_amd.codegen import llir_to_amdgcn
from tilec_amd.target_info import AmdTargetInfo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--emit", choices=("llir", "amdgcn"), default="amdgcn")
    parser.add_argument("--arch", default="gfx942")
    parser.add_argument("--kernel")
    args = parser.parse_args()
    arch = ARCHS.check(args.arch)
    with open(args.file) as f:
        module = parse_module(f.read(), args.file)
    kernel = args.kernel or next(
        op.attributes["sym_name"].value for op in module.walk() if op.name == "func.func"
    )
    lowered = lower_module(module, AmdTargetInfo(arch.name, arch.lanes), kernel)
    print(lowered.llvm_ir if args.emit == "llir" else llir_to_amdgcn(lowered.llvm_ir, arch.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
