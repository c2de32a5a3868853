"""The AMD architectures tilec compiles for: the one table of their facts."""

from __future__ import annotations

import attrs

from tilec.arch import ArchTable, GpuArch


@attrs.frozen
class AmdArch(GpuArch):
    """A `gfxNNN` architecture: wave64 on CDNA (gfx9), wave32 on RDNA (gfx10+, compiled wave32);
    the LDS is LLVM's addressable local memory size of the arch."""

    family: str = ""

    @property
    def llvm_features(self) -> str:
        return f"+wavefrontsize{self.lanes}"


ARCHS = ArchTable(
    "AMD",
    "amd",
    [
        AmdArch("gfx90a", 64, 64 * 1024, "CDNA2"),
        AmdArch("gfx942", 64, 64 * 1024, "CDNA3"),
        AmdArch("gfx950", 64, 160 * 1024, "CDNA4"),
        AmdArch("gfx1100", 32, 64 * 1024, "RDNA3"),
        AmdArch("gfx1201", 32, 64 * 1024, "RDNA4"),
    ],
    example="gfx942",
    shared_memory_name="LDS (shared memory)",
)
"""CDNA2, CDNA3, CDNA4 (wave64) and RDNA3, RDNA4 (wave32, wave64 left off) architectures."""
