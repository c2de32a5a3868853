"""`triton.runtime._allocation` under the alias: `set_allocator` is `tilec.set_allocator`, and
`NullAllocator` is Triton's allocator of no memory (what `set_allocator` resets to), which
raises when called. tilec's kernels that build tensor maps ask the allocator given to
`set_allocator` for their global scratch, and without one use memory of their own (see
`tilec.set_allocator`)."""

from __future__ import annotations

from typing import Any

from tilec import set_allocator


class NullAllocator:
    def __call__(self, size: int, alignment: int, stream: Any) -> Any:
        raise RuntimeError(
            "Kernel requires a runtime memory allocation, but no allocator was set. Use "
            "triton.set_allocator to specify an allocator."
        )


__all__ = ["NullAllocator", "set_allocator"]
