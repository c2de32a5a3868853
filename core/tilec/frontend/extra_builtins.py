"""`tl.extra.cuda`'s and `tl.extra.hip`'s functions (Triton 3.6's `language/extra/{cuda,hip}`),
mixed into `Builtins`: the special registers as Triton reads them, through
`tl.inline_asm_elementwise` (`tilec.frontend.inline_asm`), and the compile's `num_warps`.

A register of one vendor is refused, located, on every other backend: the interpreter has none
(Triton's interpreter refuses the inline assembly too). `num_warps()` and `num_threads()` are
compile-time constants on every backend (Triton's interpreter has no `num_warps` option; tilec's
interp has one, so the reference runs them).
"""

from __future__ import annotations

from typing import Any

from tilec.frontend.errors import UserError
from tilec.frontend.inline_asm import inline_asm_elementwise
from tilec.language import int32, int64
from tilec.language import target_info as targets

CUDA_THREADS_PER_WARP = 32
"""Triton's `tl.extra.cuda.num_threads()` is `num_warps * 32`."""


def _require(backend: str, what: str, since: int | None = None) -> Any:
    """The compile's target, which must be `backend` ("cuda", "hip"), at least `since` (the
    CUDA compute capability x10); else a located error naming `what` and the target."""
    target = targets.current_target()
    vendor = {"cuda": "NVIDIA", "hip": "AMD"}[backend]
    if target is None or target.backend != backend:
        if target is None or target.backend == "interp":
            why = "the interpreter has none (Triton's interpreter cannot run it either)"
        else:
            why = f"the target is {target.backend} ({target.arch})"
        raise UserError(
            f"{what} reads an {vendor} GPU register: {why}",
            f"compile it for the {'nvidia' if backend == 'cuda' else 'amd'} backend, or leave "
            "it out there (tl.target_info.is_cuda() / is_hip() tell the target at compile time)",
        )
    if since is not None and int(target.arch) < since:
        raise UserError(
            f"{what} needs compute capability {since // 10}.{since % 10} or later; the target "
            f"is {target.arch // 10}.{target.arch % 10}",
            "compile it for a newer target, or leave it out there",
        )
    return target


class ExtraBuiltinsMixin:
    """Mixed into `Builtins`: `tl.extra.cuda.*` as `tl_cuda_*`, `tl.extra.hip.*` as `tl_hip_*`."""

    def _asm(self, text: str, constraint: str, dtype: Any, pure: bool) -> Any:
        return inline_asm_elementwise(self, text, constraint, [], dtype, pure, 1)

    def tl_cuda_globaltimer(self) -> Any:
        _require("cuda", "tl.extra.cuda.globaltimer()")
        return self._asm("mov.u64 $0, %globaltimer;", "=l", int64, pure=False)

    def tl_cuda_smid(self) -> Any:
        _require("cuda", "tl.extra.cuda.smid()")
        return self._asm("mov.u32 $0, %smid;", "=r", int32, pure=True)

    def tl_cuda_num_warps(self) -> int:
        return _num_warps("tl.extra.cuda.num_warps()")

    def tl_cuda_num_threads(self) -> int:
        return _num_warps("tl.extra.cuda.num_threads()") * CUDA_THREADS_PER_WARP

    def tl_cuda_gdc_wait(self) -> None:
        _require("cuda", "tl.extra.cuda.gdc_wait()", since=90)
        self._asm("griddepcontrol.wait; // $0", "=r", int32, pure=False)

    def tl_cuda_gdc_launch_dependents(self) -> None:
        _require("cuda", "tl.extra.cuda.gdc_launch_dependents()", since=90)
        self._asm("griddepcontrol.launch_dependents; // $0", "=r", int32, pure=False)

    def tl_hip_memrealtime(self) -> Any:
        target = _require("hip", "tl.extra.hip.memrealtime()")
        if str(target.arch).startswith(("gfx11", "gfx12")):
            text = "s_sendmsg_rtn_b64 $0, sendmsg(MSG_RTN_GET_REALTIME)\ns_waitcnt lgkmcnt(0)"
        else:
            text = "s_memrealtime $0\ns_waitcnt lgkmcnt(0)"
        return self._asm(text, "=s", int64, pure=False)


def _num_warps(what: str) -> int:
    warps = targets.compile_num_warps()
    if warps is None:
        raise UserError(
            f"{what} is the compile's num_warps, which this compile does not have",
            "compile through a launch or tilec.compile",
        )
    return warps


__all__ = ["ExtraBuiltinsMixin"]
