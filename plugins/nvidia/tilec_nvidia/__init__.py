"""tilec's NVIDIA backend: tile IR -> LLVM IR -> PTX -> cubin, launched through the CUDA driver."""

__version__ = "0.1.0"
