"""The OpenVINO target: an IR (`<stem>.<precision>.xml` + its `.bin`) for OpenVINO on x86 CPUs, Intel GPUs and NPUs.

Made from the ONNX route (`openvino.convert_model`): fp32 as converted, fp16 with the weights stored in fp16
(`compress_to_fp16`; OpenVINO computes in the device's own precision), int8 by NNCF post-training quantization
on the run's calibration samples (edgekit.quantize.openvino: its recipes, `--int8-recipe accuracy-control` among
them, and why each NNCF option is set). Every IR is validated against the source like every artifact, by the
`openvino` runtime; the .xml and .bin are published together (FormatSpec.companions).

This file, the runtime's and inspector's, its FORMATS record (runtime, library, serve ranks, platform), its TARGETS
line and pyproject's extra are all a new format needs: the planner, serve's choice, bench, inspect, the manifest's
tool versions and the conformance suite read the records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from edgekit.steps.base import Intermediate, Step, StepContext
from edgekit.targets.base import TargetSpec

if TYPE_CHECKING:
    import numpy as np

    from edgekit.conversion.options import ConvertOptions


class OpenVinoConvert(Step):
    """ONNX fp32 -> OpenVINO IR at the chain's precision."""

    name: ClassVar[str] = "openvino_convert"
    consumes: ClassVar[str] = "onnx"
    produces: ClassVar[str] = "openvino"
    modules: ClassVar[tuple[str, ...]] = ("openvino", "nncf")

    def outputs(self, stem: str) -> list[str]:
        base = f"{stem}.{self.params.precision}"
        return [f"{base}.xml", f"{base}.bin"]

    @classmethod
    def check_options(cls, options: ConvertOptions) -> None:
        """--int8-recipe names are checked against every target's recipes by the planner (TargetSpec.int8_recipes);
        one OpenVINO does not have is noted and auto's order used, as for TFLite."""

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        from edgekit.core.border import vendor_errors
        from edgekit.quantize import openvino as ov_quant

        precision = self.params.precision
        assert inp.path is not None
        xml = ctx.work / self.outputs(ctx.stem)[0]
        with vendor_errors("openvino", step=self.name, what=f"OpenVINO {precision} conversion failed",
                           hint="Run with EDGEKIT_DEBUG=1 for the full error."):
            model = ov_quant.read_onnx(inp.path)
            choice = None
            if precision == "int8":
                feeds = {name: ctx.to_layout(x, inp.layout).astype("float32")
                         for name, x in ctx.calibration_by_name().items()}
                feeds = _by_model_inputs(model, feeds)
                job = ov_quant.OvJob(model=model, feeds=feeds, log=ctx.log, notes=[])
                model, choice = ov_quant.quantize_ir(job, ctx.options.int8_recipe, ctx.options.int8_budget)
            ov_quant.save(model, xml, compress_to_fp16=precision == "fp16")
        return inp.derive(kind="openvino", path=xml, precision=precision, quantization=choice)


def _by_model_inputs(model: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """FEEDS keyed by the IR's input names: the source's names where they match, else in order (one input)."""
    from edgekit.core.errors import UsageError

    names = [port.get_any_name() for port in model.inputs]  # an openvino.Model (openvino has no types)
    if set(names) <= set(feeds):
        return {n: feeds[n] for n in names}
    if len(names) == len(feeds):
        return dict(zip(names, feeds.values(), strict=True))
    raise UsageError(f"The model has inputs {names}, the calibration data {sorted(feeds)}.",
                     hint="Give calibration data for every input, named as the model's inputs (--calib a .npz).")


TARGET = TargetSpec(
    name="openvino",
    help="OpenVINO IR (.xml + .bin) for x86 CPUs, Intel GPUs and NPUs; int8 by NNCF",
    format="openvino",
    steps=("edgekit.targets.openvino:OpenVinoConvert",),
    precisions=("fp32", "fp16", "int8"),
    int8_recipes="edgekit.quantize.openvino:RECIPES",
    dists=("nncf",),  # its format's library (openvino) is recorded from the format's record
)
