"""`tl.extra`: vendor math libraries. `tl.extra.libdevice` (also `tl.extra.cuda.libdevice`)
holds the libdevice functions that are one tilec op; docs/triton-names.md lists the others."""

from tilec.language.extra import cuda, libdevice

__all__ = ["cuda", "libdevice"]
