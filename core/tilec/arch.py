"""GPU architectures as data: each GPU backend has one `ArchTable`, the one source of its arch facts.

An entry (`GpuArch`) names the architecture as LLVM's CPU name (`sm_90`, `gfx942`) and gives the
facts the layouts, the lowering, the code generation and the driver read: lanes a warp
(wavefront), the shared memory (LDS) a block may use and the LLVM features to compile with.
Vendors subclass `GpuArch` for their own facts (PTX version, compute capability); `SmResources`
says what one SM holds at once (shared memory, warps, blocks), where a backend knows it.

`ArchTable.check` is the one place an arch name is validated: LLVM aborts the whole process on an
unknown CPU name, so code generation looks the name up here before any LLVM call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

import attrs


@attrs.frozen
class SmResources:
    """What one streaming multiprocessor (compute unit) holds at once, shared by the blocks
    resident on it: the limits that decide how many blocks of a kernel run on it together
    (NVIDIA's occupancy: CUDA C++ Programming Guide, "Technical Specifications per Compute
    Capability")."""

    shared_memory_bytes: int
    """The shared memory of the SM, all its resident blocks together (228 KiB on sm_90)."""
    reserved_shared_bytes: int = 0
    """The shared memory the system reserves for each resident block (1 KiB from sm_80 on)."""
    max_warps: int = 64
    """Warps resident at once."""
    max_blocks: int = 32
    """Blocks resident at once."""

    def blocks(self, num_warps: int, shared_bytes: int) -> int:
        """The blocks of `num_warps` warps and `shared_bytes` of shared memory each that the
        SM holds at once as far as shared memory and warps go (registers aside: ptxas decides
        them after the compile's layout passes): 0 where one does not fit."""
        need = shared_bytes + self.reserved_shared_bytes
        by_shared = self.shared_memory_bytes // need if need else self.max_blocks
        return max(0, min(by_shared, self.max_warps // max(num_warps, 1), self.max_blocks))


@attrs.frozen
class GpuArch:
    """What tilec knows about one GPU architecture."""

    name: str
    """LLVM's CPU name, also the backend's `target` option value."""
    lanes: int
    """Threads of a warp (wavefront)."""
    shared_memory_bytes: int
    """The shared memory (LDS) one block (work-group) may use."""
    sm: SmResources | None = attrs.field(default=None, kw_only=True)
    """What one SM (compute unit) holds at once, where the backend knows it (None: unknown);
    the layout passes read it through `LayoutRules.sm`."""

    @property
    def llvm_features(self) -> str:
        """The LLVM target features to compile for this architecture."""
        return ""


Arch = TypeVar("Arch", bound=GpuArch)


class ArchTable(Generic[Arch]):
    """The architectures a backend compiles for, by name, in their listed order."""

    def __init__(
        self,
        vendor: str,
        backend: str,
        archs: Iterable[Arch],
        *,
        example: str,
        shared_memory_name: str = "shared memory",
    ):
        self.vendor = vendor
        self.backend = backend
        self._archs = {arch.name: arch for arch in archs}
        self.names = tuple(self._archs)
        self.example = example
        """An arch to name in messages (`pass target='sm_90'`)."""
        self.shared_memory_name = shared_memory_name
        """What the vendor calls shared memory, in messages."""

    def check(self, name: str) -> Arch:
        """The entry of `name`, else a ValueError listing the choices."""
        arch = self._archs.get(name)
        if arch is None:
            raise ValueError(
                f"unsupported {self.vendor} target {name!r}; choose one of "
                f"{', '.join(self.names)} (the `target` option of the {self.backend} backend)"
            )
        return arch

    def get(self, name: str) -> Arch | None:
        return self._archs.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._archs

    def __iter__(self) -> Iterator[Arch]:
        return iter(self._archs.values())

    def __len__(self) -> int:
        return len(self._archs)
