"""A whole runtime in one file: the proof that adding a runtime takes a file and one RUNTIMES line.

`onnx-reference` runs ONNX models with onnx's own pure-Python reference implementation
(`onnx.reference.ReferenceEvaluator`): slow, but what the ONNX specification says the graph
computes, which makes it a useful second opinion when a fast runtime and the source disagree.
Registered by one line (RUNTIMES["onnx-reference"] = "onnx_reference_runtime:OnnxReference") in the
test that uses it; the conformance contract and `edgekit profile` then cover it unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.core._deps import require, version_of
from edgekit.core.artifact import TensorSpec
from edgekit.core.errors import MissingDependency
from edgekit.runtimes.base import Runtime


def _spec(value: Any) -> TensorSpec:
    from onnx.helper import tensor_dtype_to_np_dtype

    t = value.type.tensor_type
    shape = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
    return TensorSpec(name=value.name, shape=shape, dtype=np.dtype(tensor_dtype_to_np_dtype(t.elem_type)).name)


class OnnxReference(Runtime):
    name: ClassVar[str] = "onnx-reference"
    vendor: ClassVar[str] = "onnx"
    formats: ClassVar[tuple[str, ...]] = ("onnx",)
    load_hint: ClassVar[str | None] = "Check that the file is a complete ONNX model (re-run `edgekit convert`)."

    @classmethod
    def version(cls) -> str | None:
        return version_of("onnx")

    @classmethod
    def _available(cls, device: str) -> tuple[bool, str]:
        try:
            require("onnx", purpose="run ONNX models with the reference implementation")
        except MissingDependency as exc:
            return False, str(exc)
        return True, ""

    def _load(self, path: Path, device: str, threads: int | None, options: dict[str, Any]) -> None:
        onnx = require("onnx")
        from onnx.reference import ReferenceEvaluator

        model = onnx.load(str(path))
        self.session = ReferenceEvaluator(model)
        initializers = {i.name for i in model.graph.initializer}
        self.inputs = [_spec(v) for v in model.graph.input if v.name not in initializers]
        self.outputs = [_spec(v) for v in model.graph.output]

    def _run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        values = self.session.run(None, {s.name: inputs[s.name] for s in self.inputs})
        return {s.name: np.asarray(v) for s, v in zip(self.outputs, values, strict=True)}

    def close(self) -> None:
        self.session = None
