"""The TFLite `percentile` and `mse` recipes: the calibrated model's activation ranges replaced by a statistic of
the float model's activations, before `mlir_quantize`.

The converter's calibrator records each activation's min and max (MinMax, with no other statistic to choose) in
the tensor's QuantizationParameters, and the quantizer reads nothing else. So: run the float model on the
calibration samples with LiteRT (experimental_preserve_all_tensors keeps every intermediate readable after an
invoke), fold each ranged tensor into a fixed-size histogram sample by sample (edgekit.quantize.calib_stats:
memory does not grow with the samples), and write the statistic's range into the calibrated flatbuffer in place
of min/max. Weights keep their own ranges (the quantizer takes those from the weights). Nothing is left in float,
so both recipes are fit for the Edge TPU.

A raw-anchor detector's two outputs get ranges by what their decoder reads, in every recipe: the score logits cut
where the sigmoid is flat (`cut_logit_ranges`), the box and keypoint regressors to what the anchors that can become
boxes hold (`regressor_bound`, `cut_regressor_ranges`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from edgekit.quantize.calib_stats import Histogram, mse_range, percentile_range
from edgekit.tflite.flatbuffer import FlatModel

STATISTICS = ("percentile", "mse")
PERCENTILE = 99.999  # as onnxruntime's Percentile calibration


def _ranged(fm: FlatModel) -> dict[str, int]:
    """Activation tensors whose calibrated range is one min and one max, by name."""
    out = {}
    for k, t in enumerate(fm.sg.tensors):
        q = t.quantization
        if q is None or q.min is None or q.max is None or len(q.min) != 1 or len(q.max) != 1:
            continue
        if fm.const(k) is None and t.type == 0:  # float32 activations only: constants keep their ranges
            out[fm.tensor_name(k)] = k
    return out


def activation_histograms(float_bytes: bytes, names: Iterable[str],
                          batches: Iterator[Any]) -> dict[str, Histogram]:
    """NAMES' values in the float model FLOAT_BYTES over BATCHES (as the calibrator is fed), one histogram each."""
    import sys

    from edgekit.runtimes.litert_io import interpreter_class

    cls = interpreter_class()
    # no default delegate (XNNPACK): the ops it takes over would not leave their intermediates to read (as the
    # TFLite quantization debugger runs its models)
    plain = sys.modules[cls.__module__].OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = cls(model_content=float_bytes, experimental_op_resolver_type=plain, experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    index = {d["name"]: d["index"] for d in it.get_tensor_details()}
    wanted = {n: index[n] for n in names if n in index}
    inputs = it.get_input_details()
    hists = {n: Histogram() for n in wanted}
    for batch in batches:  # a list in the model's input order (the recipes past plain take one input)
        for d, a in zip(inputs, batch, strict=True):
            it.set_tensor(d["index"], np.asarray(a, d["dtype"]))
        it.invoke()
        for n, k in wanted.items():
            hists[n].add(it.get_tensor(k))
    return hists


def rewrite_ranges(cal_bytes: bytes, ranges: dict[str, tuple[float, float]]) -> tuple[bytes, int]:
    """CAL_BYTES with the per-tensor min/max of the activations named in RANGES replaced; (model, how many)."""
    fm = FlatModel(cal_bytes)
    done = 0
    for name, k in _ranged(fm).items():
        if name not in ranges:
            continue
        lo, hi = ranges[name]
        q = fm.sg.tensors[k].quantization
        q.min, q.max = np.array([lo], np.float32), np.array([hi], np.float32)
        done += 1
    return fm.to_bytes(), done


def with_statistic(cal_bytes: bytes, float_bytes: bytes, statistic: str,
                   batches: Iterator[Any]) -> tuple[bytes, str]:
    """The calibrated model CAL_BYTES with STATISTIC's activation ranges (measured on FLOAT_BYTES, the model it was
    calibrated from, over BATCHES); and words saying what changed."""
    if statistic not in STATISTICS:
        raise ValueError(f"unknown calibration statistic {statistic!r}")
    names = list(_ranged(FlatModel(cal_bytes)))
    hists = activation_histograms(float_bytes, names, batches)
    pick: Any = mse_range if statistic == "mse" else (lambda h: percentile_range(h, PERCENTILE))
    ranges = {n: pick(h) for n, h in hists.items() if h.total}
    blob, done = rewrite_ranges(cal_bytes, ranges)
    narrowed = sum(1 for n, (lo, hi) in ranges.items() if lo > min(hists[n].lo, 0.0) or hi < max(hists[n].hi, 0.0))
    what = "the least-squared-error range" if statistic == "mse" else f"the {PERCENTILE} percentile range"
    return blob, f"{statistic}: {done} activation ranges set to {what} of the float model's values ({narrowed} " \
                 "narrower than min/max)"


# where a sigmoid is flat: |logit| >= 16 gives a score within 1.2e-7 of 0 or 1 (MediaPipe's decoders clip at 100)
LOGIT_BOUND = 16.0


def cut_logit_ranges(cal_bytes: bytes, names: Iterable[str], bound: float = LOGIT_BOUND) -> tuple[bytes, int]:
    """CAL_BYTES with the calibrated ranges of the score logits NAMES cut to [-BOUND, BOUND]; (model, how many cut).

    Why: a raw-anchor detector's logits run far below the sigmoid's flat end (MediaPipe's pose detector: -385 to
    0.36 on photos), and an int8 scale over that range is a step of 1.5 logits, which moves a score at the 0.5 cut
    by up to 0.19 (the int8 pose detector kept 7.5% of the float model's anchors over 0.5). Cut at +-16 the step is
    0.06 at most, and what the cut saturates, a score under 1.2e-7 (or over 1 - 1.2e-7), no decoder tells apart.
    Where the head's last layers stay float (a CPU target) the cut changes nothing they compute; on an
    integer-only target (the Edge TPU) it is what keeps the scores."""
    return _cut(cal_bytes, names, bound)


# an anchor whose float logit is under this (a score under 0.018) is not one int8 moves to the 0.5 cut
REGRESSOR_FLOOR = -4.0
REGRESSOR_MARGIN = 1.25  # over the largest regressor value of those anchors on the calibration samples


# Past these inputs a saturating op's int8 output no longer changes: an int8 LOGISTIC writes steps of 1/256, so any
# input beyond -6.3 or +5.2 gives the same output as -8 or +8 (a float LOGISTIC moves by under 3.4e-4 past +-8); an
# int8 TANH writes steps of 1/128 (beyond +-3.1 the same; a float one moves by under 6.7e-4 past +-4)
SATURATING = {"LOGISTIC": 8.0, "TANH": 4.0}


def cut_saturated_inputs(cal_bytes: bytes) -> tuple[bytes, list[str]]:
    """CAL_BYTES with the calibrated range of every tensor read only by a LOGISTIC or TANH (not a graph output) cut to
    where that op saturates (SATURATING), and so of the tensors that reach it only through an ADD of a constant (a
    bias the rewrite of MediaPipe's Convolution2DTransposeBias leaves as its own ADD); (model, the tensors cut).

    Why: a segmenter's mask logits run far past the sigmoid's flat ends (MediaPipe's selfie segmenter: about -1,150
    to 440 on real photos), and an int8 scale over that range is a step of 6.25 logits: the mask's 0.5 cut then moves
    by up to 3 logits, and its int8 model kept a mask IoU of 0.81 with the float one. Cut at +-8 the step is 0.063,
    and every value the cut saturates gives the int8 op's output it gave before. A tensor the user reads (a graph
    output) keeps its range: its values are the user's, not only the sigmoid's."""
    fm = FlatModel(cal_bytes)
    done = []
    for t, (lo, hi) in saturating_bounds(fm).items():
        q = fm.sg.tensors[t].quantization
        old_lo, old_hi = float(q.min[0]), float(q.max[0])
        new_lo, new_hi = min(max(old_lo, lo), 0.0), max(min(old_hi, hi), 0.0)
        if new_lo > old_lo or new_hi < old_hi:
            q.min, q.max = np.array([new_lo], np.float32), np.array([new_hi], np.float32)
            done.append(fm.tensor_name(t))
    return (fm.to_bytes() if done else cal_bytes), done


def saturating_bounds(fm: FlatModel) -> dict[int, tuple[float, float]]:
    """The calibrated tensors of FM only a LOGISTIC or TANH reads (directly, or through ADDs of a constant), by
    index, each with the range past which that op saturates (SATURATING)."""
    ranged = set(_ranged(fm).values())
    bounds: dict[int, tuple[float, float]] = {}
    for k in range(len(fm.sg.operators)):
        bound = SATURATING.get(fm.name(k))
        if bound is None:
            continue
        t = int(fm.sg.operators[k].inputs[0])
        lo, hi = -bound, bound
        while t >= 0 and t in ranged and fm.only_reader(t) is not None:
            old = bounds.get(t, (lo, hi))
            bounds[t] = (min(old[0], lo), max(old[1], hi))
            t, lo, hi = _through_constant_add(fm, t, lo, hi)
    return bounds


def _through_constant_add(fm: FlatModel, t: int, lo: float, hi: float) -> tuple[int, float, float]:
    """The tensor whose only reader is the ADD that writes T with a float constant, and the range it needs for T to
    hold [LO, HI]; (-1, LO, HI) where T is not so written."""
    k = fm.producer.get(t)
    if k is None or fm.name(k) != "ADD":
        return -1, lo, hi
    a, b = (int(i) for i in fm.sg.operators[k].inputs[:2])
    for x, c in ((a, b), (b, a)):
        v = fm.const(c)
        if v is not None and fm.const(x) is None and v.size and np.isfinite(v).all():
            return x, lo - float(v.max()), hi - float(v.min())
    return -1, lo, hi


def regressor_bound(regressors: np.ndarray, logits: np.ndarray, floor: float = REGRESSOR_FLOOR,
                    margin: float = REGRESSOR_MARGIN) -> float | None:
    """The range a raw-anchor head's REGRESSORS (N, A, D) need: MARGIN times their largest magnitude at the anchors
    whose score LOGITS (N, A, C) pass FLOOR on any class; None where no anchor does (nothing to size it by).

    Why: a detector's regressors at anchors it scores near 0 are never decoded into a box, and there they can be
    huge: MediaPipe's short-range face detector writes up to 10,529 (pixels of its 128 px input) at such anchors on
    real photos while the anchors it scores over 0.5 stay within 84. Calibrated over every anchor, one int8 step of
    its regressors (both levels share it through their concatenation) was 60 px: its Edge TPU model kept 14% of the
    faces. Sized by the anchors that can become boxes, the step is about 1 px."""
    r = np.abs(np.asarray(regressors, dtype=np.float64)).reshape(len(regressors), -1, regressors.shape[-1])
    s = np.asarray(logits, dtype=np.float64).reshape(len(logits), r.shape[1], -1).max(axis=-1)
    live = s > floor
    if not live.any() or not np.isfinite(r[live]).all():
        return None
    top = float(r[live].max())
    return margin * top if top > 0 else None


def cut_regressor_ranges(cal_bytes: bytes, names: Iterable[str], bound: float) -> tuple[bytes, int]:
    """CAL_BYTES with the calibrated ranges of a raw-anchor head's regressor tensors NAMES cut to [-BOUND, BOUND]
    (`regressor_bound`); (model, how many cut)."""
    return _cut(cal_bytes, names, bound)


def _cut(cal_bytes: bytes, names: Iterable[str], bound: float) -> tuple[bytes, int]:
    """CAL_BYTES with the ranges of the activations NAMES narrowed to [-BOUND, BOUND], each still holding 0."""
    fm = FlatModel(cal_bytes)
    wanted = set(names)
    done = 0
    for name, k in _ranged(fm).items():
        if name not in wanted:
            continue
        q = fm.sg.tensors[k].quantization
        lo, hi = float(q.min[0]), float(q.max[0])
        if lo >= -bound and hi <= bound:
            continue
        q.min = np.array([min(max(lo, -bound), 0.0)], np.float32)
        q.max = np.array([max(min(hi, bound), 0.0)], np.float32)
        done += 1
    return (fm.to_bytes() if done else cal_bytes), done


__all__ = ["LOGIT_BOUND", "REGRESSOR_FLOOR", "REGRESSOR_MARGIN", "SATURATING", "STATISTICS", "activation_histograms",
           "cut_logit_ranges", "cut_regressor_ranges", "cut_saturated_inputs", "regressor_bound", "rewrite_ranges",
           "saturating_bounds", "with_statistic"]
