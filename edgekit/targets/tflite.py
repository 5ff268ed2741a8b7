"""The TFLite target: a .tflite for LiteRT (XNNPACK on Arm and x86 CPUs, GPU delegates)."""

from __future__ import annotations

from types import MappingProxyType

from edgekit.core.precisions import PRECISION_NAMES
from edgekit.targets.base import TargetSpec

TARGET = TargetSpec(
    name="tflite",
    help="TFLite for LiteRT on CPUs (XNNPACK) and GPU delegates",
    format="tflite",
    steps=("tflite_convert",),
    precisions=PRECISION_NAMES,
    # full-integer models take and give int8 unless --io-dtype says otherwise
    io_defaults=MappingProxyType({"int8": "int8"}),
    int8_recipes="edgekit.quantize.onnx.search:NAMES",  # TFLite notes the ONNX-only ones and uses auto's order
)
