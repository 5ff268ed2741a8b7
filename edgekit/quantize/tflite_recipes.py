"""TFLite int8 recipes and their search: plain (the converter, as edgekit always did), equalize (cross-layer
equalization of the float flatbuffer before calibration) and mixed precision (selective quantization:
the TFLite quantizer's denylisted nodes stay float), and the diagnosis by the TFLite quantization debugger.

The converter's own path calibrates and quantizes in one call; the other recipes split it as the
quantization debugger does: calibrate once (`_experimental_calibrate_only`, or the calibrator on an
edited float model), then `mlir_quantize` the calibrated model as often as candidates need (milliseconds).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.quantize.records import Diagnosis, RecipeChoice, RecipeTrial
from edgekit.quantize.search import Judged, best, float_sets, judge, macs_fraction, say, trial
from edgekit.quantize.tflite_run import run_tflite

TFLITE_RECIPES = ("plain", "equalize", "mixed")
AUTO_ORDER = ("plain", "equalize")
LAYER_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "BATCH_MATMUL")
PASS_THROUGH = ("MEAN", "RESHAPE", "MAX_POOL_2D", "AVERAGE_POOL_2D", "RELU", "RELU6", "PAD", "SQUEEZE")
MAX_PROBES = 24
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

    def converter(self) -> Any:
        return self.tf.lite.TFLiteConverter.from_saved_model(str(self.saved), signature_keys=[self.signature])

    def representative(self) -> Iterator[list[np.ndarray] | dict[str, np.ndarray]]:
        for i in range(0, len(self.samples) - self.batch + 1, self.batch):
            if self.feeds:  # by key: the calibrator orders them by the model's own input tensors
                yield {k: v[i:i + self.batch] for k, v in self.feeds.items()}
            else:
                yield [self.samples[i:i + self.batch]]

    @property
    def io_type(self) -> Any:
        return {"int8": self.tf.int8, "uint8": self.tf.uint8, "float32": self.tf.float32}[self.io_dtype]


def plain(job: TfliteJob) -> bytes:
    """The converter's full-integer model: TFLITE_BUILTINS_INT8 only, the requested I/O type."""
    tf = job.tf
    converter = job.converter()
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = job.representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = job.io_type
    converter.inference_output_type = job.io_type
    return bytes(converter.convert())


def float_model(job: TfliteJob) -> bytes:
    return bytes(job.converter().convert())


def calibrated(job: TfliteJob, float_bytes: bytes | None = None) -> bytes:
    """A float model carrying the calibration ranges: of the SavedModel, or of FLOAT_BYTES (an edited model)."""
    if float_bytes is not None:
        from tensorflow.lite.python.optimize import calibrator

        return bytes(calibrator.Calibrator(float_bytes).calibrate(job.representative))
    tf = job.tf
    converter = job.converter()
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = job.representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8, tf.lite.OpsSet.TFLITE_BUILTINS]
    converter._experimental_calibrate_only = True  # noqa: SLF001 - the debugger's own split of convert()
    return bytes(converter.convert())


def quantized(job: TfliteJob, cal: bytes, denylist: tuple[str, ...] = (), debug: bool = False) -> bytes:
    """The calibrated model quantized, DENYLIST's ops left in float; DEBUG adds the debugger's NumericVerify ops."""
    from tensorflow.lite.python import convert, util

    tf = job.tf
    # float I/O with QUANTIZE/DEQUANTIZE at the ends first (fully_quantize would force int8 I/O), then the I/O
    # type asked for set on those ends, as the converter does
    blob = bytes(convert.mlir_quantize(cal, fully_quantize=False, input_data_type=tf.float32,
                                       output_data_type=tf.float32, enable_numeric_verify=debug,
                                       denylisted_nodes=list(denylist) or None))
    io = job.io_type
    return blob if debug or io == tf.float32 else bytes(util.modify_model_io_type(blob, io, io))


def _write(job: TfliteJob, name: str, blob: bytes) -> Path:
    path = job.work / name
    path.write_bytes(blob)
    return path


