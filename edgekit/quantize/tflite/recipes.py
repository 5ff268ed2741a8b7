"""TFLite int8 recipes (their search: edgekit.quantize.tflite.search): plain (the converter, as edgekit always
did), equalize (cross-layer equalization of the float flatbuffer before calibration), bias (bias correction of
the float flatbuffer for its int8 weights' mean shift: edgekit.quantize.tflite.bias), equalize+bias (both, in
that order), percentile and mse (the calibrated activation ranges replaced by another statistic:
edgekit.quantize.tflite.ranges) and mixed precision (selective quantization: the TFLite quantizer's denylisted
nodes stay float), and the diagnosis by the TFLite quantization debugger.

Every recipe splits the converter's full-integer path as the quantization debugger does: calibrate once (the
float model, or an edited one, run by LiteRT: edgekit.tflite.calibrate), then `mlir_quantize` the calibrated
model as often as candidates need (milliseconds). Float models and calibrations are kept for the whole run
(edgekit.tflite.cache): plain int8 and the Edge TPU's uint8-I/O model share one calibration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.quantize.records import Diagnosis, RecipeChoice

TFLITE_RECIPES = ("plain", "equalize", "equalize+bias", "bias", "bias-shift", "percentile", "mse", "mixed")
# float-free, then mixed precision: ONNX's order (edgekit.quantize.onnx.search) of the recipes TFLite has
AUTO_ORDER = ("plain", "equalize", "equalize+bias", "percentile", "mse", "bias")
# a raw-anchor detector (MediaPipe's palm, face and pose detectors): the activation ranges first. Judged at the 0.5
# cut, its scores need the backbone's early activations rounded finely, which min/max over their outliers does not
# give: on real hands the palm detector's int8 kept 72% of the palms with plain, 70% with equalize, 90% with mse
# (the search's own samples; 31% -> 79% held out), and under the 30 s budget auto never reached mse
ANCHOR_ORDER = ("plain", "mse", "percentile", "equalize", "equalize+bias", "bias")


def auto_order(choice: Any) -> tuple[str, ...]:
    """The order `auto` tries the recipes in for an output decided as CHOICE (a KindChoice, or None)."""
    head = getattr(choice, "head", None)
    return ANCHOR_ORDER if head is not None and getattr(head, "format", None) == "anchors" else AUTO_ORDER
EQUALIZING, BIAS_CORRECTING = ("equalize", "equalize+bias"), ("bias", "equalize+bias")  # what each edits first
LAYER_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "BATCH_MATMUL")
PASS_THROUGH = ("MEAN", "RESHAPE", "MAX_POOL_2D", "AVERAGE_POOL_2D", "RELU", "RELU6", "PAD", "SQUEEZE")
MAX_PROBES = 64  # layer groups whose damage is measured alone (the largest by MACs where there are more)
DIAGNOSIS_SAMPLES = 32  # the debugger runs every op twice per sample; a miss is diagnosed unasked


@dataclass
class TfliteJob:
    """What every TFLite recipe needs: the SavedModel, the calibration samples (its layout), the I/O type."""

    tf: Any
    saved: Path
    signature: str
    samples: np.ndarray
    batch: int
    io_dtype: str  # int8 | uint8 | float32
    work: Path
    log: Callable[[str], None]
    notes: list[str] = field(default_factory=list)
    edgetpu_fixes: bool = False  # rewrite what the Edge TPU cannot map (edgekit.edgetpu.fixes) before calibration
    fixed: bytes | None = None  # the float model with those fixes, where any applied
    # several inputs: each one's samples by signature input key (plain recipe only); samples is the first
    feeds: dict[str, np.ndarray] | None = None
    # the run's folder of float models and calibrations, shared by its TFLite steps (edgekit.tflite.cache)
    cache: Path | None = None
    # what decides a detection output (edgekit.quantize.onnx.search.KindSource), and the decode's ops found from it:
    # on the quantizer's denylist in every recipe (edgekit.quantize.detect_decode)
    kinds: Any = None
    decode: tuple[str, ...] = ()
    # the head's last layers before the decode: float too (TFLite has no float-output int8 conv; the denylist floats
    # the whole op), so the class logits are not rounded before the sigmoid and the 0.25 cut
    decode_heads: tuple[str, ...] = ()
    # a float .tflite given as the source (edgekit.steps.tflite_quantize): the float model, in place of the SavedModel's
    float_tflite: bytes | None = None
    # the tensors holding a raw-anchor head's score logits (its classifier layers and the reshapes and concatenation
    # after them): their calibrated ranges are cut where the sigmoid is flat (edgekit.quantize.tflite.ranges)
    score_logits: tuple[str, ...] = ()
    # the tensors holding its box and keypoint regressors, and the range they are cut to (None: not cut): what the
    # anchors that can become boxes hold on the calibration samples (edgekit.quantize.tflite.ranges.regressor_bound)
    regressors: tuple[str, ...] = ()
    regressor_bound: float | None = None

    def representative(self) -> Iterator[list[np.ndarray] | dict[str, np.ndarray]]:
        for i in range(0, len(self.samples) - self.batch + 1, self.batch):
            if self.feeds:  # by key: the calibrator orders them by the model's own input tensors
                yield {k: v[i:i + self.batch] for k, v in self.feeds.items()}
            else:
                yield [self.samples[i:i + self.batch]]

    def data_key(self) -> str:
        """What identifies this job's calibration data (the samples, or every input's, and the batch)."""
        from edgekit.tflite.cache import samples_digest

        feeds = [self.feeds[k] for k in sorted(self.feeds)] if self.feeds else [self.samples]
        return samples_digest(feeds, self.batch)

    @property
    def io_type(self) -> Any:
        return {"int8": self.tf.int8, "uint8": self.tf.uint8, "float32": self.tf.float32}[self.io_dtype]


def plain(job: TfliteJob) -> bytes:
    """The converter's full-integer model, the requested I/O type: its stages run as edgekit.tflite.cache splits
    them, so the calibration is the run's one (the int8 and the uint8-I/O models share it). Where a DIV's divisor
    would round to zero (edgekit.quantize.tflite.div_guard), the quantizer's own path with that DIV in float."""
    from edgekit.quantize.tflite.div_guard import zero_divisors
    from edgekit.tflite.cache import full_integer

    cal = calibrated(job)
    if zero_divisors(cal):
        return quantized(job, cal)
    return full_integer(job.tf, cal, job.io_type)


