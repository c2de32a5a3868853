"""`tl.extra.hip.memrealtime()` on AMD (`s_memrealtime`; gfx11 and gfx12: the
`MSG_RTN_GET_REALTIME` message), assembled into a code object; `tl.extra.cuda`'s NVIDIA registers
are refused there, located."""

from __future__ import annotations

import re

import pytest

import tilec
import tilec.language as tl
from tilec.frontend import CompilationError


@tilec.jit
def memrealtime_kernel(out_ptr):
    tl.store(out_ptr, tl.extra.hip.memrealtime())


@tilec.jit
def smid_kernel(out_ptr):
    tl.store(out_ptr, tl.extra.cuda.smid())


@pytest.mark.parametrize(
    ("target", "instruction"),
    [("gfx942", r"s_memrealtime s\[\d+:\d+\]"),
     ("gfx1100", r"s_sendmsg_rtn_b64 s\[\d+:\d+\], sendmsg\(MSG_RTN_GET_REALTIME\)")],
)  # fmt: skip
def test_memrealtime(private_cache, target, instruction):
    compiled = tilec.compile(memrealtime_kernel, {"out_ptr": "*i64"}, {}, backend="amd",
                             target=target)  # fmt: skip
    assert re.search(instruction, compiled.asm["amdgcn"])
    assert compiled.asm.get("hsaco")


def test_nvidia_registers_are_refused_on_amd(private_cache):
    with pytest.raises(CompilationError, match=r"smid\(\) reads an NVIDIA GPU register"):
        tilec.compile(smid_kernel, {"out_ptr": "*i32"}, {}, backend="amd", target="gfx942")
