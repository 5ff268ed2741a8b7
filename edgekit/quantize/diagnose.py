"""Layer-by-layer float vs int8: which layers lose the most, and what usually fixes each pattern.

Shared by both formats: `rank` turns per-layer measurements into ranked `LayerDiagnosis` records
with a pattern and a fix; `edgekit.quantize.onnx.diagnose` and `edgekit.quantize.tflite.recipes`
measure (onnxruntime intermediate tensors; the TFLite quantization debugger).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgekit.quantize.records import Diagnosis, LayerDiagnosis

ACT_SPREAD = 20.0  # one input channel this many times wider than the median one: equalization's case
WEIGHT_SPREAD = 50.0
OUTLIERS = 4.0  # max |x| this many times the 99.9th percentile: MinMax spends the range on rare values
TOP = 10  # layers kept in the record
INPUT_DB = 48.0  # about the SQNR of an 8-bit quantized signal (6.02 dB per bit)


@dataclass
class LayerMeasure:
    name: str
    op: str
    sqnr_db: float
    cosine: float
    input_sqnr_db: float | None  # None: the layer reads the model input (or its own error is measured alone)
    act_spread: float | None = None
    weight_spread: float | None = None
    outlier_ratio: float | None = None


def sqnr_db(f: np.ndarray, q: np.ndarray) -> float:
    """10 log10(|f|^2 / |f - q|^2); 99 dB where they are equal."""
    f64, q64 = f.astype(np.float64).ravel(), q.astype(np.float64).ravel()
    noise = float(((f64 - q64) ** 2).sum())
    signal = float((f64 ** 2).sum())
    if noise <= 0:
        return 99.0
    return float(10 * np.log10(max(signal, 1e-30) / noise))


def cosine(f: np.ndarray, q: np.ndarray) -> float:
    a, b = f.astype(np.float64).ravel(), q.astype(np.float64).ravel()
    d = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / d) if d > 0 else 1.0


def channel_spread(x: np.ndarray, axis: int) -> float | None:
    """Largest per-channel max |x| over the median one (None for fewer than 2 channels)."""
    if x.ndim < 2 or x.shape[axis] < 2:
        return None
    r = np.abs(np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)).max(axis=1)
    med = float(np.median(r))
    return float(r.max() / med) if med > 0 else None


def outlier_ratio(x: np.ndarray) -> float | None:
    a = np.abs(x.astype(np.float64)).ravel()
    if a.size < 1000:
        return None
    p = float(np.percentile(a, 99.9))
    return float(a.max() / p) if p > 0 else None


def _pattern(m: LayerMeasure) -> tuple[str, str]:
    if m.act_spread is not None and m.act_spread >= ACT_SPREAD:
        return ("channel ranges differ widely",
                "cross-layer equalization (--int8-recipe equalize) rescales the channels so one int8 scale fits all")
    if m.outlier_ratio is not None and m.outlier_ratio >= OUTLIERS:
        return ("rare outlier activations",
                "a clipping calibration statistic (--int8-recipe percentile or entropy) spends the range on the bulk")
    if m.weight_spread is not None and m.weight_spread >= WEIGHT_SPREAD:
        return ("weight ranges differ across channels",
                "per-channel weights are used already; equalization (--int8-recipe equalize) evens the rest")
    return ("sensitive layer", "keep it in float (--int8-recipe mixed; not for Edge TPU, which needs every op int8)")


def rank(measures: list[LayerMeasure], method: str, samples: int, inputs: str) -> Diagnosis:
    """Rank layers by the error each one adds (input SQNR minus output SQNR), worst first."""
    layers = []
    for m in measures:
        # an input above what 8 bits can carry (8-bit pixels are exact: 140 dB) counts as INPUT_DB, or the first
        # layer would seem to lose 100 dB
        # the debugger feeds each op float inputs (input_sqnr_db None): what it loses is from an exact input, as the
        # first layer's is (it printed "lost -11.2 dB", minus the SQNR, and the accumulation test below saw no noise)
        added = (min(m.input_sqnr_db, INPUT_DB) - m.sqnr_db if m.input_sqnr_db is not None
                 else max(INPUT_DB - m.sqnr_db, 0.0))
        pattern, fix = _pattern(m)
        layers.append(LayerDiagnosis(
            name=m.name, op=m.op, sqnr_db=round(m.sqnr_db, 2), cosine=round(m.cosine, 5), added_db=round(added, 2),
            act_spread=_r(m.act_spread), weight_spread=_r(m.weight_spread), outlier_ratio=_r(m.outlier_ratio),
            pattern=pattern, fix=fix))
    if all(m.input_sqnr_db is None for m in measures):  # each layer's own error (debugger): lowest SQNR first
        layers.sort(key=lambda d: d.sqnr_db)
    else:
        layers.sort(key=lambda d: -d.added_db)
    final = measures[-1] if measures else None
    patterns = [d.pattern for d in layers[:3]]
    common = max(set(patterns), key=patterns.count) if patterns else "none"
    summary = (f"int8 diagnosis ({method}, {samples} {inputs} samples): {len(measures)} quantized layers"
               + (f", last layer SQNR {final.sqnr_db:.1f} dB" if final else "")
               + (f"; worst: {layers[0].name} ({layers[0].pattern})" if layers else "")
               + (f"; most common among the worst 3: {common}" if layers else ""))
    noise = [max(added_noise(d.sqnr_db, d.sqnr_db + d.added_db), 0.0) for d in layers]
    if len(noise) >= 8 and sum(noise) > 0 and max(noise) / sum(noise) < 0.2:
        summary += (f"; the error accumulates over many layers (the worst adds {max(noise) / sum(noise):.0%} of it): "
                    "no single layer to fix, so equalization and a few float layers help little; "
                    "quantization-aware training or a wider model is the usual way out")
    return Diagnosis(method=method, samples=samples, inputs=inputs, layers=tuple(layers[:TOP]),
                     layers_total=len(measures), summary=summary)


def added_noise(sqnr_out: float, sqnr_in: float) -> float:
    """Noise-to-signal power a layer adds: 10^(-out/10) - 10^(-in/10). A layer reading an exact input
    (144 dB: 8-bit pixels) and giving 38 dB adds less than one going from 30 dB to 25 dB."""
    return float(10 ** (-sqnr_out / 10) - 10 ** (-min(sqnr_in, 99.0) / 10))


def _r(v: float | None) -> float | None:
    return None if v is None or not np.isfinite(v) else round(float(v), 2)


__all__ = ["LayerMeasure", "added_noise", "channel_spread", "cosine", "outlier_ratio", "rank", "sqnr_db"]
