"""Step: a float or fp16 .tflite source quantized to int8 (the tflite and Edge TPU targets) or w8a16.

Many users have only the .tflite (MediaPipe, TF Hub and Model Maker exports publish no SavedModel). The TFLite
converter's quantization stages take a float .tflite as it is: calibration runs the float model on the samples and
records each tensor's range, and the MLIR quantizer turns that into full integer (edgekit.tflite.cache splits the
converter the same way for the models edgekit converts itself). So the file goes through the very recipes a
converted model gets (edgekit.quantize.tflite: --int8-recipe, the Edge TPU graph fixes before calibration, w8a16's
16x8 mode) with the user's calibration data, and the artifact is validated against the float .tflite itself (the
source's reference is the file run by LiteRT).

An fp16 file's float16 weights are first made the float32 constants they stand for, and a sparse file's compressed
weights (DENSIFY) the dense constants they stand for (edgekit.tflite.float_weights: both exact): the quantizer
quantizes a layer's weights only where they are a constant, and left DENSIFY-fed filters float16 in int8 layers that
LiteRT cannot load (MediaPipe's pose detector, issue 37). The int8 model is then checked for such a layer before it
leaves the step (edgekit.quantize.tflite.loadable). A dynamic-range file (int8 weights, float activations) is
refused: its weights are already rounded, and quantizing again would round them twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np

from edgekit.core._deps import require
from edgekit.core.border import vendor_errors
from edgekit.core.errors import UsageError
from edgekit.steps.base import Intermediate, Step, StepContext
from edgekit.steps.tflite_convert import artifact_name

QUANTIZABLE = ("fp32", "fp16")  # the source precisions this step takes
MAKES = ("int8", "w8a16")  # the precisions it makes


class TfliteQuantize(Step):
    name: ClassVar[str] = "tflite_quantize"
    consumes: ClassVar[str] = "tflite"
    produces: ClassVar[str] = "tflite"
    modules: ClassVar[tuple[str, ...]] = ("tensorflow", "ai_edge_litert")

    def outputs(self, stem: str) -> list[str]:
        io = (self.params.io_dtype or "int8") if self.params.precision == "int8" else None
        return [artifact_name(stem, self.params.precision, io)]

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        from edgekit.sources.tflite import precision_of
        from edgekit.tflite.float_weights import dense_weights, float32_weights
        from edgekit.tflite.model import read_tflite

        tf = require("tensorflow", purpose="quantize a float .tflite")
        assert inp.path is not None
        have, want = precision_of(read_tflite(inp.path)), self.params.precision
        if have not in QUANTIZABLE or want not in MAKES:
            raise UsageError(f"{inp.path.name} is a {have} .tflite; edgekit quantizes float (fp32 or fp16) .tflite "
                             f"files to {' or '.join(MAKES)}, not a {have} one to {want}.",
                             hint="Quantize the float model it was made from, or take this file as it is "
                             f"(--quantize {have}).")
        blob, densified = dense_weights(inp.path.read_bytes())
        if densified:
            ctx.log(f"{inp.path.name}: {densified} sparse weight tensors (DENSIFY) read as the dense values they hold")
        blob, folded = float32_weights(blob)
        if folded:
            ctx.log(f"{inp.path.name}: {folded} float16 weight tensors read as the float32 values they hold")
        io_dtype = (self.params.io_dtype or "int8") if want == "int8" else "float32"
        out = ctx.work / artifact_name(ctx.stem, want, io_dtype if want == "int8" else None)
        kernel = "16x8 (int16 activations, int8 weights)" if want == "w8a16" else "int8"
        with vendor_errors("tflite", step=self.name, what=f"quantizing the float .tflite to {want} failed",
                           hint=f"An op without a {kernel} kernel cannot be quantized so: take the file as it is "
                           f"(--quantize {have})" + (", or --quantize int8" if want == "w8a16" else "")
                           + ", or quantize the model it was made from."):
            data, choice = self._quantize(tf, blob, want, io_dtype, inp, ctx)
        out.write_bytes(data)
        return inp.derive(kind="tflite", path=out, precision=want, io_dtype=io_dtype, quantization=choice)

    def _quantize(self, tf: object, blob: bytes, want: str, io_dtype: str, inp: Intermediate,
                  ctx: StepContext) -> tuple[bytes, object]:
        from edgekit.quantize.onnx.search import KindSource
        from edgekit.quantize.tflite.recipes import TfliteJob

        shape = list(ctx.source.input_shape)
        batch = int(shape[0]) if shape and int(shape[0]) > 0 else 1
        samples = ctx.to_layout(ctx.calibration(), inp.layout).astype(np.float32)
        work = ctx.work / f"{ctx.stem}.{want}-{io_dtype}.tflite-recipes"  # candidates and calibrations; not published
        work.mkdir(exist_ok=True)
        integer_only = bool(self.params.integer_only)
        job = TfliteJob(tf, Path(), "serving_default", samples, batch, io_dtype, work, ctx.log,
                        edgetpu_fixes=integer_only and ctx.options.edgetpu_fixes, cache=work / "cache",
                        kinds=KindSource(ctx.source.metadata, ctx.options.output_kinds, inp.layout,
                                         ctx.options.mask_thresholds),
                        float_tflite=blob)
        if want == "w8a16":
            from edgekit.quantize.tflite.w8a16 import quantize_w8a16

            return quantize_w8a16(job, ctx.options.int8_recipe)
        from edgekit.quantize.tflite.search import quantize_tflite
        return quantize_tflite(job, ctx.options.int8_recipe, float_free=integer_only, budget=ctx.options.int8_budget)
