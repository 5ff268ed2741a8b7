"""A float ONNX and its QDQ twin compared tensor by tensor in bounded memory.

The int8 diagnosis (edgekit.quantize.onnx.diagnose) reads, for every Conv/Gemm/MatMul, the tensor it
writes and the one it reads in both models. Holding those tensors for every sample at once took PP-OCR's
recogniser to 5.0 GB and its detector to 6.0 GB on 32 samples (about 200 MB of intermediates per sample
in each model), past the model zoo's 4 GB cap (issue 15). Here both models run on a chunk of samples at
a time, sized so that the exposed tensors of one chunk stay under CHUNK_BYTES, and each statistic is
folded chunk by chunk into sums that give the same figures as the whole arrays would:
SQNR and cosine from float64 sums of squares and products, the channel spread from running per-channel
maxima, and the outlier ratio's 99.9th percentile from the largest values only (the percentile of N
values depends on the top 0.1% of them, kept as they come).

onnx and onnxruntime are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

CHUNK_BYTES = 256 * 1024 * 1024  # exposed tensors of one chunk, float and QDQ together
OUTLIER_Q = 99.9  # the percentile edgekit.quantize.diagnose.outlier_ratio divides the maximum by
OUTLIER_MIN_SIZE = 1000  # fewer values than this: no outlier ratio (as diagnose.outlier_ratio)


@dataclass
class PairSums:
    """Running sums of a float tensor F and its int8 twin Q over chunks: |f|^2, |q|^2, f.q, |f-q|^2."""

    ff: float = 0.0
    qq: float = 0.0
    fq: float = 0.0
    noise: float = 0.0
    same_shape: bool = True

    def add(self, f: np.ndarray, q: np.ndarray) -> None:
        if f.shape != q.shape:
            self.same_shape = False
            return
        a, b = f.astype(np.float64).ravel(), q.astype(np.float64).ravel()
        d = a - b
        self.ff += float(a @ a)
        self.qq += float(b @ b)
        self.fq += float(a @ b)
        self.noise += float(d @ d)

    def sqnr_db(self) -> float:
        """10 log10(|f|^2 / |f - q|^2); 99 dB where they are equal (as edgekit.quantize.diagnose.sqnr_db)."""
        if self.noise <= 0:
            return 99.0
        return float(10 * np.log10(max(self.ff, 1e-30) / self.noise))

    def cosine(self) -> float:
        d = float(np.sqrt(self.ff) * np.sqrt(self.qq))
        return float(self.fq / d) if d > 0 else 1.0


@dataclass
class ChannelMax:
    """Per-channel max |x| along AXIS over chunks; the spread is the widest channel over the median one."""

    axis: int = 1
    peak: np.ndarray | None = None

    def add(self, x: np.ndarray) -> None:
        if x.ndim < 2 or x.shape[self.axis] < 2:
            return
        r = np.abs(np.moveaxis(x, self.axis, 0).reshape(x.shape[self.axis], -1)).max(axis=1)
        self.peak = r if self.peak is None else np.maximum(self.peak, r)

    def spread(self) -> float | None:
        """As edgekit.quantize.diagnose.channel_spread on the whole array."""
        if self.peak is None:
            return None
        med = float(np.median(self.peak))
        return float(self.peak.max() / med) if med > 0 else None


@dataclass
class TopAbs:
    """The largest |x| of a tensor seen in chunks, enough of them for the exact OUTLIER_Q percentile of all.

    TOTAL is how many values there will be in all (per-sample size times samples); numpy's linear
    percentile of TOTAL sorted values interpolates between positions floor(h) and floor(h) + 1 with
    h = (TOTAL - 1) q, so only the TOTAL - floor(h) largest values matter.
    """

    total: int
    kept: np.ndarray = field(default_factory=lambda: np.empty(0, np.float64))

    @property
    def h(self) -> float:
        return (self.total - 1) * float(np.true_divide(OUTLIER_Q, 100))

    @property
    def keep(self) -> int:
        return self.total - int(np.floor(self.h))

    def add(self, x: np.ndarray) -> None:
        a = np.concatenate([self.kept, np.abs(x.astype(np.float64)).ravel()])
        k = min(self.keep, a.size)
        self.kept = np.partition(a, a.size - k)[a.size - k:] if k < a.size else a

    def ratio(self) -> float | None:
        """max |x| over the OUTLIER_Q percentile of |x| (as edgekit.quantize.diagnose.outlier_ratio)."""
        if self.total < OUTLIER_MIN_SIZE or self.kept.size == 0:
            return None
        top = np.sort(self.kept)
        lo = int(np.floor(self.h))
        t = self.h - lo
        a, b = top[0], top[1] if top.size > 1 else top[0]
        p = float(b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t)  # numpy's _lerp
        return float(top[-1] / p) if p > 0 else None


@dataclass
class LayerStats:
    """One layer's float vs int8 figures, folded over every chunk."""

    out: PairSums = field(default_factory=PairSums)
    inp: PairSums = field(default_factory=PairSums)
    act: ChannelMax = field(default_factory=ChannelMax)
    top: TopAbs | None = None
    input_ndim: int = 0


def compare_layers(float_model: Any, qdq_model: Any, pairs: Sequence[tuple[tuple[str, str], tuple[str, str]]],
                   x: np.ndarray, chunk_bytes: int | None = None) -> list[LayerStats]:
    """For each ((float input, float output), (qdq input, qdq output)) tensor-name pair of PAIRS, the figures of
    the QDQ model's tensors against the float model's on every sample of X, run a chunk at a time."""
    from edgekit.quantize.onnx.graph import run_batches, session, with_outputs

    f_names = list(dict.fromkeys(t for (fi, fo), _ in pairs for t in (fi, fo)))
    q_names = list(dict.fromkeys(t for _, (qi, qo) in pairs for t in (qi, qo)))
    f_sess = session(with_outputs(float_model, f_names), optimize=False)
    q_sess = session(with_outputs(qdq_model, q_names), optimize=False)
    stats = [LayerStats() for _ in pairs]
    i, step = 0, 1  # the first chunk is one sample: its tensors' bytes size the rest
    while i < len(x):
        chunk = x[i:i + step]
        f_vals = dict(zip(f_names, run_batches(f_sess, chunk, f_names, len(chunk)), strict=True))
        q_vals = dict(zip(q_names, run_batches(q_sess, chunk, q_names, len(chunk)), strict=True))
        for s, ((fi, fo), (qi, qo)) in zip(stats, pairs, strict=True):
            f_in, f_out = f_vals[fi], f_vals[fo]
            s.out.add(f_out, q_vals[qo])
            s.inp.add(f_in, q_vals[qi])
            s.input_ndim = f_in.ndim
            if f_in.ndim >= 2:
                s.act.add(f_in)
            if s.top is None:
                s.top = TopAbs(total=int(f_out[:1].size) * len(x))
            s.top.add(f_out)
        if i == 0:
            per_sample = sum(v[:1].nbytes for v in (*f_vals.values(), *q_vals.values()))
            step = max(1, (chunk_bytes or CHUNK_BYTES) // max(per_sample, 1))
        i += len(chunk)
        del f_vals, q_vals
    return stats


__all__ = ["CHUNK_BYTES", "ChannelMax", "LayerStats", "PairSums", "TopAbs", "compare_layers"]
