"""A paired timer for benchmarks/sweep.py (`--timer paired`, its default): the two sides' launches
timed in one loop, turn about, with one L2 flush and one kind of CUDA event for both.

Timing each side with its own do_bench (tilec.testing's for tilec, Triton's for Triton) one after
the other lets three things that are not the code into the ratio, and on kernels of 15-25 us they
are as large as the gaps asked about (issue 23, H200): the two timers disagree on one torch bf16
8192x1024 copy by up to 7% either way between runs (13.4 against 14.0 us, 14.3 against 13.4, 13.8
against 14.5: the sweep's header, sixth and seventh sessions); the clocks drift between one side's
40 ms and the other's; and each side wrote its own outputs, whose placement alone moved one
kernel by 5% (benchmarks/memory_placement_ab.py, eighth session: layer norm forward 14.67 against
15.50 us on two output sets). Here each repetition flushes L2 (torch's `zero_` of 256 MB, as
Triton's do_bench) and times one side's launch between two CUDA events, then the other's, the
order swapped every repetition, both launches writing the same outputs; each side's time is the
median of its repetitions, as do_bench's `return_mode="median"`. The sweep also chooses each
side's config this way, all candidates of both sides in one loop: timed one side after the other,
the candidates disagreed with the paired final (the attention forward's, tilec's timed first,
read tilec's fastest 3% under Triton's; timed paired, it was 3% over).
"""

from __future__ import annotations

import statistics

FLUSH_BYTES = 256 * 1024 * 1024
"""Triton's do_bench flushes L2 with a 256 MB buffer."""


def paired_bench(launches: dict, warmup_ms: float, rep_ms: float) -> dict:
    """{key: median microseconds} of `launches` ({key: a function that launches}), timed turn
    about: about `warmup_ms` of untimed calls, then about `rep_ms` of timed ones each, the
    order rotated every repetition (two launches: swapped), so that each takes every place in
    the turn equally often."""
    import torch

    sides = list(launches)
    cache = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    for launch in launches.values():
        launch()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        for launch in launches.values():
            cache.zero_()
            launch()
    end.record()
    torch.cuda.synchronize()
    per_side_ms = max(start.elapsed_time(end) / 5 / len(sides), 1e-6)
    for _ in range(max(1, int(warmup_ms / per_side_ms / len(sides)))):
        for launch in launches.values():
            launch()
    count = max(1, int(rep_ms / per_side_ms))
    events = {
        side: [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(count)
        ]
        for side in sides
    }
    for index in range(count):
        shift = index % len(sides)
        for side in sides[shift:] + sides[:shift]:
            cache.zero_()
            begin, finish = events[side][index]
            begin.record()
            launches[side]()
            finish.record()
    torch.cuda.synchronize()
    return {
        side: statistics.median(b.elapsed_time(f) for b, f in events[side]) * 1e3 for side in sides
    }
