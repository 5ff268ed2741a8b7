"""`edgekit inspect`: what is inside a .tflite or .onnx file, without TensorFlow.

`inspect_model(path)` returns an `InspectReport` (edgekit.inspect.records; `to_dict()` is the
JSON of `edgekit inspect --json`): format, size, sha256, inputs/outputs with shape, dtype and
quantization, the ops in execution order with their tensors and MACs, parameters by dtype, total
MACs, whether every shape is static, and for .tflite the Edge TPU pre-flight.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.core.sniff import is_tflite_head, looks_like_onnx, read_head

if TYPE_CHECKING:  # pragma: no cover
    from edgekit.inspect.records import InspectReport


def inspect_model(path: str | Path, min_runtime: int | None = None) -> InspectReport:
    """Inspect the model at PATH (.tflite or .onnx, told apart by content)."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"No such file: {p}.", hint="Check the path (it is relative to the current folder).")
    if p.is_dir():
        raise UsageError(
            f"{p} is a folder; `edgekit inspect` takes one .tflite or .onnx file.",
            hint="Pass one of the files that `edgekit convert` wrote (see its manifest.json).",
        )
    head = read_head(p, 16)
    if is_tflite_head(head):
        from edgekit.inspect.tflite import describe

        return describe(p, min_runtime=min_runtime)
    if p.suffix.lower() == ".onnx" or looks_like_onnx(head):
        from edgekit.inspect.onnx import describe as describe_onnx

        return describe_onnx(p)
    raise UnsupportedModel(
        f"{p} is neither a TFLite flatbuffer nor an ONNX model (first bytes: {head[:8]!r}).",
        hint="`edgekit inspect` reads .tflite and .onnx files; convert other formats with `edgekit convert`.",
    )


__all__ = ["inspect_model"]
