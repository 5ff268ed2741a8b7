"""ONNX Runtime backend: CPU execution provider, CUDA and TensorRT providers where present."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit._deps import require, version_of
from edgekit.artifact import TensorSpec
from edgekit.errors import NotAvailable, RuntimeFailure, UsageError
from edgekit.runtimes.base import Runtime

# onnx tensor type strings -> numpy dtype names
_ORT_TYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(int16)": "int16",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(bool)": "bool",
}
_PROVIDERS = {
    "cpu": ["CPUExecutionProvider"],
    "gpu": ["CUDAExecutionProvider", "CPUExecutionProvider"],
    "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"],
    "tensorrt": ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"],
}
_LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
           "all": "ORT_ENABLE_ALL"}


def _spec(node: Any) -> TensorSpec:
    shape = [d if isinstance(d, int) else -1 for d in node.shape]
    return TensorSpec(name=node.name, shape=shape, dtype=_ORT_TYPES.get(node.type, node.type))


class OnnxRuntime(Runtime):
    name: ClassVar[str] = "onnxruntime"
    formats: ClassVar[tuple[str, ...]] = ("onnx",)
    devices: ClassVar[tuple[str, ...]] = ("cpu", "gpu", "cuda", "tensorrt")

    @classmethod
    def version(cls) -> str | None:
        return version_of("onnxruntime") or version_of("onnxruntime-gpu")

    @classmethod
    def available(cls, device: str = "cpu") -> tuple[bool, str]:
        try:
            ort = require("onnxruntime", purpose="run ONNX models")
        except Exception as exc:  # MissingDependency
            return False, str(exc)
        wanted = _PROVIDERS.get(device)
        if wanted is None:
            return False, f"onnxruntime has no device '{device}' (choose from {', '.join(_PROVIDERS)})."
        have = ort.get_available_providers()
        if wanted[0] not in have:
            return False, (
                f"onnxruntime here has no {wanted[0]} (available: {', '.join(have)}). "
                "Install 'onnxruntime-gpu' matching your CUDA version on a machine with an NVIDIA GPU."
            )
        return True, ""

    def load(self, path: str | Path, device: str = "cpu", threads: int | None = None, **options: Any) -> None:
        ort = require("onnxruntime", purpose="run ONNX models")
        ok, why = self.available(device)
        if not ok:
            raise NotAvailable(f"onnxruntime cannot run on '{device}' here: {why}")
        so = ort.SessionOptions()
        if threads:
            so.intra_op_num_threads = int(threads)
            so.inter_op_num_threads = 1
        level = options.get("graph_optimization", "all")
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _LEVELS.get(level, "ORT_ENABLE_ALL"))
        so.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(str(path), sess_options=so, providers=_PROVIDERS[device])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph/... types
            raise RuntimeFailure(
                f"onnxruntime could not load {path}: {str(exc).strip().splitlines()[0][:400]}",
                hint="Check that the file is a complete ONNX model (re-run `edgekit convert`).",
            ) from exc
        self.device = device
        self.providers = self.session.get_providers()
        self.inputs = [_spec(i) for i in self.session.get_inputs()]
        self.outputs = [_spec(o) for o in self.session.get_outputs()]
        self._output_names = [o.name for o in self.outputs]

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        try:
            values = self.session.run(self._output_names, inputs)
        except Exception as exc:
            if "INVALID_ARGUMENT" in str(exc) or "Invalid" in str(exc):
                raise UsageError(f"onnxruntime rejected the inputs: {str(exc).strip()[:400]}",
                                 hint=f"The model expects {[(s.name, s.shape, s.dtype) for s in self.inputs]}.")\
                    from exc
            raise RuntimeFailure(f"onnxruntime failed to run the model: {str(exc).strip()[:400]}") from exc
        return dict(zip(self._output_names, values, strict=True))

    def close(self) -> None:
        self.session = None  # type: ignore[assignment]
