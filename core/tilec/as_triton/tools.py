"""`triton.tools` and `triton.tools.tensor_descriptor` under the alias: Triton's host-side
`TensorDescriptor` is tilec's own (`tilec.tools.tensor_descriptor`): built and checked as Triton
builds it, and taken by a kernel parameter as Triton takes it (base pointer, shape and strides
at run time; dtype, block shape and padding compiled in), on every backend."""

from __future__ import annotations

from tilec.tools.tensor_descriptor import TensorDescriptor

__path__: list[str] = []
"""A package to the import system: `tilec.as_triton.finder` answers its submodules."""

__all__ = ["TensorDescriptor"]
