"""SavedModel -> TFLite at a precision: fp32, fp16, dynamic-range, full-integer int8, or w8a16 (16x8: int8 weights,
int16 activations, float I/O; edgekit.quantize.tflite.w8a16).

Full-integer int8 uses the representative dataset (the user's calibration samples in the
SavedModel's layout) and the requested I/O type (int8, uint8 or float32). The float model and its
calibration are made once a run and shared by every TFLite artifact (edgekit.tflite.cache): the fp32
artifact is that float model, and int8 and the Edge TPU's uint8-I/O int8 are two quantizations of one
calibration. (TF 2.21's quantizer, like the converter's one-shot path, leaves an op without an int8 kernel
in float between QUANTIZE/DEQUANTIZE; the Edge TPU pre-flight names such ops.)
`--int8-recipe` (default plain; auto searches) chooses how: edgekit.quantize.tflite.recipes (plain, equalize,
equalize+bias, bias, percentile, mse, mixed precision by selective quantization; an integer-only target such as the
Edge TPU never gets float layers). For the Edge TPU the float model is first rewritten by edgekit.edgetpu.fixes
(ops the compiler cannot map as ops it can), unless --no-edgetpu-fixes.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.core._deps import require
from edgekit.core.border import vendor_errors, vendor_message
from edgekit.steps.base import Intermediate, Step, StepContext, to_layout
from edgekit.tflite.cache import float_model

# Ops that only appear when a dimension stayed dynamic; an edge artifact must not contain them.
DYNAMIC_SHAPE_OPS = ("SHAPE", "STRIDED_SLICE", "PACK")


def artifact_name(stem: str, precision: str, io_dtype: str | None, ext: str = "tflite") -> str:
    """<stem>.<precision>.<ext>; int8 with non-int8 I/O says so: <stem>.int8-uint8io.tflite."""
    suffix = f"-{io_dtype}io" if precision == "int8" and io_dtype and io_dtype != "int8" else ""
    return f"{stem}.{precision}{suffix}.{ext}"


def _first_error(log: str, exc: BaseException) -> str:
    for line in str(exc).splitlines() + log.splitlines():
        if "error:" in line.lower() and ("op" in line.lower() or "not supported" in line.lower()):
            return line.strip()[:400]
    return vendor_message(exc)


class TfliteConvert(Step):
    name: ClassVar[str] = "tflite_convert"
    consumes: ClassVar[str] = "savedmodel"
    produces: ClassVar[str] = "tflite"
    modules: ClassVar[tuple[str, ...]] = ("tensorflow",)

    def outputs(self, stem: str) -> list[str]:
        io = (self.params.io_dtype or "int8") if self.params.precision == "int8" else None
        return [artifact_name(stem, self.params.precision, io)]

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        tf = require("tensorflow", purpose="convert to TFLite")
        precision = self.params.precision
        io_dtype = self.params.io_dtype if precision == "int8" else None
        if precision == "int8":
            io_dtype = io_dtype or "int8"
        assert inp.path is not None
        signature = inp.signature or "serving_default"
        out = ctx.work / artifact_name(ctx.stem, precision, io_dtype)
        from edgekit.steps.keras_to_savedmodel import ensure_static_batch

        # a SavedModel source may have a dynamic batch: trace it at a fixed one, or TFLite keeps SHAPE/PACK ops
        batch = inp.batch if isinstance(inp.batch, int) else int(ctx.options.batch or 1)
        inner = list(ctx.source.input_shape[1:]) if inp.layout == ctx.source.layout else None
        if inner is None and len(ctx.source.input_shape) == 4 and min(ctx.source.input_shape[1:]) > 0:
            # the source's shape, in the SavedModel's layout (an NCHW ONNX's 1,3,64,64 is 64,64,3 here)
            inner = list(to_layout(np.zeros([1, *ctx.source.input_shape[1:]], np.uint8), ctx.source.layout,
                                   inp.layout).shape[1:])
        saved = ensure_static_batch(inp.path, signature, batch, ctx.work / f"{ctx.stem}_static_savedmodel", inner)
        log = io.StringIO()
        tflite_errors = vendor_errors(
            "tflite", step=self.name, what=f"TFLite {precision} conversion failed",
            describe=lambda exc: _first_error(log.getvalue(), exc),
            hint="An op without an int8 kernel cannot be fully quantized: convert with --quantize dynamic or fp16, "
            "or replace the op." if precision == "int8" else "Run with EDGEKIT_DEBUG=1 for the converter's log.",
        )
        choice = None
        with tflite_errors, contextlib.redirect_stdout(log):
            if precision == "int8":  # the recipe asked for (--int8-recipe; auto searches): edgekit.quantize
                blob, choice = self._int8(tf, saved, signature, batch, io_dtype or "int8", inp.layout, ctx)
            elif precision == "w8a16":  # int8 weights, int16 activations, float I/O: edgekit.quantize.tflite.w8a16
                blob, choice = self._int8(tf, saved, signature, batch, "float32", inp.layout, ctx, w8a16=True)
            elif precision in ("fp16", "dynamic"):  # the converter's own weight quantization
                converter = tf.lite.TFLiteConverter.from_saved_model(str(saved), signature_keys=[signature])
                converter.optimizations = [tf.lite.Optimize.DEFAULT]
                if precision == "fp16":
                    converter.target_spec.supported_types = [tf.float16]
                blob = converter.convert()
            else:  # fp32: the float model the int8 artifacts calibrate, converted once a run
                blob = float_model(tf, saved, signature, _cache(ctx))
        out.write_bytes(blob)
        dyn = dynamic_shape_ops(out)
        return inp.derive(kind="tflite", path=out, precision=precision, io_dtype=io_dtype or "float32",
                          dynamic_shape_ops=dyn, quantization=choice)

    def _int8(self, tf: Any, saved: Any, signature: str, batch: int, io_dtype: str, layout: str,
              ctx: StepContext, w8a16: bool = False) -> tuple[bytes, Any]:
        from edgekit.quantize.tflite.recipes import TfliteJob
        from edgekit.quantize.tflite.search import quantize_tflite

        samples = ctx.to_layout(ctx.calibration(), layout)
        # candidates and the calibrated twin; not published
        work = ctx.work / f"{ctx.stem}.{io_dtype}.{'w8a16' if w8a16 else 'int8'}-recipes"
        work.mkdir(exist_ok=True)
        from edgekit.quantize.onnx.search import KindSource

        job = TfliteJob(tf, saved, signature, samples.astype(np.float32), batch, io_dtype, work, ctx.log,
                        edgetpu_fixes=bool(self.params.integer_only) and ctx.options.edgetpu_fixes, cache=_cache(ctx),
                        # a detector's decode stays float and its candidates are judged by boxes (issue 27)
                        kinds=KindSource(ctx.source.metadata, ctx.options.output_kinds, layout,
                                         ctx.options.mask_thresholds))
        # several inputs: each calibrated by its signature key, plain recipe (edgekit.data.feeds)
        if ctx.source.inputs:
            return _int8_named(job, ctx, layout, w8a16)
        if w8a16:
            from edgekit.quantize.tflite.w8a16 import quantize_w8a16

            return quantize_w8a16(job, ctx.options.int8_recipe)
        return quantize_tflite(job, ctx.options.int8_recipe, float_free=bool(self.params.integer_only),
                               budget=ctx.options.int8_budget)


def _cache(ctx: StepContext) -> Path:
    """The run's folder of TFLite float models and calibrations (edgekit.tflite.cache), in its staging area."""
    return ctx.work / f"{ctx.stem}.tflite-cache"