class _Search:
    def __init__(self, job: TfliteJob) -> None:
        from edgekit.tflite_model import read_tflite

        self.job = job
        ref_path = _write(job, "float.tflite", float_model(job))
        self.y_ref = run_tflite([ref_path], job.samples)[0]
        if self.y_ref is None:
            raise RuntimeError("the float TFLite model did not run on the calibration samples")
        fm = read_tflite(ref_path)
        self.macs = {fm.tensors[op.outputs[0]].name: fm.op_macs(op) for op in fm.ops if op.outputs}
        self.kept: list[tuple[Judged, int, tuple[str, bytes, tuple[str, ...], Path | None]]] = []
        self.trials: list[RecipeTrial] = []

    def judge_many(self, cands: list[tuple[str, bytes, tuple[str, ...], Path | None]]) -> int | None:
        """Judge CANDS (label, model, float nodes, calibrated model); index of the first that passes, or None."""
        t0 = time.perf_counter()
        paths = [_write(self.job, f"candidate-{len(self.kept) + i}.tflite", c[1]) for i, c in enumerate(cands)]
        ys = run_tflite(paths, self.job.samples)
        first = None
        for (label, blob, nodes, cal), y, path in zip(cands, ys, paths, strict=True):
            path.unlink(missing_ok=True)
            judged = judge(self.y_ref, y) if y is not None else Judged(False, float("nan"), None,
                                                                       ["LiteRT could not run it"])
            self.trials.append(trial(label, judged, len(nodes), macs_fraction(nodes, self.macs), t0))
            self.kept.append((judged, len(nodes), (label, blob, nodes, cal)))
            say(self.job.log, label, judged, len(nodes))
            if judged.passed and first is None:
                first = len(self.kept) - 1
        return first

    def recipe(self, name: str) -> int | None:
        if name == "plain" and self.job.fixed is None:
            return self.judge_many([("plain", plain(self.job), (), None)])
        if name == "plain":  # the fixed float model, calibrated and quantized as the converter would
            cal_path = _write(self.job, "plain.calibrated.tflite", calibrated(self.job, self.job.fixed))
            return self.judge_many([("plain", quantized(self.job, cal_path.read_bytes()), (), cal_path)])
        from edgekit.quantize.tflite_equalize import equalize_tflite

        edited, words = equalize_tflite(self.job.fixed or float_model(self.job), self.job.samples)
        self.job.notes.append(words)
        cal = calibrated(self.job, edited)
        cal_path = _write(self.job, "equalize.calibrated.tflite", cal)
        return self.judge_many([("equalize", quantized(self.job, cal), (), cal_path)])

    def mixed(self) -> int | None:
        """Selective quantization on the best float-free candidate's calibration: probe, rank, grow."""
        from edgekit.quantize.diagnose import sqnr_db

        k = best([(j, n, r) for j, n, r in self.kept])
        _, _, (base, _, _, cal_path) = self.kept[k]
        if cal_path is None:
            cal_path = _write(self.job, "plain.calibrated.tflite", calibrated(self.job))
        cal = cal_path.read_bytes()
        units = _units(cal_path)
        if len(units) > MAX_PROBES:
            units = sorted(units, key=lambda u: -sum(self.macs.get(n, 0) for n in u))[:MAX_PROBES]
        base_y = run_tflite([_write(self.job, "base.tflite", quantized(self.job, cal))], self.job.samples)[0]
        paths = [_write(self.job, f"probe-{i}.tflite", quantized(self.job, cal, u)) for i, u in enumerate(units)]
        ys = run_tflite(paths, self.job.samples)
        base_db = sqnr_db(self.y_ref, base_y) if base_y is not None else -99.0
        gains = sorted(((sqnr_db(self.y_ref, y) - base_db if y is not None else -99.0, u)
                        for y, u in zip(ys, units, strict=True)), key=lambda g: -g[0])
        for p in paths:
            p.unlink(missing_ok=True)
        self.job.log(f"int8 mixed precision: probed {len(units)} layer groups on {base}; most rewarding: "
                     + ", ".join(f"{len(u)} ops ending {u[-1]} ({g:+.1f} dB)" for g, u in gains[:3]))
        ranked = [u for g, u in gains if g > 0]
        cands = [(f"mixed[{base}]", quantized(self.job, cal, nodes), nodes, cal_path)
                 for nodes in float_sets(ranked, self.macs)]
        return self.judge_many(cands) if cands else None


