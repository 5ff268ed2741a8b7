"""The inspection report: one record type for .tflite, .onnx and OpenVINO IR files.

`inspect_model` returns an `InspectReport`, `edgekit inspect --json` prints its `to_dict()`, and
`profile` reads its one MAC field (`macs`). The keys of `to_dict()` are those the two hand-built
reports always had: the common ones, plus `subgraphs`/`description`/`edgetpu_compiled`/`edgetpu`
for .tflite, `opsets`/`ir_version`/`producer`/`external_data`/`unknown_shapes` for .onnx, and
`ir_version`/`producer`/`precision` for an OpenVINO IR (a format-specific field is None for the other
formats and left out of the JSON).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgekit.core.artifact import QuantParams
from edgekit.edgetpu.records import PreflightReport

InspectFormat = str  # a key of edgekit.core.formats.FORMATS whose FormatSpec names an inspector


@dataclass
class TensorInfo:
    """One tensor as the report shows it."""

    name: str
    shape: list[int] | None  # -1 = dynamic; None where ONNX shape inference could not tell
    dtype: str
    quantization: QuantParams | None = None
    const: bool = False  # a weight or other constant

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "shape": list(self.shape) if self.shape is not None else None,
            "dtype": self.dtype,
            "quantization": self.quantization.to_dict() if self.quantization is not None else None,
        }
        if self.const:
            d["const"] = True
        return d


@dataclass
class InspectOp:
    """One operator (TFLite) or node (ONNX), in execution order."""

    index: int
    op: str
    version: int | None  # the op's version (TFLite) or its domain's opset (ONNX)
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    macs: int
    options: dict[str, Any]
    custom: bool | None = None  # .tflite only: a custom op (the Edge TPU's, or another)
    domain: str | None = None  # .onnx only
    name: str | None = None  # .onnx only: the node's name

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"index": self.index, "op": self.op, "version": self.version}
        for key in ("custom", "domain", "name"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        d["inputs"] = [t.to_dict() for t in self.inputs]
        d["outputs"] = [t.to_dict() for t in self.outputs]
        d["macs"] = self.macs
        d["options"] = self.options
        return d


@dataclass
class ParamCounts:
    """Parameters (constant tensors) by dtype, largest first, and their totals."""

    by_dtype: dict[str, dict[str, int]]  # dtype -> {"count": elements, "bytes": bytes}
    count: int
    bytes: int

    @classmethod
    def tally(cls, by_dtype: dict[str, dict[str, int]]) -> ParamCounts:
        rows = dict(sorted(by_dtype.items(), key=lambda kv: -kv[1]["bytes"]))
        return cls(
            by_dtype=rows,
            count=sum(v["count"] for v in rows.values()),
            bytes=sum(v["bytes"] for v in rows.values()),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"by_dtype": self.by_dtype, "count": self.count, "bytes": self.bytes}


@dataclass
class InspectReport:
    """What is inside one model file: I/O, ops with shapes and MACs, parameters, and for .tflite the Edge TPU."""

    path: str
    format: InspectFormat
    size_bytes: int
    sha256: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    ops: list[InspectOp]
    params: ParamCounts
    macs_counted_ops: str  # the op types MACs are counted for (see edgekit.core.macs)
    all_static: bool
    dynamic_tensors: list[str]  # the first 20 tensors with a dynamic dimension
    # .tflite only
    subgraphs: int | None = None
    description: str | None = None
    edgetpu_compiled: bool | None = None
    edgetpu: PreflightReport | None = None
    # .onnx only
    opsets: dict[str, int] | None = None
    ir_version: int | None = None
    producer: str | None = None
    external_data: bool | None = None
    unknown_shapes: int | None = None  # node outputs whose shape inference could not tell
    # OpenVINO IR only: the precision its graph computes in (int8: FakeQuantize ops or 8-bit weights; fp16 weights)
    precision: str | None = None
    op_counts: dict[str, int] = field(init=False)
    macs: int = field(init=False)  # multiply-accumulates of one inference: the sum over ops

    def __post_init__(self) -> None:
        counts: dict[str, int] = {}
        for o in self.ops:
            counts[o.op] = counts.get(o.op, 0) + 1
        self.op_counts = dict(sorted(counts.items(), key=lambda kv: -kv[1]))
        self.macs = sum(o.macs for o in self.ops)

    _HEAD = ("subgraphs", "description", "edgetpu_compiled", "opsets", "ir_version", "producer", "external_data",
             "precision")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "path": self.path,
            "format": self.format,
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
        }
        d.update({k: getattr(self, k) for k in self._HEAD if getattr(self, k) is not None})
        d.update(
            {
                "inputs": [t.to_dict() for t in self.inputs],
                "outputs": [t.to_dict() for t in self.outputs],
                "ops": [o.to_dict() for o in self.ops],
                "op_counts": self.op_counts,
                "params": self.params.to_dict(),
                "macs": self.macs,
                "macs_counted_ops": self.macs_counted_ops,
                "all_static": self.all_static,
                "dynamic_tensors": list(self.dynamic_tensors),
            }
        )
        if self.unknown_shapes is not None:
            d["unknown_shapes"] = self.unknown_shapes
        if self.edgetpu is not None:
            d["edgetpu"] = self.edgetpu.to_dict()
        return d


__all__ = ["InspectFormat", "InspectOp", "InspectReport", "ParamCounts", "TensorInfo"]