def _int8_named(job: Any, ctx: StepContext, layout: str, w8a16: bool = False) -> tuple[bytes, Any]:
    """Plain full-integer int8 (or w8a16) of a model with several inputs, every input calibrated by its signature
    key."""
    from edgekit.data.feeds import by_keys
    from edgekit.quantize.records import plain_choice_of_inputs
    from edgekit.quantize.tflite.recipes import plain
    from edgekit.sources.savedmodel import open_signature, signature_inputs

    _loaded, fn = open_signature(job.saved, job.signature)
    keys = [k for k, _ in signature_inputs(fn)]
    feeds = {k: ctx.to_layout(v, layout).astype(np.float32) for k, v in ctx.calibration_by_name().items()}
    job.feeds = by_keys(feeds, keys, f"SavedModel signature '{job.signature}'")
    job.samples = job.feeds[keys[0]]
    if w8a16:
        from edgekit.quantize.tflite.w8a16 import quantize_w8a16

        return quantize_w8a16(job, ctx.options.int8_recipe)
    return plain(job), plain_choice_of_inputs(ctx.options.int8_recipe, {"recipe": "plain", "io_dtype": job.io_dtype},
                                         len(job.samples))


def dynamic_shape_ops(path: Any) -> list[str]:
    """Names of SHAPE/STRIDED_SLICE/PACK ops in a .tflite where a dimension was left dynamic (SHAPE, or a -1).

    A file the interpreter cannot open (ValueError: missing, not a flatbuffer) gives [] — validation
    reports that when it loads the artifact. Anything else (a bug here, a changed interpreter API)
    fails loudly instead of silently turning the dynamic-shape warning off.
    """
    from edgekit.runtimes.litert_io import interpreter_class

    try:
        interp = interpreter_class()(model_path=str(path))
    except ValueError:  # "Could not open ...", "not a valid Flatbuffer buffer"
        return []
    ops = {d["op_name"] for d in interp._get_ops_details()}
    found = sorted(o for o in ops if o in DYNAMIC_SHAPE_OPS)
    # STRIDED_SLICE or PACK alone is a static slice or stack (YOLOv8's Split of its boxes from its scores, in every
    # detector): a dimension left dynamic also shows as a SHAPE op or a -1 in some tensor's shape signature
    dynamic = "SHAPE" in ops or any(-1 in list(t.get("shape_signature", ())) for t in interp.get_tensor_details())
    return found if dynamic else []
