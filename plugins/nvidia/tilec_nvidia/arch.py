"""The NVIDIA architectures tilec compiles for: the one table of their facts.

Besides lanes, shared memory and PTX version, an arch's tensor-core and asynchronous-copy
instructions (`CudaArch.features`) derive from its compute capability and whether it is an
architecture-specific (`a`) target. LLVM aborts the whole process ("LLVM ERROR: Cannot select:
intrinsic ...") on an intrinsic the CPU/PTX pair lacks, so `tilec_nvidia.capabilities` checks each
such intrinsic against these features before it is emitted.

| feature     | instruction                                              | archs              |
|-------------|----------------------------------------------------------|--------------------|
| `ldmatrix`  | `ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16`        | sm_75 and later    |
| `mma_v2`    | `mma.sync.aligned.m16n8k{16,8,32}` (f16/bf16, tf32, s8)  | sm_80 and later    |
| `mma_fp8`   | `mma.sync.aligned.m16n8k32` of `{e4m3,e5m2}` pairs (2)   | sm_89 and later    |
| `cp_async`  | `cp.async.{ca,cg}.shared.global`                         | sm_80 and later    |
| `stmatrix`  | `stmatrix.sync.aligned.m8n8`                             | sm_90 and later    |
| `fp8_cvt`   | `cvt.rn[.satfinite]` between `{e4m3,e5m2}x2` and f32/f16x2 | sm_90 and later (1) |
| `tma`       | `cp.async.bulk.tensor`, `mbarrier` tx counts (PTX 8.0)   | sm_90 and later    |
| `wgmma`     | `wgmma.mma_async`                                        | sm_90a only        |
| `tensormap` | `tensormap.replace`, `tensormap.cp_fenceproxy` (PTX 8.3) | sm_90a only (3)    |

(1) sm_89 has them from PTX ISA 8.1 on; tilec emits PTX 7.8 for sm_89, for which LLVM aborts.
(2) PTX ISA 8.4: a kernel using them asks for it (`tilec_nvidia.tensor_cores.mma`).
(3) PTX ISA 8.3 (`tilec_nvidia.tma_made`); sm_100a has them from PTX 8.6 on, not taken yet.
"""

from __future__ import annotations

from tilec.arch import ArchTable, GpuArch, SmResources

FEATURE_SINCE = {
    "ldmatrix": (7, 5),
    "mma_v2": (8, 0),
    "mma_fp8": (8, 9),
    "cp_async": (8, 0),
    "stmatrix": (9, 0),
    "fp8_cvt": (9, 0),
    "tma": (9, 0),
}
"""The first compute capability with each portable feature."""

ARCH_SPECIFIC_FEATURES = {"wgmma": ("sm_90a",), "tensormap": ("sm_90a",)}
"""Features only these architecture-specific (`a`) archs have."""


class CudaArch(GpuArch):
    """An `sm_XY` architecture; `lanes` is 32 on every one. Its own facts are properties, not
    attrs fields: a launch from the disk cache imports this table, and an attrs subclass costs
    0.5-1 ms to define (attrs generates and compiles its methods)."""

    __slots__ = ()

    @property
    def ptx_version(self) -> int:
        """The oldest PTX ISA the arch accepts, as LLVM's NVPTX.td pairs them (78: PTX ISA 7.8):
        the PTX then loads on the oldest driver that knows the arch."""
        return _PTX_VERSIONS[self.name]

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

    @property
    def features(self) -> frozenset[str]:
        """The tensor-core and asynchronous-copy features (module docstring) the arch has."""
        portable = {name for name, since in FEATURE_SINCE.items() if self.capability >= since}
        specific = {name for name, archs in ARCH_SPECIFIC_FEATURES.items() if self.name in archs}
        return frozenset(portable | specific)


_PTX_VERSIONS: dict[str, int] = {}
"""`CudaArch.ptx_version` by arch name, from the table's rows (`_arch`)."""


def _arch(name: str, shared_kib: int, ptx_version: int, sm: tuple[int, int, int, int]) -> CudaArch:
    sm_kib, reserved_kib, warps, blocks = sm
    resources = SmResources(sm_kib * 1024, reserved_kib * 1024, warps, blocks)
    _PTX_VERSIONS[name] = ptx_version
    return CudaArch(name, 32, shared_kib * 1024, sm=resources)


# What one SM holds: shared memory (KiB), reserved a block (KiB), warps, blocks.
VOLTA, TURING = (96, 0, 64, 32), (64, 0, 32, 16)
A100, GA10X, ORIN, ADA = (164, 1, 64, 32), (100, 1, 48, 16), (164, 1, 48, 16), (100, 1, 48, 24)
HOPPER, BLACKWELL, BLACKWELL_RTX = (228, 1, 64, 32), (228, 1, 64, 32), (100, 1, 48, 32)

ARCHS = ArchTable(
    "NVIDIA",
    "nvidia",
    [
        _arch("sm_70", 96, 60, VOLTA), _arch("sm_75", 64, 63, TURING),
        _arch("sm_80", 163, 70, A100), _arch("sm_86", 99, 71, GA10X),
        _arch("sm_87", 163, 74, ORIN), _arch("sm_89", 99, 78, ADA),
        _arch("sm_90", 227, 78, HOPPER), _arch("sm_90a", 227, 80, HOPPER),
        _arch("sm_100", 227, 86, BLACKWELL), _arch("sm_100a", 227, 86, BLACKWELL),
        _arch("sm_120", 99, 87, BLACKWELL_RTX),
    ],
    example="sm_90",
)  # fmt: skip
"""Compute capabilities we generate PTX for, with the shared memory one block may opt in to, their
PTX ISA version and what one SM holds at once (`SmResources`: its shared memory, the 1 KiB the
system reserves a block from sm_80 on, resident warps and blocks), all from the CUDA C++
Programming Guide's technical specifications per compute capability."""


def device_target(capability: tuple[int, int]) -> str | None:
    """The architecture-specific arch of exactly `capability` (`sm_90a` for 9.0: wgmma exists
    only there; its cubin runs nowhere else), else the newest portable arch whose cubin runs on a
    device of `capability` (same major, minor not above the device's); None where there is none
    (a PTX target below the device then JITs)."""
    specific = [a.name for a in ARCHS if not a.portable and a.capability == capability]
    if specific:
        return specific[0]
    major, minor = capability
    matches = [
        arch.name
        for arch in ARCHS
        if arch.portable and arch.capability[0] == major and arch.capability[1] <= minor
    ]
    return matches[-1] if matches else None
