"""`tl.extra`: vendor math libraries and extras. `tl.extra.libdevice` (also
`tl.extra.cuda.libdevice`, `tl.extra.hip.libdevice`) holds the libdevice functions that are one
tilec op; docs/triton-names.md lists the others. `tl.extra.cuda` and `tl.extra.hip` add their
vendor's special registers."""

from tilec.language.extra import cuda, hip, libdevice

__all__ = ["cuda", "hip", "libdevice"]
