"""wgmma's matrix descriptors: each operand's descriptor is made once a dot (its shared-memory
address's 16-byte units masked to the start field, the layout fields or'ed in), and each
wgmma's sub-matrix adds its constant offset in 16-byte units to it, one 64-bit add as Triton's
(`UIADD3.64` in its SASS) instead of the address arithmetic, shift, mask and or again per
wgmma: 33 fewer SASS instructions a loop iteration in a 128x128x64 matmul, 65-70 in the
attention backward's at head dim 128. The CPU wgmma emulator (test_lower_wgmma_emulated.py,
test_attention_bwd_sm90.py) decodes the descriptors and checks the products."""

from __future__ import annotations

import re

from test_lower_pipeline import compiled, tutorial_kernel

from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec_nvidia.target_info import NvidiaTargetInfo


def test_each_wgmma_adds_its_offset_to_the_operands_descriptor():
    kernel = compiled(tutorial_kernel, 3, blocks=(128, 128, 64), target="sm_90a")
    module = parse_module(kernel.asm["gir"], "k.gir")
    llvm_ir = lower_module(
        module, NvidiaTargetInfo("sm_90a", 32), kernel.metadata["kernel"]
    ).llvm_ir
    assert llvm_ir.count("wgmma.mma_async") == 8  # two 64-row halves, four k-steps of 16
    # the start field is masked twice (A and B), not once per wgmma operand, in 32 bits as
    # Triton's (the 64-bit address arithmetic cost a loop 2-5 uniform instructions)
    assert len(re.findall(r"= and i32 .*, 16383\b", llvm_ir)) == 2
    assert not re.findall(r"= and i64 .*, 16383\b", llvm_ir)
    assert not re.findall(r"ptrtoint ptr addrspace\(3\) \S+ to i64", llvm_ir)
    offsets = [int(c) for c in re.findall(r"= add i64 %\S+, (\d+)\b", llvm_ir)]
    assert {2, 4, 6} <= set(offsets)  # A's k-steps: 32 bytes each, in 16-byte units
