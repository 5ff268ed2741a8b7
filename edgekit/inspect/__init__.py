"""`edgekit inspect`: what is inside a .tflite, .onnx or OpenVINO IR (.xml + .bin) file, without TensorFlow.

`inspect_model(path)` returns an `InspectReport` (edgekit.inspect.records; `to_dict()` is the
JSON of `edgekit inspect --json`): format, size, sha256, inputs/outputs with shape, dtype and
quantization, the ops in execution order with their tensors and MACs, parameters by dtype, total
MACs, whether every shape is static, and for .tflite the Edge TPU pre-flight.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgekit.api.handles import artifact_file, callable_package
from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.core.sniff import is_openvino_ir, is_tflite_head, looks_like_onnx, read_head

if TYPE_CHECKING:  # pragma: no cover
    from edgekit.inspect.records import InspectReport


def inspect_model(path: str | Path, min_runtime: int | None = None) -> InspectReport:
    """Inspect the model at PATH (.tflite, .onnx or an OpenVINO IR's .xml, told apart by content)."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"No such file: {p}.", hint="Check the path (it is relative to the current folder).")
    if p.is_dir():
        raise UsageError(
            f"{p} is a folder; `edgekit inspect` takes one .tflite, .onnx or OpenVINO .xml file.",
            hint="Pass one of the files that `edgekit convert` wrote (see its manifest.json).",
        )
    head = read_head(p, 16)
    if is_tflite_head(head):
        from edgekit.inspect.tflite import describe

        return describe(p, min_runtime=min_runtime)
    if p.suffix.lower() == ".onnx" or looks_like_onnx(head):
        from edgekit.inspect.onnx import describe as describe_onnx

        return describe_onnx(p)
    if is_openvino_ir(p):
        from edgekit.inspect.openvino import describe as describe_ir

        return describe_ir(p)
    raise UnsupportedModel(
        f"{p} is not a TFLite flatbuffer, an ONNX model or an OpenVINO IR (first bytes: {head[:8]!r}).",
        hint="`edgekit inspect` reads .tflite, .onnx and OpenVINO .xml files; convert other formats with "
        "`edgekit convert`.",
    )


def inspect(artifact: str | Path | Any, min_runtime: int | None = None) -> InspectReport:
    """`edgekit inspect` from Python: ops, shapes, MACs, parameters and, for .tflite, the Edge TPU pre-flight.

    ARTIFACT: a model file, or a ConvertedArtifact of `edgekit.convert()`'s result. MIN_RUNTIME: the Edge TPU
    runtime version to pre-flight against (default 14). Returns the InspectReport (`to_dict()` is the JSON of
    `edgekit inspect --json`). This package is callable as this function: `edgekit.inspect(path)`.
    """
    return inspect_model(artifact_file(artifact), min_runtime=min_runtime)


__all__ = ["inspect", "inspect_model"]

callable_package(__name__, inspect)  # edgekit.inspect(...) calls inspect(...) (edgekit.api.handles)
