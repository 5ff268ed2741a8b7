"""A new artifact FORMAT from one file: ONNX Runtime's ORT format (`.ort`, the flatbuffer its mobile and minimal
builds load), as a target, a format and a runtime.

The proof of README "Extending edgekit": a format edgekit has never heard of needs this file and three table
lines (TARGETS, FORMATS, RUNTIMES), registered by the test that uses it, and then converts, validates,
profiles, benches, is chosen by serve and gated by check with no other change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from edgekit.core.formats import FormatSpec, serve_ranks
from edgekit.core.sniff import read_head
from edgekit.runtimes.onnxruntime import OnnxRuntime
from edgekit.steps import Intermediate, Step, StepContext
from edgekit.targets import TargetSpec

ORT_IDENTIFIER = b"ORTM"  # the flatbuffer file identifier at bytes 4..8 of an .ort model


def is_ort(path: str | Path) -> bool:
    return read_head(path, 8)[4:8] == ORT_IDENTIFIER


class OnnxToOrt(Step):
    """fp32 ONNX -> .ort, written by onnxruntime itself (its session saves the optimised graph in ORT format)."""

    name: ClassVar[str] = "onnx_to_ort"
    consumes: ClassVar[str] = "onnx"
    produces: ClassVar[str] = "ort"
    modules: ClassVar[tuple[str, ...]] = ("onnxruntime",)

    def outputs(self, stem: str) -> list[str]:
        return [f"{stem}.{self.params.precision}.ort"]

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        import onnxruntime as ort

        from edgekit.core.border import vendor_errors

        assert inp.path is not None
        out = ctx.work / self.outputs(ctx.stem)[0]
        with vendor_errors("onnxruntime", step=self.name, what="Saving the ORT format failed"):
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            so.optimized_model_filepath = str(out)
            so.add_session_config_entry("session.save_model_format", "ORT")
            ort.InferenceSession(str(inp.path), sess_options=so, providers=["CPUExecutionProvider"])
        return inp.derive(kind="ort", path=out, precision=self.params.precision)


class OrtRuntime(OnnxRuntime):
    """onnxruntime on .ort files: the same sessions, its own format name."""

    name: ClassVar[str] = "ort"
    formats: ClassVar[tuple[str, ...]] = ("ort",)

    @classmethod
    def available(cls, device: str) -> tuple[bool, str]:
        return OnnxRuntime.available(device) if device == "cpu" else (False, "the ORT test runtime runs on the CPU")


TARGET = TargetSpec(name="ort", help="ONNX Runtime's ORT format (a test target)", format="ort",
                    steps=("ort_format:OnnxToOrt",), precisions=("fp32",))
FORMAT = FormatSpec("ort", 7, "ort", ".ort", sniff="ort_format:is_ort", serve=serve_ranks(cpu={"fp32": 1}))
RUNTIME = "ort_format:OrtRuntime"

__all__: list[Any] = ["FORMAT", "RUNTIME", "TARGET", "OnnxToOrt", "OrtRuntime", "is_ort"]
