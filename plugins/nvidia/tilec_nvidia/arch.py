"""The NVIDIA architectures tilec compiles for: the one table of their facts."""

from __future__ import annotations

import attrs

from tilec.arch import ArchTable, GpuArch


@attrs.frozen
class CudaArch(GpuArch):
    """An `sm_XY` architecture; `lanes` is 32 on every one."""

    ptx_version: int = 0
    """The oldest PTX ISA the arch accepts, as LLVM's NVPTX.td pairs them (78: PTX ISA 7.8): the
    PTX then loads on the oldest driver that knows the arch."""

    @property
    def llvm_features(self) -> str:
        return f"+ptx{self.ptx_version}"

    @property
    def capability(self) -> tuple[int, int]:
        """The compute capability: (9, 0) for `sm_90` and `sm_90a`."""
        digits = "".join(c for c in self.name.removeprefix("sm_") if c.isdigit())
        return int(digits[:-1]), int(digits[-1])

    @property
    def portable(self) -> bool:
        """Whether its cubin runs on later minor versions (not an `a` arch such as `sm_90a`)."""
        return not self.name.endswith("a")


def _arch(name: str, shared_kib: int, ptx_version: int) -> CudaArch:
    return CudaArch(name, 32, shared_kib * 1024, ptx_version)


ARCHS = ArchTable(
    "NVIDIA",
    "nvidia",
    [
        _arch("sm_70", 96, 60), _arch("sm_75", 64, 63), _arch("sm_80", 163, 70),
        _arch("sm_86", 99, 71), _arch("sm_87", 163, 74), _arch("sm_89", 99, 78),
        _arch("sm_90", 227, 78), _arch("sm_90a", 227, 80), _arch("sm_100", 227, 86),
        _arch("sm_100a", 227, 86), _arch("sm_120", 99, 87),
    ],
    example="sm_90",
)  # fmt: skip
"""Compute capabilities we generate PTX for, with the shared memory one block may opt in to
(CUDA programming guide) and their PTX ISA version."""


def device_target(capability: tuple[int, int]) -> str | None:
    """The newest portable arch whose cubin runs on a device of `capability` (same major, minor
    not above the device's); None where there is none (a PTX target below the device then JITs)."""
    major, minor = capability
    matches = [
        arch.name
        for arch in ARCHS
        if arch.portable and arch.capability[0] == major and arch.capability[1] <= minor
    ]
    return matches[-1] if matches else None
