"""A whole conversion target in one file: the proof that adding a target takes a file and one table line.

`onnx-resaved` re-saves the fp32 ONNX export under another name, with a metadata entry that says
so. Registered by one line (TARGETS["onnx-resaved"] = "resave_target:TARGET") in the test that
uses it; nothing else in edgekit knows about it. It also offers a precision of its own, `exact`
(a bit-exact copy, judged by stricter thresholds), registered by one PRECISIONS line.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import ClassVar

from edgekit.core.precisions import PrecisionSpec
from edgekit.steps import Intermediate, Step, StepContext
from edgekit.targets import TargetSpec

PRECISION = PrecisionSpec("exact", 4, "a bit-exact copy of the fp32 export",
                          MappingProxyType({"top1_agreement": 1.0, "cosine": 0.999999}), aliases=("bitexact",))


class ResaveOnnx(Step):
    name: ClassVar[str] = "resave_onnx"
    consumes: ClassVar[str] = "onnx"
    produces: ClassVar[str] = "onnx"
    modules: ClassVar[tuple[str, ...]] = ("onnx",)

    def outputs(self, stem: str) -> list[str]:
        return [f"{stem}.{self.params.precision}.resaved.onnx"]

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        import onnx

        assert inp.path is not None
        model = onnx.load(str(inp.path))
        entry = model.metadata_props.add()
        entry.key, entry.value = "resaved_by", "edgekit test target"
        entry = model.metadata_props.add()
        entry.key, entry.value = "precision", self.params.precision
        out = ctx.work / self.outputs(ctx.stem)[0]
        onnx.save(model, str(out))
        return inp.derive(path=out, precision=self.params.precision)


TARGET = TargetSpec(
    name="onnx-resaved",
    help="the fp32 ONNX export, re-saved under another name (a test target)",
    format="onnx",
    steps=("resave_target:ResaveOnnx",),
    precisions=("fp32", "exact"),
)