def _units(cal_path: Path) -> list[tuple[str, ...]]:
    """Each layer op with the ops back to the layer that feeds it, named by their output tensors."""
    from edgekit.tflite_model import read_tflite

    m = read_tflite(cal_path)
    producer = {t: op for op in m.ops for t in op.outputs}
    out = []
    for op in m.ops:
        if op.op not in LAYER_OPS or not op.outputs:
            continue
        path, prod = [m.tensors[op.outputs[0]].name], producer.get(op.inputs[0])
        while prod is not None and prod.op in PASS_THROUGH:
            path.append(m.tensors[prod.outputs[0]].name)
            prod = producer.get(prod.inputs[0])
        if prod is not None and prod.op in LAYER_OPS:
            path.append(m.tensors[prod.outputs[0]].name)
        out.append(tuple(reversed(path)))
    return out


def quantize_tflite(job: TfliteJob, requested: str, float_free: bool = False) -> tuple[bytes, RecipeChoice]:
    """The int8 model by the recipe REQUESTED (or auto), and the record of how it was chosen."""
    if requested not in ("auto", *TFLITE_RECIPES):
        job.notes.append(f"recipe '{requested}' exists for ONNX only; TFLite used auto's recipes instead")
        requested = "auto"
    if requested == "mixed" and float_free:
        job.notes.append("mixed precision leaves layers in float, which the Edge TPU cannot run: not tried")
    fixes = _edgetpu_fixes(job) if job.edgetpu_fixes else None
    s = _Search(job)
    names = AUTO_ORDER if requested == "auto" else ("plain",) if requested == "mixed" else (requested,)
    pick = None
    for name in names:
        pick = s.recipe(name)
        if pick is not None:
            break
    if pick is None and requested in ("auto", "mixed") and not float_free:
        pick = s.mixed()
    met = pick is not None
    if pick is None:
        pick = best([(j, n, r) for j, n, r in s.kept])
        job.log("int8: no recipe met the thresholds on the calibration samples; keeping the best, "
                f"{s.trials[pick].recipe}")
    _, _, (label, blob, nodes, cal_path) = s.kept[pick]
    if cal_path is None:  # the diagnosis re-quantizes a calibrated twin with the debugger's checks
        cal_path = _write(job, "plain.calibrated.tflite", calibrated(job))
    t = s.trials[pick]
    if fixes is not None and fixes.get("applied"):
        fixes["preflight_after"] = _preflight_counts(job, blob)
        job.log(f"Edge TPU fixes: {fixes['words']}; predicted ops on the TPU {_counts_words(fixes['preflight_before'])}"
                f" -> {_counts_words(fixes['preflight_after'])}")
    return blob, RecipeChoice(
        requested=requested, chosen=label, config={"recipe": label.split(" ")[0], "denylisted_nodes": list(nodes),
                                                   "io_dtype": job.io_dtype},
        met=met, judged_on=f"{len(job.samples)} calibration samples against the fp32 TFLite model",
        float_nodes=nodes, macs_float_fraction=t.macs_float_fraction, trials=tuple(s.trials),
        notes=tuple(dict.fromkeys(job.notes)), float_model=str(cal_path), edgetpu_fixes=fixes)


def _edgetpu_fixes(job: TfliteJob) -> dict[str, Any]:
    """Apply the Edge TPU graph fixes to the float model (job.fixed); the pre-flight of plain int8 without them."""
    from edgekit.edgetpu.fixes import apply_fixes

    fixed, report = apply_fixes(float_model(job))
    out: dict[str, Any] = {"applied": dict(report.applied), "words": report.words()}
    if report.applied:
        job.fixed = fixed
        out["preflight_before"] = _preflight_counts(job, plain(job))
    return out


