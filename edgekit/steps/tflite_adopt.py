"""Step: a .tflite source taken as the artifact it already is (for the Edge TPU: pre-flight and compile it).

A .tflite cannot be converted back, but an int8 one is exactly what the Edge TPU target's post-step
compiles. The planner puts this step where a target's own steps would convert (its format is the
source's): the file is copied into the staging folder under the run's name, validated like any
artifact, and the target's post-steps (edgetpu_compile) work on it. A precision other than the
file's own is refused: edgekit does not re-quantize a converted model.
"""

from __future__ import annotations

import shutil
from typing import ClassVar

from edgekit.core.errors import UsageError
from edgekit.steps.base import Intermediate, Step, StepContext


class TfliteAdopt(Step):
    name: ClassVar[str] = "tflite_adopt"
    consumes: ClassVar[str] = "tflite"
    produces: ClassVar[str] = "tflite"
    modules: ClassVar[tuple[str, ...]] = ("ai_edge_litert",)

    def outputs(self, stem: str) -> list[str]:
        return [f"{stem}.{self.params.precision}.tflite"]

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        from edgekit.sources.tflite import precision_of
        from edgekit.tflite.model import read_tflite

        assert inp.path is not None
        model = read_tflite(inp.path)
        have, want = precision_of(model), self.params.precision
        if have != want:
            raise UsageError(
                f"{inp.path.name} is a {have} .tflite; a .tflite source is taken as it is, so it cannot become {want}.",
                hint="A float (fp32 or fp16) .tflite becomes int8 or w8a16 with --calib; for anything else convert the "
                f"original model (PyTorch, Keras, SavedModel or ONNX) with --quantize {want}.",
            )
        first = model.tensor(model.inputs[0]) if model.inputs else None
        io = first.dtype if first is not None and first.dtype in ("int8", "uint8", "float32") else None
        out = ctx.work / self.outputs(ctx.stem)[0]
        shutil.copyfile(inp.path, out)
        ctx.log(f"{inp.path.name} taken as it is ({have}, {io or 'other'} input)")
        batch = first.shape[0] if first is not None and first.shape and first.shape[0] > 0 else None
        return inp.derive(kind="tflite", path=out, precision=have, io_dtype=io if have == "int8" else None,
                          batch=batch)
