"""`tl.extra.cuda`: the CUDA names of `tl.extra.libdevice`."""

from tilec.language.extra import libdevice

__all__ = ["libdevice"]