def float_model(job: TfliteJob) -> bytes:
    from edgekit.tflite.cache import float_model as converted

    if job.float_tflite is not None:
        return job.float_tflite
    return converted(job.tf, job.saved, job.signature, job.cache)


def calibrated(job: TfliteJob, float_bytes: bytes | None = None) -> bytes:
    """A float model carrying the calibration ranges: of the SavedModel, or of FLOAT_BYTES (an edited model)."""
    from edgekit.tflite.cache import calibrated as with_ranges

    def said(words: str) -> None:  # LiteRT could not measure the ranges: the record says who did
        job.log(words)
        if words not in job.notes:
            job.notes.append(words)

    cal = with_ranges(float_bytes or float_model(job), job.representative, job.data_key(), job.cache, said)
    return saturated_cut(job, cal)


def saturated_cut(job: TfliteJob, cal: bytes) -> bytes:
    """CAL with the ranges of the tensors only a sigmoid or tanh reads cut where it saturates
    (edgekit.quantize.tflite.ranges.cut_saturated_inputs); JOB's notes say which, once."""
    from edgekit.quantize.tflite.ranges import SATURATING, cut_saturated_inputs

    cal, cut = cut_saturated_inputs(cal)
    if cut:
        words = (f"{len(cut)} activation range(s) read only by a sigmoid or tanh cut to where it saturates "
                 f"(+-{SATURATING['LOGISTIC']:g} / +-{SATURATING['TANH']:g}), as its int8 output cannot tell "
                 f"further values apart: {', '.join(cut[:12])}{' ...' if len(cut) > 12 else ''}")
        if words not in job.notes:
            job.notes.append(words)
            job.log(words)
    return cal


