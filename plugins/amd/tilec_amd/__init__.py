"""tilec's AMD backend: tile IR -> LLVM IR -> AMDGCN -> hsaco, launched through HIP."""

__version__ = "0.1.0"
