"""The TFLite w8a16 precision: int8 weights, int16 activations (TFLite's "16x8" full-integer mode), float I/O.

What the converter does for `target_spec.supported_ops = [EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]`
(tensorflow/lite/python/lite.py `_quantize`): 16-bit activations are not made by the MLIR quantizer the int8
recipes use (`mlir_quantize`), but by the calibrator's own `calibrate_and_quantize` with `activations_type=int16`
and 64-bit biases. It is called here on the run's float model (edgekit.tflite.cache), after the range fixes every
int8 model gets (a -inf pad), so the artifact is the converter's own (measured equal to the converter's output on
the bundled CNN).

Float I/O (QUANTIZE / DEQUANTIZE at the ends): the artifact takes the arrays the fp32 artifact takes, and every
runtime, bench and serve feeds it as it feeds a float model; int16 I/O would save two cheap ops and make each
caller scale its inputs by a step of about 3e-5.

LiteRT cannot prepare a fused ReLU6 whose int16 output step is under 6 / 2^31 (a range under 9.2e-5: a
MobileNetV2 at its initial weights failed to load); such steps are raised to the least it runs
(edgekit.quantize.tflite.int16_bounds).

The 16x8 quantizer refuses some builtins the int8 one takes ("Quantization to 16x8-bit not yet supported for op:
'RELU_0_TO_1'": PaddleOCR's hard sigmoids, as onnx2tf writes them; 'HARD_SWISH': MobileNetV3's, MediaPipe's selfie
segmenter's); those are rewritten first into builtins it quantizes (SIXTEEN_BY_EIGHT_REWRITES, the Edge TPU's own
rewrites: RELU_0_TO_1 is min(max(6x, 0), 6) / 6, a MUL with a fused RELU6 and a MUL; HARD_SWISH is
x * relu6(x + 3) / 6), and the record says so. An op with neither a 16x8 kernel nor such a rewrite (PRELU: MediaPipe's
palm detector; DEPTH_TO_SPACE: its pose detector) stays float between a DEQUANTIZE and a QUANTIZE, as the
converter leaves it where TFLITE_BUILTINS is allowed beside the 16x8 ops; the record names those ops
(`float_ops`). Before, such a model failed at its quantize step, and so did MediaPipe's detectors.

Biases are corrected for the int8 weights' mean shift before calibration (edgekit.quantize.tflite.bias, the `bias`
recipe's correction): with 16-bit activations what is left is the weights' rounding, and on the trained PP-OCRv4
recognizer (per-channel weights already) its mean shift was most of what w8a16 lost (docs/results/w8a16.md).

Mixing int8 and int16 per layer is not possible here: the quantizer takes one activation type for the whole model.
The mixed int8/int16 recipe is ONNX's (edgekit.quantize.onnx.search, `mixed16`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgekit.quantize.records import RecipeChoice
from edgekit.quantize.search import NOT_JUDGED
from edgekit.quantize.tflite.recipes import TfliteJob, float_model

# edgekit.edgetpu.fixes.FIXES keys: the ops the 16x8 quantizer refuses, rewritten into builtins it quantizes
SIXTEEN_BY_EIGHT_REWRITES = ("RELU_0_TO_1 -> MUL+RELU6, MUL", "HARD_SWISH -> ADD+RELU6, MUL, MUL")
# the ops a 16x8 model holds in float by design: its float I/O's ends
IO_OPS = ("QUANTIZE", "DEQUANTIZE")


def quantize_w8a16(job: TfliteJob, requested: str) -> tuple[bytes, RecipeChoice]:
    """The w8a16 model of JOB's float model, calibrated on JOB's samples, and the record of how it was made."""
    from edgekit.quantize.tflite.int8_ranges import range_fixes

    tf = job.tf
    notes: list[str] = []
    source, applied = range_fixes(job.fixed or float_model(job))
    if applied:
        notes.append("range fixes before calibration: " + ", ".join(f"{n} x {k}" for k, n in applied.items())
                     + " (a pad with -inf would make the range infinite)")
    source = _rewrite_for_16x8(source, notes)
    corrected = None
    if not job.feeds:  # one input (the correction's means are read per input tensor, as the `bias` recipe's)
        from edgekit.quantize.tflite.bias import correct_biases

        source, corrected = correct_biases(source, (b for b in job.representative() if isinstance(b, list)))
        notes.append(corrected.words())
    if requested not in ("plain", "auto"):
        notes.append(f"--int8-recipe {requested} applies to int8 artifacts; w8a16 has one recipe")
    blob = _sixteen_by_eight(tf, source, job)
    from edgekit.quantize.tflite.int16_bounds import raise_small_steps

    blob, raised = raise_small_steps(blob)  # else LiteRT refuses to prepare a fused ReLU6 on a tiny int16 step
    from edgekit.quantize.tflite.loadable import refuse_float_weights

    refuse_float_weights(_written(job, blob))  # a layer LiteRT cannot load fails here, named, not at validation
    if raised is not None:
        notes.append(raised.words())
        job.log(f"w8a16: {raised.words()}")
    floats = float_ops(blob)
    if floats:
        words = ("kept float, with no 16x8 kernel (each between a DEQUANTIZE and a QUANTIZE): "
                 + ", ".join(f"{op} x {n}" for op, n in floats.items()))
        notes.append(words)
        job.log(f"w8a16: {words}")
    job.log("w8a16: int8 weights (per channel), biases corrected for their mean shift, int16 activations "
            "(symmetric), 64-bit biases, float I/O")
    choice = RecipeChoice(
        requested="w8a16", chosen="w8a16", met=None, judged_on=NOT_JUDGED, notes=tuple(notes),
        config={"recipe": "w8a16", "activations": "int16", "weights": "int8 per channel", "bias": "int64",
                "bias_correct": corrected is not None,
                "bias_corrected_layers": list(corrected.corrected) if corrected else [],
                "io_dtype": "float32", "calibrate": "minmax", "quantizer": "TFLite calibrator (16x8 mode)",
                "float_ops": floats},
        cost={"size_bytes": len(blob), "fp32_size_bytes": len(float_model(job))})
    return blob, choice


# what auto's record says on TFLite, where ONNX's auto would try mixed16 (edgekit.quantize.onnx.search)
NO_MIXED16 = ("mixed int8/int16 (ONNX's mixed16) is not tried on TFLite: its 16x8 quantizer takes one activation "
              "type for the whole model (--quantize w8a16 is the all-16-bit model; ONNX can mix per layer)")


def auto_notes(job: TfliteJob, requested: str) -> None:
    """JOB's notes gain NO_MIXED16 where the int8 search is auto's (the record says what ONNX's auto would add)."""
    if requested in ("auto", "mixed16"):
        job.notes.append(NO_MIXED16)


def float_ops(blob: bytes) -> dict[str, int]:
    """The ops of the 16x8 model BLOB that compute in float (their output is float32), by kind, but for its I/O's
    QUANTIZE and DEQUANTIZE."""
    from edgekit.tflite.flatbuffer import FLOAT32, FlatModel

    fm = FlatModel(blob)
    out: dict[str, int] = {}
    for k, op in enumerate(fm.sg.operators):
        name = fm.name(k)
        if name in IO_OPS or not len(op.outputs) or op.outputs[0] < 0:
            continue
        if fm.sg.tensors[int(op.outputs[0])].type == FLOAT32:
            out[name] = out.get(name, 0) + 1
    return out


def _written(job: TfliteJob, blob: bytes) -> Path:
    path = job.work / "w8a16-weights-check.tflite"
    path.write_bytes(blob)
    return path


def _rewrite_for_16x8(float_bytes: bytes, notes: list[str]) -> bytes:
    """FLOAT_BYTES with the ops the 16x8 quantizer refuses rewritten (SIXTEEN_BY_EIGHT_REWRITES); NOTES says which."""
    from edgekit.edgetpu.fixes import apply_fixes

    rewritten, report = apply_fixes(float_bytes, only=SIXTEEN_BY_EIGHT_REWRITES)
    if report.applied:
        notes.append("rewritten for the 16x8 quantizer, which refuses them: "
                     + ", ".join(f"{name} x {n}" for name, n in report.applied.items()))
    return rewritten


def _sixteen_by_eight(tf: Any, float_bytes: bytes, job: TfliteJob) -> bytes:
    """The converter's 16x8 stage: FLOAT_BYTES calibrated on JOB's samples and quantized with int16 activations."""
    from tensorflow.lite.python.optimize import calibrator

    with_intermediates = calibrator.add_intermediate_tensors(float_bytes)
    cal = calibrator.Calibrator(with_intermediates)
    # allow_float: an op with no 16x8 kernel stays float (float_ops), as the converter leaves it where TFLITE_BUILTINS
    # is allowed beside the 16x8 ops; without it the whole model failed at that op
    return bytes(cal.calibrate_and_quantize(job.representative, tf.float32, tf.float32, True, tf.int16, tf.int64,
                                            disable_per_channel=False))


__all__ = ["NO_MIXED16", "SIXTEEN_BY_EIGHT_REWRITES", "auto_notes", "float_ops", "quantize_w8a16"]
