"""`tile.print`, `tile.assert`, `tile.barrier`: vprintf calls with Triton's device_print format,
one line per element from its owner, a trap behind the failed-assert branch; on the CPU, printing
through the C library's `printf`."""

from __future__ import annotations

import ctypes
import ctypes.util
import re

import cpu_emulator
import numpy as np
from gir_check import module, ptx_of
from llvmlite import ir

from tilec.lowering import lower_module
from tilec_nvidia.target_info import NvidiaTargetInfo


class PrintingHostTarget(cpu_emulator.HostTargetInfo):
    """The emulator's target with `printf` from the C library."""

    def printf(self, builder, module, fmt, args) -> None:
        data = bytearray(fmt.encode() + b"\0")
        text_type = ir.ArrayType(ir.IntType(8), len(data))
        text = ir.GlobalVariable(module, text_type, module.get_unique_name("fmt"))
        text.global_constant = True
        text.initializer = ir.Constant(text_type, data)
        printf = module.globals.get("printf") or ir.Function(
            module, ir.FunctionType(ir.IntType(32), [ir.PointerType()], var_arg=True), "printf"
        )
        builder.call(printf, [builder.bitcast(text, ir.PointerType()), *args])


def test_print_assert_and_barrier_lower_to_vprintf_trap_and_bar_sync():
    ptx = ptx_of("debug.gir")
    assert ptx.count("vprintf") >= 3 and "trap;" in ptx and "bar.sync" in ptx
    lowered = lower_module(module("debug.gir"), NvidiaTargetInfo(), "debug")
    assert 'c"pid (%u, %u, %u) idx (%u, %u) x: %f %d\\0a\\00"' in lowered.llvm_ir
    assert "debug.gir:36:3: assertion failed in program (%u, %u, %u) idx" in lowered.llvm_ir


def test_print_gives_one_line_per_element_from_its_owner(capfd):
    mod = module("debug.gir")
    lowered = lower_module(mod, PrintingHostTarget(), "debug")
    address = cpu_emulator.compile_kernel(lowered.llvm_ir, lowered.name)
    x = np.arange(8, dtype=np.float32) / 4
    cpu_emulator.launch(address, lowered.params, [x, 7], (2,), 128)
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.fflush(None)
    lines = capfd.readouterr().out.splitlines()
    elements = sorted(line for line in lines if " idx " in line)
    assert len(elements) == 2 * 8  # two programs, 2x4 elements, replicas silent
    assert "pid (1, 0, 0) idx (1, 2) x: 1.500000 6" in elements
    scalars = [line for line in lines if "n = " in line]
    assert sorted(scalars) == ["pid (0, 0, 0) n = 7", "pid (1, 0, 0) n = 7"]
    assert all(re.fullmatch(r"pid \(\d, 0, 0\) idx \(\d, \d\) x: \S+ \d", e) for e in elements)
