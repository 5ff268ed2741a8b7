"""Calibration statistics for int8 activations, from a histogram folded sample by sample: the percentile range and
the MSE range (the clipping range whose int8 quantization, clipping plus rounding, has the least expected squared
error over the calibration data: TensorRT's, AIMET's and NNCF's MSE calibration).

Shared by the ONNX `mse` recipe (the histogram fed by onnxruntime's calibrator, edgekit.quantize.onnx.mse) and the
TFLite `percentile` and `mse` recipes (fed by LiteRT's float intermediates, edgekit.quantize.tflite.ranges). Pure
numpy: memory is BINS counts per tensor, whatever the number of samples.

The error model (Banner et al., "Post-training 4-bit quantization", NeurIPS 2019, ACIQ): a range [lo, hi] holding 0
quantizes with step s = (hi - lo) / 255; a value inside it is off by the rounding error, s^2 / 12 on average; one
outside it by its distance to the range (the clipping error, each bin's mass at its centre). Exact zeros are
counted apart: zero is exact on every int8 grid edgekit's quantizers make (the zero point), so a ReLU's zeros cost
nothing, where counting them as rounding noise would pull the range down.
"""

from __future__ import annotations

import numpy as np

BINS = 2048  # per tensor; the span doubles (pairs of bins merged) when a larger value comes
LEVELS = 255  # int8 / uint8 steps across an activation's range (asymmetric, zero point free)
GRID = 384  # candidate ends per side, geometric from MIN_FRACTION of the largest value up to it
MIN_FRACTION = 1e-3


class Histogram:
    """One tensor's values, folded batch by batch: the extremes, the exact zeros, and BINS bins over [-t, t]."""

    def __init__(self, bins: int = BINS) -> None:
        if bins % 4:
            raise ValueError("bins must be a multiple of 4")
        self.counts = np.zeros(bins, np.int64)
        self.t = 0.0
        self.zeros = 0
        self.lo, self.hi = np.inf, -np.inf

    def add(self, values: np.ndarray) -> None:
        a = np.asarray(values, np.float32).ravel()
        a = a[np.isfinite(a)]
        if a.size == 0:
            return
        self.lo, self.hi = min(self.lo, float(a.min())), max(self.hi, float(a.max()))
        nz = a[a != 0]
        self.zeros += a.size - nz.size
        if nz.size == 0:
            return
        m = float(np.abs(nz).max())
        if self.t == 0.0:
            self.t = m
        while m > self.t:  # twice the span: bins 2k and 2k+1 become one, in the middle half
            q = len(self.counts) // 4
            merged = np.zeros_like(self.counts)
            merged[q:3 * q] = self.counts.reshape(-1, 2).sum(1)
            self.counts, self.t = merged, self.t * 2
        self.counts += np.histogram(nz, len(self.counts), range=(-self.t, self.t))[0]

    @property
    def total(self) -> int:
        return int(self.counts.sum()) + self.zeros

    def edges(self) -> np.ndarray:
        return np.linspace(-self.t, self.t, len(self.counts) + 1)

    def centres(self) -> np.ndarray:
        e = self.edges()
        return (e[:-1] + e[1:]) / 2


def _with_zero(lo: float, hi: float) -> tuple[float, float]:
    return min(lo, 0.0), max(hi, 0.0)


def percentile_range(h: Histogram, percentile: float = 99.999) -> tuple[float, float]:
    """The range clipping (100 - PERCENTILE)% of the values, half on each side (zeros counted), within the extremes."""
    if h.total == 0:
        return 0.0, 0.0
    half = len(h.counts) // 2
    cut = (100.0 - percentile) / 200.0 * h.total
    e = h.edges()
    below = np.cumsum(h.counts[:half])  # the negative bins, from the most negative
    k = int(np.searchsorted(below, cut, side="right"))
    lo = float(e[k]) if k < half else 0.0
    above = np.cumsum(h.counts[half:][::-1])  # the positive bins, from the largest
    k = int(np.searchsorted(above, cut, side="right"))
    hi = float(e[len(e) - 1 - k]) if k < half else 0.0
    return _with_zero(max(lo, h.lo), min(hi, h.hi))


def expected_error(h: Histogram, lo: np.ndarray, hi: np.ndarray, levels: int = LEVELS) -> np.ndarray:
    """Mean squared int8 error per value of the histogram's data for ranges [LO, HI] (broadcast), LO <= 0 <= HI."""
    n = h.counts.astype(np.float64)
    c = h.centres()
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)  # the tails are per end: broadcast at the sum

    def tail(ends: np.ndarray, sign: float) -> tuple[np.ndarray, np.ndarray]:
        """(mass beyond each end, its squared distance to the end) on the side of SIGN, by suffix sums."""
        x = sign * c  # the side's values as positive distances from 0, largest last after sorting
        order = np.argsort(x, kind="stable")
        xs, ns = x[order], n[order]
        s0, s1, s2 = (np.concatenate([np.cumsum((ns * xs ** p)[::-1])[::-1], [0.0]]) for p in (0, 1, 2))
        k = np.searchsorted(xs, sign * ends, side="right")  # first value beyond the end
        e = sign * ends
        return s0[k], s2[k] - 2 * e * s1[k] + e * e * s0[k]

    above, clip_hi = tail(hi, 1.0)
    below, clip_lo = tail(lo, -1.0)
    inside = n.sum() - above - below
    step = (hi - lo) / levels
    return (clip_hi + clip_lo + inside * step * step / 12.0) / max(h.total, 1)


def _candidates(end: float) -> np.ndarray:
    if end == 0.0:
        return np.zeros(1)
    return end * np.geomspace(MIN_FRACTION, 1.0, GRID)


def mse_range(h: Histogram, levels: int = LEVELS) -> tuple[float, float]:
    """The range [lo, hi] (holding 0) of least expected int8 error over the histogram: every pair of candidate ends."""
    if h.total == 0 or h.counts.sum() == 0:
        return _with_zero(h.lo if h.total else 0.0, h.hi if h.total else 0.0)
    lo_max, hi_max = _with_zero(h.lo, h.hi)
    los, his = _candidates(lo_max), _candidates(hi_max)
    err = expected_error(h, los[:, None], his[None, :], levels)
    i, j = np.unravel_index(int(np.argmin(err)), err.shape)
    return float(los[i]), float(his[j])


__all__ = ["BINS", "Histogram", "expected_error", "mse_range", "percentile_range"]