def quantized(job: TfliteJob, cal: bytes, denylist: tuple[str, ...] = (), debug: bool = False) -> bytes:
    """The calibrated model quantized, DENYLIST's ops left in float; DEBUG adds the debugger's NumericVerify ops."""
    from tensorflow.lite.python import convert, util

    from edgekit.quantize.tflite.div_guard import words, zero_divisors

    tf = job.tf
    divs = zero_divisors(cal)  # a divisor int8 would round to zero: LiteRT's int8 DIV refuses it at run time
    if divs and (said := words(divs)) not in job.notes:
        job.notes.append(said)
    # a detector's decode and those DIVs: float
    denylist = tuple(dict.fromkeys((*job.decode, *job.decode_heads, *(d.op for d in divs), *denylist)))
    # float I/O with QUANTIZE/DEQUANTIZE at the ends first (fully_quantize would force int8 I/O), then the I/O
    # type asked for set on those ends, as the converter does
    blob = bytes(convert.mlir_quantize(cal, fully_quantize=False, input_data_type=tf.float32,
                                       output_data_type=tf.float32, enable_numeric_verify=debug,
                                       denylisted_nodes=list(denylist) or None))
    io = job.io_type
    # a float decode writes float outputs (boxes in pixels, scores): only the input takes the I/O type
    out = tf.float32 if job.decode else io
    return blob if debug or io == tf.float32 else bytes(util.modify_model_io_type(blob, io, out))


def _write(job: TfliteJob, name: str, blob: bytes) -> Path:
    path = job.work / name
    path.write_bytes(blob)
    return path


def _units(cal_path: Path) -> list[tuple[str, ...]]:
    """Each layer op with the ops back to the layer that feeds it, named by their output tensors."""
    from edgekit.quantize.search import through_silu
    from edgekit.tflite.model import read_tflite

    m = read_tflite(cal_path)
    producer = {t: op for op in m.ops for t in op.outputs}
    out = []
    for op in m.ops:
        if op.op not in LAYER_OPS or not op.outputs:
            continue
        path, prod = [m.tensors[op.outputs[0]].name], producer.get(op.inputs[0])
        while prod is not None:
            if prod.op in PASS_THROUGH:
                path.append(m.tensors[prod.outputs[0]].name)
                prod = producer.get(prod.inputs[0])
            elif silu := through_silu(prod, producer, lambda o: o.op, lambda o: [i for i in o.inputs if i >= 0]):
                path += [m.tensors[prod.outputs[0]].name, m.tensors[silu[0].outputs[0]].name]
                prod = producer.get(silu[1])
            else:
                break
        if prod is not None and prod.op in LAYER_OPS:
            path.append(m.tensors[prod.outputs[0]].name)
        out.append(tuple(reversed(path)))
    return out


