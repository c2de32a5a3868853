"""Random kernel generation (`generate`), its NumPy model (`program`), the checks that run a
kernel on the interpreter, through every backend's code generation or on a device (`check`), the
shrinker that reduces a failing kernel (`shrink`) and campaigns (`campaign`, `tilec fuzz`)."""
