"""Conversion steps by name, and the routes between model forms.

A step is named by its key in STEPS, or by "module:Class" (a target defined in one file of its
own may name its step that way). The routes between forms are CONVERSIONS; what a target makes
of the last form is its TargetSpec (edgekit.targets).
"""

from __future__ import annotations

from edgekit.core.registry import resolve
from edgekit.steps.base import Intermediate, Step, StepContext, StepParams

STEPS: dict[str, str] = {
    "torch_to_onnx": "edgekit.steps.torch_to_onnx:TorchToOnnx",
    "onnx_quantize": "edgekit.steps.onnx_quantize:OnnxQuantize",
    "onnx_to_savedmodel": "edgekit.steps.onnx_to_savedmodel:OnnxToSavedModel",
    "tflite_convert": "edgekit.steps.tflite_convert:TfliteConvert",
    "keras_to_savedmodel": "edgekit.steps.keras_to_savedmodel:KerasToSavedModel",
    "keras_to_onnx": "edgekit.steps.keras_to_onnx:KerasToOnnx",
    "savedmodel_to_onnx": "edgekit.steps.savedmodel_to_onnx:SavedModelToOnnx",
    "edgetpu_compile": "edgekit.steps.edgetpu_compile:EdgeTpuCompile",
    "tflite_adopt": "edgekit.steps.tflite_adopt:TfliteAdopt",  # a .tflite source taken as it is (plan.py)
    "tflite_quantize": "edgekit.steps.tflite_quantize:TfliteQuantize",  # a float .tflite source to int8 (plan.py)
}

# (from kind, to kind) -> step name: the intermediate conversions. The planner takes the shortest
# chain from the source's family to the form a target's final step consumes.
CONVERSIONS: dict[tuple[str, str], str] = {
    ("torch", "onnx"): "torch_to_onnx",
    ("onnx", "savedmodel"): "onnx_to_savedmodel",
    ("keras", "savedmodel"): "keras_to_savedmodel",
    ("keras", "onnx"): "keras_to_onnx",
    ("savedmodel", "onnx"): "savedmodel_to_onnx",
}


def get_step(name: str) -> type[Step]:
    """The Step class named NAME: a STEPS key, or "module:Class"."""
    if ":" in name and name not in STEPS:
        return resolve({name: name}, name, "conversion step")
    return resolve(STEPS, name, "conversion step")


__all__ = ["STEPS", "CONVERSIONS", "Intermediate", "Step", "StepContext", "StepParams",
           "get_step"]
