"""tilec's NVIDIA backend: tile IR -> LLVM IR -> PTX -> cubin, launched through cuda.bindings."""

__version__ = "0.1.0"
