"""gir -> LLVM IR with `llvmlite.ir`, parameterised by the backend's `TargetInfo`."""
