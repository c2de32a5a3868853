"""Where the cold compile of the vector add goes: run in a fresh process with a fresh cache.

    TILEC_CACHE_DIR=$(mktemp -d) python benchmarks/profile_cold.py [nvidia|interp] [sm_90]

With a target (e.g. sm_90) it compiles without a device and loads nothing.
"""

import cProfile
import pstats
import sys
import time

start = time.perf_counter()
import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402

imported = time.perf_counter()


@tilec.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


backend = sys.argv[1] if len(sys.argv) > 1 else "nvidia"
target = sys.argv[2] if len(sys.argv) > 2 else None
signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
profile = cProfile.Profile()
begin = time.perf_counter()
profile.enable()
compiled = tilec.compile(
    add_kernel,
    signature,
    {"BLOCK_SIZE": 1024},
    backend=backend,
    divisibility=list(signature),
    target=target,
)
if backend == "nvidia" and target is None:
    compiled.backend.load_compiled(compiled)
profile.disable()
done = time.perf_counter()
print(f"import tilec {1e3 * (imported - start):.0f} ms; compile+load {1e3 * (done - begin):.0f} ms")
pstats.Stats(profile).sort_stats("cumulative").print_stats(35)
