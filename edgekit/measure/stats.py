"""Latency statistics of a timed window: the `latency_ms` object of a ProfileResult."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgekit.core.records import Record


@dataclass
class LatencyStats(Record):
    """Milliseconds per call: p50/p90/p99, mean, std (n-1), min, max, and the number of calls N."""

    p50: float
    p90: float
    p99: float
    mean: float
    std: float
    min: float
    max: float
    n: int


def latency_stats(ns: list[int] | np.ndarray) -> LatencyStats:
    """Percentiles by linear interpolation between order statistics (numpy's default), from nanoseconds."""
    a = np.asarray(ns, dtype=np.float64) / 1e6
    if a.size == 0:
        raise ValueError("no timings")
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return LatencyStats(p50=float(p50), p90=float(p90), p99=float(p99), mean=float(a.mean()),
                        std=float(a.std(ddof=1)) if a.size > 1 else 0.0, min=float(a.min()), max=float(a.max()),
                        n=int(a.size))
