"""Programs in the shape of Triton's tutorials, written here, that import tilec where the
tutorials import triton (`import tilec as triton`, `import tilec.language as tl`) and otherwise
use torch as the tutorials do. `tests/compat/test_compat_tutorials_torch.py` runs each on the
backend under test with torch tensors of `DEVICE` and checks it against torch."""