def diagnose_tflite(choice: RecipeChoice, x: np.ndarray, inputs: str) -> Diagnosis:
    """The quantization debugger's per-op statistics on X: each op's own error (its float twin fed the same
    int8 inputs), ranked, with the spread of its output channels and its outliers."""
    import tensorflow as tf
    from tensorflow.lite.python import convert

    from edgekit.quantize.diagnose import LayerMeasure, channel_spread, outlier_ratio, rank

    assert choice.float_model is not None
    cal = Path(choice.float_model).read_bytes()
    # the artifact's float ops: mixed precision's, and a detector's decode and float head layers (ranked as the
    # worst "layers" at SQNR 0 dB, quantized here only, the pose detector's diagnosis pointed at ops already float)
    floats = dict.fromkeys((*choice.float_nodes, *choice.config.get("decode_nodes", ()),
                            *choice.config.get("decode_head_nodes", ())))
    debug_model = convert.mlir_quantize(cal, fully_quantize=False, enable_numeric_verify=True,
                                        denylisted_nodes=list(floats) or None)
    xs = x[:DIAGNOSIS_SAMPLES].astype(np.float32)

    def dataset() -> Iterator[list[np.ndarray]]:
        for i in range(len(xs)):
            yield [xs[i:i + 1]]

    # sample by sample in float64, never the whole list concatenated: the debugger hands every sample's tensor
    # of a layer at once, and two float64 copies of them all per metric were most of the diagnosis's memory
    def sums(f: Any, q: Any, scale: float, zp: int, held: bool = False) -> tuple[float, float, float, float]:
        signal = noise = dot = qq = 0.0
        for a, b in zip(f, q, strict=True):
            fv = np.asarray(a, np.float64).ravel()
            qv = (np.asarray(b, np.float64).ravel() - zp) * scale
            if held:  # the float values as the int8 grid can hold them: what a saturating reader still sees
                fv = np.clip(fv, (-128 - zp) * scale, (127 - zp) * scale)
            signal += float(fv @ fv)
            noise += float(((fv - qv) ** 2).sum())
            dot += float(fv @ qv)
            qq += float(qv @ qv)
        return signal, noise, dot, qq

    def sqnr(f: Any, q: Any, scale: float, zp: int, held: bool = False) -> float:
        signal, noise, _, _ = sums(f, q, scale, zp, held)
        return 99.0 if noise <= 0 else float(10 * np.log10(max(signal, 1e-30) / noise))

    def cos(f: Any, q: Any, scale: float, zp: int, held: bool = False) -> float:
        signal, _, dot, qq = sums(f, q, scale, zp, held)
        d = float(np.sqrt(signal) * np.sqrt(qq))
        return dot / d if d > 0 else 1.0

    def spread(f: Any, q: Any, scale: float, zp: int) -> float:
        return channel_spread(np.stack([np.asarray(a) for a in f]), -1) or float("nan")

    def outliers(f: Any, q: Any, scale: float, zp: int) -> float:
        return outlier_ratio(np.stack([np.asarray(a) for a in f])) or float("nan")

    def sqnr_held(f: Any, q: Any, scale: float, zp: int) -> float:
        return sqnr(f, q, scale, zp, True)

    def cos_held(f: Any, q: Any, scale: float, zp: int) -> float:
        return cos(f, q, scale, zp, True)

    opts = tf.lite.experimental.QuantizationDebugOptions(
        layer_direct_compare_metrics={"sqnr": sqnr, "cos": cos, "sqnr_held": sqnr_held, "cos_held": cos_held,
                                      "spread": spread, "outliers": outliers})
    dbg = tf.lite.experimental.QuantizationDebugger(quant_debug_model_content=debug_model, debug_dataset=dataset,
                                                    debug_options=opts)
    dbg.run()
    import csv
    import io

    buf = io.StringIO()
    dbg.layer_statistics_dump(buf)  # one row per op: op_name, tensor_name and every metric above
    # a tensor whose range is cut where the sigmoid or tanh reading it saturates (ranges.cut_saturated_inputs): what
    # the cut drops, its reader could not tell apart, so its error is measured on what the int8 grid holds
    from edgekit.quantize.tflite.ranges import saturating_bounds
    from edgekit.tflite.flatbuffer import FlatModel

    fm = FlatModel(cal)
    saturating = {fm.tensor_name(t) for t in saturating_bounds(fm)}
    measures = []
    for row in csv.DictReader(io.StringIO(buf.getvalue())):
        if row.get("op_name") not in LAYER_OPS:
            continue
        held = "_held" if row["tensor_name"] in saturating else ""
        measures.append(LayerMeasure(
            name=row["tensor_name"], op=row["op_name"], sqnr_db=float(row["sqnr" + held]),
            cosine=float(row["cos" + held]),
            input_sqnr_db=None, act_spread=_finite(row.get("spread")), outlier_ratio=_finite(row.get("outliers"))))
    return rank(measures, "tflite quantization debugger (each op's own error)", len(xs), inputs)


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


def diagnose_int8(choice: RecipeChoice, path: Path, x: np.ndarray, inputs: str) -> Diagnosis:
    """FORMATS' diagnosis of an int8 TFLite (or Edge TPU) artifact: the debugger on the calibrated model CHOICE names
    (PATH, the artifact itself, differs from it only in its I/O types)."""
    return diagnose_tflite(choice, x, inputs)


__all__ = ["ANCHOR_ORDER", "AUTO_ORDER", "BIAS_CORRECTING", "EQUALIZING", "TFLITE_RECIPES", "TfliteJob", "auto_order",
           "diagnose_int8", "diagnose_tflite"]
