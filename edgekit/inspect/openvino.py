"""Inspect an OpenVINO IR (model.xml + model.bin): ops in execution order with shapes and MACs, weights by
element type, and the precision the graph computes in.

Read with OpenVINO's own reader (`edgekit.runtimes.openvino.read_model`: an .xml reaches it only when it
starts like an IR, with no document type, and with its .bin beside it), so shapes are OpenVINO's own.
Parameters, Results and Constants are the graph's inputs, outputs and weights, not listed as ops; the
Constants are the parameters, by element type. The precision: "int8" where the graph holds FakeQuantize
ops or 8-bit integer weights (NNCF's IRs and ONNX QDQ models read by OpenVINO hold both), "fp16" where its
float weights are stored in f16 (`compress_to_fp16`; OpenVINO computes in the device's precision), else "fp32".
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from edgekit.core.border import vendor_errors
from edgekit.core.errors import UnsupportedModel
from edgekit.core.macs import MAC_OPS_OPENVINO, openvino_node_macs
from edgekit.core.sniff import read_head
from edgekit.inspect.records import InspectOp, InspectReport, ParamCounts, TensorInfo

_IO_AND_WEIGHTS = ("Parameter", "Result", "Constant")
_INT8 = ("i8", "u8", "i4", "u4")
_IR_VERSION = re.compile(rb"<net\b[^>]*?\sversion=\"(\d{1,4})\"")


def _dtype(et: Any) -> str:
    from edgekit.runtimes.openvino import _DTYPES

    name = str(et.get_type_name())
    return _DTYPES.get(name, name)


def _shape(port: Any) -> list[int] | None:
    ps = port.get_partial_shape()
    if ps.rank.is_dynamic:
        return None
    return [d.get_length() if d.is_static else -1 for d in ps]


def _tensor(port: Any, const: bool = False) -> TensorInfo:
    names = sorted(port.get_names())
    name = names[0] if names else f"{port.get_node().get_friendly_name()}:{port.get_index()}"
    return TensorInfo(name=name, shape=_shape(port), dtype=_dtype(port.get_element_type()), const=const)


def _options(attrs: dict[str, Any]) -> dict[str, Any]:
    """The attributes a reader wants to see (numbers, words, short lists of numbers)."""
    out: dict[str, Any] = {}
    for k, v in attrs.items():
        if isinstance(v, (bool, int, float, str)):
            out[k] = v
        elif isinstance(v, list) and len(v) <= 8 and all(isinstance(x, (int, float)) for x in v):
            out[k] = list(v)
    return out


def _rt(model: Any, key: str) -> str | None:
    try:
        return str(model.get_rt_info(key).astype(str)) if model.has_rt_info(key) else None
    except RuntimeError:
        return None


def precision_of(op_counts: dict[str, int], weights: dict[str, dict[str, int]]) -> str:
    """int8 / fp16 / fp32, as the module docstring says, from the op counts and the weights by dtype."""
    from edgekit.runtimes.openvino import _DTYPES

    if op_counts.get("FakeQuantize") or any(_DTYPES.get(t, t) in weights for t in _INT8):
        return "int8"
    return "fp16" if "float16" in weights else "fp32"


def describe(path: str | Path, min_runtime: int | None = None) -> InspectReport:
    """The inspection report of the OpenVINO IR at PATH (its .xml); MIN_RUNTIME (the Edge TPU's) does not apply."""
    from edgekit.core.fsutil import sha256_path, size_path
    from edgekit.runtimes.openvino import read_model

    p = Path(path)
    with vendor_errors("openvino", error=UnsupportedModel, what=f"{p} could not be read as an OpenVINO IR",
                       hint="Re-run `edgekit convert ... --target openvino`; copy model.xml and model.bin together."):
        model = read_model(p)
        graph = list(model.get_ordered_ops())
    ops: list[InspectOp] = []
    params: dict[str, dict[str, int]] = {}
    dynamic: list[str] = []
    for node in graph:
        kind = node.get_type_name()
        if kind == "Constant":
            out = node.output(0)
            shape = _shape(out) or []
            row = params.setdefault(_dtype(out.get_element_type()), {"count": 0, "bytes": 0})
            count = int(math.prod(shape)) if shape else 1
            row["count"] += count
            row["bytes"] += _nbytes(out.get_element_type(), count)
            continue
        if kind in _IO_AND_WEIGHTS:
            continue
        ins = [_tensor(i.get_source_output(), const=i.get_source_output().get_node().get_type_name() == "Constant")
               for i in node.inputs()]
        outs = [_tensor(o) for o in node.outputs()]
        dynamic += [t.name for t in outs if t.shape is None or any(d < 0 for d in t.shape)]
        attrs = node.get_attributes()
        macs = openvino_node_macs(kind, [t.shape for t in ins], [t.shape for t in outs], attrs) \
            if kind in MAC_OPS_OPENVINO else 0
        ops.append(InspectOp(index=len(ops), op=kind, version=_opset(node), inputs=ins, outputs=outs, macs=macs,
                             options=_options(attrs), domain=node.get_type_info().version_id,
                             name=node.get_friendly_name()))
    inputs = [_tensor(port) for port in model.inputs]
    outputs = [_tensor(port) for port in model.outputs]
    dynamic = [t.name for t in inputs if t.shape is None or any(d < 0 for d in t.shape)] + dynamic
    report = InspectReport(
        path=str(p), format="openvino", size_bytes=size_path(p), sha256=sha256_path(p), inputs=inputs,
        outputs=outputs, ops=ops, params=ParamCounts.tally(params), macs_counted_ops=", ".join(MAC_OPS_OPENVINO),
        all_static=not dynamic, dynamic_tensors=dynamic[:20], ir_version=_ir_version(p),
        producer=" ".join(x for x in (f"OpenVINO {_rt(model, 'Runtime_version') or ''}".strip(),
                                      "NNCF" if model.has_rt_info("nncf") else "") if x),
    )
    report.precision = precision_of(report.op_counts, report.params.by_dtype)
    return report


def _opset(node: Any) -> int | None:
    """The op's opset number ("opset8" -> 8), the IR's version of the op."""
    found = re.search(r"(\d+)$", node.get_type_info().version_id or "")
    return int(found.group(1)) if found else None


def _nbytes(et: Any, count: int) -> int:
    return (count * int(et.bitwidth) + 7) // 8  # 4-bit weights pack two to a byte


def _ir_version(path: Path) -> int | None:
    found = _IR_VERSION.search(read_head(path, 8192))
    return int(found.group(1)) if found else None


__all__ = ["describe", "precision_of"]
