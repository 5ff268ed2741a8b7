"""The ONNX target: the source as ONNX, at every precision onnxruntime runs on a CPU."""

from __future__ import annotations

from edgekit.core.precisions import PRECISION_NAMES
from edgekit.targets.base import TargetSpec

TARGET = TargetSpec(
    name="onnx",
    help="ONNX for onnxruntime (CPU, CUDA, TensorRT), OpenVINO and other ONNX runtimes",
    format="onnx",
    steps=("onnx_quantize",),
    precisions=PRECISION_NAMES,
    int8_recipes="edgekit.quantize.onnx.search:NAMES",
    min_source_opset={"int8": 13, "w8a16": 13},  # per-channel QDQ: an older ONNX source is raised to 13 at load
)
