"""LiteRT (TFLite) backend: `ai_edge_litert`, falling back to `tf.lite` where it is absent.

tflite-runtime is deliberately not used: its last release (2.14) breaks with numpy 2 and cannot
run models written by current converters.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit._deps import available, version_of
from edgekit.artifact import TensorSpec
from edgekit.errors import MissingDependency, NotAvailable, RuntimeFailure, UsageError
from edgekit.runtimes.base import Runtime

EDGETPU_CUSTOM_OP = "edgetpu-custom-op"


def interpreter_class() -> Any:
    """The Interpreter class of ai_edge_litert, else of tf.lite, else MissingDependency."""
    if available("ai_edge_litert"):
        return importlib.import_module("ai_edge_litert.interpreter").Interpreter
    if available("tensorflow"):
        return importlib.import_module("tensorflow").lite.Interpreter
    raise MissingDependency(
        "No TFLite runtime is installed (neither ai_edge_litert nor tensorflow).",
        hint="pip install 'edgekit[runtime]'  (or just: pip install ai-edge-litert)",
    )


def tensor_spec(detail: dict[str, Any]) -> TensorSpec:
    """TensorSpec from an Interpreter input/output detail dict."""
    sig = detail.get("shape_signature")
    shape = [int(d) for d in (sig if sig is not None and len(sig) else detail["shape"])]
    q = detail.get("quantization_parameters") or {}
    scales = np.asarray(q.get("scales", []), dtype=np.float64)
    zps = np.asarray(q.get("zero_points", []), dtype=np.int64)
    quant = None
    if scales.size:
        quant = {
            "scale": float(scales[0]) if scales.size == 1 else scales.tolist(),
            "zero_point": int(zps[0]) if zps.size == 1 else zps.tolist(),
        }
        if scales.size > 1:
            quant["axis"] = int(q.get("quantized_dimension", 0))
    return TensorSpec(name=detail["name"], shape=shape, dtype=np.dtype(detail["dtype"]).name, quantization=quant)


def is_edgetpu_model(path: str | Path) -> bool:
    """True when the .tflite holds a compiled Edge TPU subgraph (the custom op's name is in it)."""
    try:
        with open(path, "rb") as f:
            return EDGETPU_CUSTOM_OP.encode() in f.read()
    except OSError:
        return False


class LiteRT(Runtime):
    name: ClassVar[str] = "litert"
    formats: ClassVar[tuple[str, ...]] = ("tflite", "edgetpu")
    devices: ClassVar[tuple[str, ...]] = ("cpu",)

    @classmethod
    def version(cls) -> str | None:
        return version_of("ai-edge-litert") or version_of("tensorflow")

    @classmethod
    def available(cls, device: str = "cpu") -> tuple[bool, str]:
        if device != "cpu":
            return False, f"the litert runtime runs on the CPU here, not on '{device}'."
        try:
            interpreter_class()
        except MissingDependency as exc:
            return False, str(exc)
        return True, ""

    def load(self, path: str | Path, device: str = "cpu", threads: int | None = None, **options: Any) -> None:
        ok, why = self.available(device)
        if not ok:
            raise NotAvailable(f"LiteRT cannot run on '{device}' here: {why}")
        if is_edgetpu_model(path):
            raise NotAvailable(
                f"{path} is compiled for the Edge TPU (it contains '{EDGETPU_CUSTOM_OP}'): it needs the Edge TPU "
                "runtime (libedgetpu) and a Coral device.",
                hint="Run it with `--device edgetpu` on a Coral host with libedgetpu installed, or profile the "
                "uncompiled int8 .tflite on the CPU.",
            )
        interp_cls = interpreter_class()
        kwargs: dict[str, Any] = {"model_path": str(path)}
        if threads:
            kwargs["num_threads"] = int(threads)
        if options.get("delegates"):
            kwargs["experimental_delegates"] = options["delegates"]
        try:
            self.interpreter = interp_cls(**kwargs)
            self.interpreter.allocate_tensors()
        except (ValueError, RuntimeError) as exc:
            raise RuntimeFailure(
                f"LiteRT could not load {path}: {str(exc).strip().splitlines()[0][:400]}",
                hint="Check that the file is a complete .tflite model (re-run `edgekit convert`).",
            ) from exc
        self.device = device
        self._in = self.interpreter.get_input_details()
        self._out = self.interpreter.get_output_details()
        self.inputs = [tensor_spec(d) for d in self._in]
        self.outputs = [tensor_spec(d) for d in self._out]
        self._resized: dict[int, tuple[int, ...]] = {}

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        it = self.interpreter
        try:
            for d in self._in:
                if d["name"] not in inputs:
                    raise UsageError(f"Missing input '{d['name']}'.")
                x = np.asarray(inputs[d["name"]])
                if x.dtype != d["dtype"]:
                    raise UsageError(
                        f"Input '{d['name']}' must be {np.dtype(d['dtype']).name}, got {x.dtype.name}.",
                        hint="Use run_float() to have float inputs quantized with the model's scale.",
                    )
                if tuple(x.shape) != tuple(d["shape"]) and self._resized.get(d["index"]) != tuple(x.shape):
                    it.resize_tensor_input(d["index"], list(x.shape))
                    it.allocate_tensors()
                    self._resized[d["index"]] = tuple(x.shape)
                it.set_tensor(d["index"], x)
            it.invoke()
            return {d["name"]: it.get_tensor(d["index"]) for d in self._out}
        except UsageError:
            raise
        except (ValueError, RuntimeError) as exc:
            raise RuntimeFailure(f"LiteRT failed to run the model: {str(exc).strip()[:400]}") from exc

    def close(self) -> None:
        self.interpreter = None
