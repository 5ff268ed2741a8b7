"""ONNX fp32 -> the requested precision: fp32 (single file), fp16, dynamic int8, static int8 (QDQ), w8a16 (QDQ with
int8 weights and int16 activations, opset 21).

Static int8 follows onnxruntime's recipe: `quant_pre_process` (shape inference + graph fusion,
BatchNorm folded into the convolutions), then `quantize_static` in QDQ format, per-channel int8
weights, calibrated on the user's representative data; `--int8-recipe` (auto, or a named one) adds the
recovery recipes of edgekit.quantize (equalization, bias correction, calibration statistic, mixed
precision) where the plain recipe misses the int8 thresholds.

Shape inference: `quant_pre_process` runs onnxruntime's symbolic shape inference first, which at
opset >= 18 loses the output shape of Reduce ops other than Sum/Mean/Prod and then crashes on the op
that reads it (ConvNeXt-V2: "object of type 'NoneType' has no len()"); see `_pre_process`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import numpy as np

from edgekit.core._deps import require
from edgekit.core.border import vendor_errors
from edgekit.core.errors import ConversionError
from edgekit.steps.base import Intermediate, Step, StepContext


def _single_file(src: Path, dst: Path) -> None:
    onnx = require("onnx")
    model = onnx.load(str(src))  # loads external data next to it, if any
    onnx.save(model, str(dst))


def _pre_process(src: Path, dst: Path, log: Callable[[str], None]) -> None:
    """onnxruntime's quant_pre_process, without its symbolic shape inference where that crashes.

    Why: at opset >= 18 the axes of Reduce* ops are an input. onnxruntime's SymbolicShapeInference has
    handlers for ReduceSum/Mean/Prod only and hands ONNX's single-node inference the axes initializer
    only for Unsqueeze, so ReduceL2/L1/Max/Min/LogSum/LogSumExp/SumSquare outputs get no shape, and
    the next op that reads one fails: ConvNeXt-V2's global response norm (ReduceL2 then ReduceMean) gives
    "TypeError: object of type 'NoneType' has no len()" in _infer_ReduceSum. Upstream:
    microsoft/onnxruntime#32376 (open: "Fix reduction operator shape inference at opset 18 and later"),
    earlier microsoft/onnxruntime#22722 (closed unmerged), microsoft/onnxruntime#23868 (the same crash
    through negative axes). ONNX's own shape inference, which quant_pre_process also runs, reads the axes
    initializer and gives the quantizer every shape it needs; symbolic inference stays first where it
    works (it names more dims in models with symbolic shapes).
    """
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from edgekit.core.scratch import absolute, scratch_cwd

    src, dst = Path(absolute(src)), Path(absolute(dst))
    # symbolic inference saves sym_shape_infer_temp.onnx in the current folder when incomplete (issue 16)
    with scratch_cwd():
        try:
            quant_pre_process(str(src), str(dst), skip_symbolic_shape=False)
        except Exception as exc:  # any crash of the symbolic pass (TypeError, AssertionError ...): retry without it
            log(f"onnxruntime's symbolic shape inference failed ({type(exc).__name__}: {exc}); "
                "using ONNX shape inference only (microsoft/onnxruntime#32376)")
            quant_pre_process(str(src), str(dst), skip_symbolic_shape=True)


class OnnxQuantize(Step):
    name: ClassVar[str] = "onnx_quantize"
    consumes: ClassVar[str] = "onnx"
    produces: ClassVar[str] = "onnx"
    modules: ClassVar[tuple[str, ...]] = ("onnx", "onnxruntime")

    def outputs(self, stem: str) -> list[str]:
        return [f"{stem}.{self.params.precision}.onnx"]

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        precision = self.params.precision
        assert inp.path is not None
        source, out = inp.path, ctx.work / f"{ctx.stem}.{precision}.onnx"
        with vendor_errors("onnxruntime", step=self.name, what=f"ONNX {precision} conversion failed",
                           hint="Run with EDGEKIT_DEBUG=1 for the full error."):
            if inp.path.parent.resolve() != ctx.work.resolve():
                # the user's own .onnx (maybe with external data): work on a single-file copy, never on it
                local = ctx.work / f"{ctx.stem}.source.onnx"
                if not local.exists():
                    _single_file(source, local)
                source, inp = local, inp.derive(path=local)
            if precision == "fp32":
                _single_file(source, out)
            elif precision == "fp16":
                self._fp16(source, out)
            elif precision == "dynamic":
                self._dynamic(source, out, ctx.work / f"{ctx.stem}.dynamic-pre.onnx", ctx.log)
            elif precision in ("int8", "w8a16"):  # w8a16: the same QDQ path, int16 activations (W8A16)
                return self._int8(inp, out, ctx)
            else:  # the planner rejects others before anything runs
                raise ConversionError(f"onnx_quantize has no precision '{precision}'.")
        return inp.derive(kind="onnx", path=out, precision=precision)

    @staticmethod
    def _fp16(src: Path, dst: Path) -> None:
        onnx = require("onnx")
        from onnxruntime.transformers.float16 import convert_float_to_float16

        model = onnx.load(str(src))
        # float32 I/O stays: callers feed the same arrays to every precision of a model
        half = convert_float_to_float16(model, keep_io_types=True)
        onnx.save(half, str(dst))

    @staticmethod
    def _dynamic(src: Path, dst: Path, pre: Path, log: Callable[[str], None]) -> None:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # Without pre-processing, the exporter's value_info makes onnx shape inference fail inside quantize_dynamic.
        _pre_process(src, pre, log)

        # Conv is left in float: onnxruntime's CPU provider has no ConvInteger kernel for int8 weights, and
        # dynamic quantization of convolutions rarely pays. MatMul/Gemm (the classifier) get int8 weights.
        quantize_dynamic(str(pre), str(dst), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul", "Gemm"],
                         extra_options={"DefaultTensorType": 1})
        pre.unlink(missing_ok=True)

    def _int8(self, inp: Intermediate, dst: Path, ctx: StepContext) -> Intermediate:
        """Static int8 by the recipe asked for (--int8-recipe; `auto` searches, edgekit.quantize.onnx.search)."""
        onnx = require("onnx")
        from edgekit.measure.deploy_cpu import deploy_cpu
        from edgekit.quantize.onnx.graph import name_nodes
        from edgekit.quantize.onnx.prep import unshare_biases
        from edgekit.quantize.onnx.recipes import QuantData
        from edgekit.quantize.onnx.search import KindSource, quantize_onnx, quantize_w8a16

        assert inp.path is not None
        w8a16 = self.params.precision == "w8a16"
        pre = ctx.work / f"{ctx.stem}.{self.params.precision}-pre.onnx"
        _pre_process(inp.path, pre, ctx.log)
        model = onnx.load(str(pre))
        name_nodes(model)  # mixed precision and the diagnosis name nodes; the exporters leave some unnamed
        shared = unshare_biases(model)  # onnxruntime's own copies can take another tensor's name (ort_prep)
        notes = [f"{len(shared)} bias initializer(s) read by several nodes copied per node before quantization "
                 "(onnxruntime names its copies without checking the graph's tensor names, "
                 "microsoft/onnxruntime#24705)"] if shared else []
        for note in notes:
            ctx.log(f"int8: {note}")
        onnx.save(model, str(pre))
        inits = {i.name for i in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in inits]
        samples = ctx.to_layout(ctx.calibration(), inp.layout).astype(np.float32)
        cpu = deploy_cpu(ctx.options.deploy_cpu)  # --for: the int8 form of the CPU that will run it
        form = "int16 activations, 8-bit weights: w8a16's one form" if w8a16 else cpu.form.label
        notes.append(f"made for {cpu.describe()}: {form} (edgekit.quantize.cpu_forms)")
        ctx.log(f"int8: {notes[-1]}")
        dims = model.graph.input[0].type.tensor_type.shape.dim
        batch = dims[0].dim_value if dims and dims[0].dim_value > 0 else 1
        work = ctx.work / f"{ctx.stem}.{self.params.precision}-recipes"  # candidates, float twins; never published
        work.mkdir(exist_ok=True)
        if len(names) > 1:  # several inputs: each calibrated by its name, plain recipe (edgekit.data.feeds)
            from edgekit.data.feeds import by_keys
            from edgekit.quantize.onnx.recipes import W8A16, OnnxRecipeConfig, quantize
            from edgekit.quantize.records import plain_choice_of_inputs

            feeds = {k: ctx.to_layout(v, inp.layout).astype(np.float32) for k, v in ctx.calibration_by_name().items()}
            named = by_keys(feeds, names, f"{inp.path.name}")
            config = (W8A16 if w8a16 else OnnxRecipeConfig()).made_for(cpu.form)
            quantize(pre, dst, QuantData(names[0], named[names[0]], batch, work, feeds=named), config)
            choice = plain_choice_of_inputs("w8a16" if w8a16 else ctx.options.int8_recipe, config.to_dict(),
                                            len(samples))
            return inp.derive(kind="onnx", path=dst, precision=self.params.precision, quantization=choice)
        data = QuantData(names[0], samples, batch, work, notes=notes, form=cpu.form)
        if w8a16:  # one recipe: 16-bit activations leave the int8 recipes nothing to recover
            choice = quantize_w8a16(pre, dst, data, ctx.options.int8_recipe, ctx.log)
            return inp.derive(kind="onnx", path=dst, precision="w8a16", quantization=choice)
        # a detector's outputs: judged by their boxes, their decode kept float (edgekit.quantize.detect_decode)
        kinds = KindSource(ctx.source.metadata, ctx.options.output_kinds, inp.layout, ctx.options.mask_thresholds)
        choice = quantize_onnx(pre, dst, data, ctx.options.int8_recipe, ctx.log, kinds=kinds,
                               budget=ctx.options.int8_budget)
        return inp.derive(kind="onnx", path=dst, precision="int8", quantization=choice)