def _preflight_counts(job: TfliteJob, blob: bytes) -> dict[str, Any]:
    from edgekit.edgetpu.preflight import preflight

    pf = preflight(_write(job, "preflight.tflite", blob))
    return {"ops_on_tpu": pf.ops_on_tpu, "ops_total": pf.ops_total, "macs_on_tpu_fraction": pf.macs_on_tpu_fraction}


def _counts_words(c: dict[str, Any]) -> str:
    return f"{c['ops_on_tpu']} of {c['ops_total']}"


def diagnose_tflite(choice: RecipeChoice, x: np.ndarray, inputs: str) -> Diagnosis:
    """The quantization debugger's per-op statistics on X: each op's own error (its float twin fed the same
    int8 inputs), ranked, with the spread of its output channels and its outliers."""
    import tensorflow as tf
    from tensorflow.lite.python import convert

    from edgekit.quantize.diagnose import LayerMeasure, channel_spread, outlier_ratio, rank

    assert choice.float_model is not None
    cal = Path(choice.float_model).read_bytes()
    debug_model = convert.mlir_quantize(cal, fully_quantize=False, enable_numeric_verify=True,
                                        denylisted_nodes=list(choice.float_nodes) or None)
    xs = x[:DIAGNOSIS_SAMPLES].astype(np.float32)

    def dataset() -> Iterator[list[np.ndarray]]:
        for i in range(len(xs)):
            yield [xs[i:i + 1]]

    def sqnr(f: Any, q: Any, scale: float, zp: int) -> float:
        fv = np.concatenate([np.asarray(a, np.float64).ravel() for a in f])
        qv = (np.concatenate([np.asarray(a, np.float64).ravel() for a in q]) - zp) * scale
        noise = float(((fv - qv) ** 2).sum())
        return 99.0 if noise <= 0 else float(10 * np.log10(max(float((fv ** 2).sum()), 1e-30) / noise))

    def cos(f: Any, q: Any, scale: float, zp: int) -> float:
        fv = np.concatenate([np.asarray(a, np.float64).ravel() for a in f])
        qv = (np.concatenate([np.asarray(a, np.float64).ravel() for a in q]) - zp) * scale
        d = float(np.linalg.norm(fv) * np.linalg.norm(qv))
        return float(fv @ qv / d) if d > 0 else 1.0

    def spread(f: Any, q: Any, scale: float, zp: int) -> float:
        return channel_spread(np.stack([np.asarray(a) for a in f]), -1) or float("nan")

    def outliers(f: Any, q: Any, scale: float, zp: int) -> float:
        return outlier_ratio(np.stack([np.asarray(a) for a in f])) or float("nan")

    opts = tf.lite.experimental.QuantizationDebugOptions(
        layer_direct_compare_metrics={"sqnr": sqnr, "cos": cos, "spread": spread, "outliers": outliers})
    dbg = tf.lite.experimental.QuantizationDebugger(quant_debug_model_content=debug_model, debug_dataset=dataset,
                                                    debug_options=opts)
    dbg.run()
    import csv
    import io

    buf = io.StringIO()
    dbg.layer_statistics_dump(buf)  # one row per op: op_name, tensor_name and every metric above
    measures = []
    for row in csv.DictReader(io.StringIO(buf.getvalue())):
        if row.get("op_name") not in LAYER_OPS:
            continue
        measures.append(LayerMeasure(
            name=row["tensor_name"], op=row["op_name"], sqnr_db=float(row["sqnr"]), cosine=float(row["cos"]),
            input_sqnr_db=None, act_spread=_finite(row.get("spread")), outlier_ratio=_finite(row.get("outliers"))))
    return rank(measures, "tflite quantization debugger (each op's own error)", len(xs), inputs)


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


__all__ = ["AUTO_ORDER", "TFLITE_RECIPES", "TfliteJob", "diagnose_tflite", "quantize_tflite"]
