"""tilec-hostcpu: an example backend plugin for a made-up vendor whose "GPU" is the host CPU.

It compiles kernels through tilec's layouts (gir) and LLVM lowering (llir) for 16-lane (or
8-lane) "warps", generates x86-64 machine code with llvmlite for a fixed CPU (never the host's),
and runs it in this process, every thread of a block a fiber (`tilec_hostcpu.fibers`). Copy it
to start a backend of your own: `docs/backend-guide.md` walks through it.
"""

__version__ = "0.1.0"
