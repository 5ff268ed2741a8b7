"""The timed single-stream loop: the one piece of code that stands between the clock and the runtime.

Each call is timed on its own with perf_counter_ns and the body does nothing else (no bookkeeping
beyond a store into a preallocated list), so the loop adds almost nothing to what it measures;
bench/overhead.py checks this against a bare loop calling the vendor API directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def timed_loop(calls: list[Callable[[], Any]], runs: int, min_seconds: float) -> tuple[list[int], int]:
    """Run CALLS round-robin until RUNS calls and MIN_SECONDS have both passed.

    Returns the per-call durations (ns) and the window's wall time (ns). The loop body is the
    call between two perf_counter_ns reads and a store into a preallocated list: nothing else.
    """
    pc = time.perf_counter_ns
    min_ns = int(min_seconds * 1e9)
    buf = [0] * max(runs, 64)
    n, k = 0, len(calls)
    start = pc()
    # two copies of the loop on purpose: the common single-batch case keeps the round-robin index
    # out of the timed body (bench/overhead.py measures what this loop adds)
    if k == 1:
        call = calls[0]
        while True:
            t0 = pc()
            call()
            t1 = pc()
            buf[n] = t1 - t0
            n += 1
            if n >= runs and t1 - start >= min_ns:
                break
            if n == len(buf):
                buf.extend([0] * n)
    else:
        while True:
            call = calls[n % k]
            t0 = pc()
            call()
            t1 = pc()
            buf[n] = t1 - t0
            n += 1
            if n >= runs and t1 - start >= min_ns:
                break
            if n == len(buf):
                buf.extend([0] * n)
    return buf[:n], pc() - start
