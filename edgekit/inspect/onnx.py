"""Inspect an .onnx file: nodes in graph order with inferred shapes, MACs, parameters by dtype.

Reads the protobuf with the `onnx` package (a MissingDependency with the pip line where it is
absent) without loading external weight files: parameter counts come from the initializers'
declared dims, so a model with a multi-GB .onnx.data file is inspected in milliseconds. Shapes of
intermediate tensors come from ONNX shape inference; where it cannot tell, the shape is null.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core._deps import require
from edgekit.core.border import vendor_errors
from edgekit.core.errors import UnsupportedModel
from edgekit.core.macs import MAC_OPS_ONNX, onnx_node_macs
from edgekit.inspect.records import InspectOp, InspectReport, ParamCounts, TensorInfo


def _dims(type_proto: Any) -> list[int] | None:
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else -1 for d in type_proto.tensor_type.shape.dim]


def _dtype(onnx: Any, elem_type: int) -> str:
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).name
    except (KeyError, TypeError, ValueError):
        return onnx.TensorProto.DataType.Name(elem_type).lower()


def describe(path: str | Path, min_runtime: int | None = None) -> InspectReport:
    """The inspection report of an ONNX model (no Edge TPU section: that needs a .tflite; MIN_RUNTIME, the Edge TPU
    runtime version to pre-flight against, has nothing to apply to)."""
    onnx = require("onnx", purpose="inspect .onnx files")
    from edgekit.core.fsutil import sha256_file

    p = Path(path)
    with vendor_errors("onnx", error=UnsupportedModel, what=f"{p} could not be parsed as an ONNX model",
                       hint="Re-export the model; check that the file was copied completely."):  # DecodeError ...
        model = onnx.load(str(p), load_external_data=False)
    try:
        with vendor_errors("onnx", error=UnsupportedModel):  # a bug in edgekit still surfaces as InternalError
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except UnsupportedModel:  # shape inference is best effort; the graph itself is still described
        inferred = model
    g = inferred.graph
    init = {t.name: t for t in g.initializer}
    info: dict[str, tuple[list[int] | None, str]] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        info[vi.name] = (_dims(vi.type), _dtype(onnx, elem) if elem else "unknown")
    for name, t in init.items():
        info[name] = (list(t.dims), _dtype(onnx, t.data_type))

    def spec(name: str) -> TensorInfo:
        shape, dtype = info.get(name, (None, "unknown"))
        return TensorInfo(name=name, shape=shape, dtype=dtype, quantization=None, const=name in init)

    opsets = {(o.domain or "ai.onnx"): o.version for o in model.opset_import}
    ops: list[InspectOp] = []
    for i, node in enumerate(g.node):
        ins = [n for n in node.input if n]
        attrs = {
            a.name: onnx.helper.get_attribute_value(a)
            for a in node.attribute
            if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.FLOAT)
        }
        shapes_in = [info.get(n, (None, ""))[0] for n in node.input]
        shapes_out = [info.get(n, (None, ""))[0] for n in node.output]
        macs = onnx_node_macs(node.op_type, shapes_in, shapes_out, attrs) if node.op_type in MAC_OPS_ONNX else 0
        ops.append(
            InspectOp(
                index=i,
                op=node.op_type,
                version=opsets.get(node.domain or "ai.onnx"),
                domain=node.domain or "ai.onnx",
                name=node.name,
                inputs=[spec(n) for n in ins],
                outputs=[spec(n) for n in node.output if n],
                macs=macs,
                options={k: v for k, v in attrs.items() if isinstance(v, (int, float))},
            )
        )

    params: dict[str, dict[str, int]] = {}
    for t in g.initializer:
        dtype = _dtype(onnx, t.data_type)
        count = int(math.prod(t.dims)) if t.dims else 1
        try:
            itemsize = np.dtype(dtype).itemsize
        except TypeError:
            itemsize = 0
        row = params.setdefault(dtype, {"count": 0, "bytes": 0})
        row["count"] += count
        row["bytes"] += count * itemsize
    init_names = set(init)
    graph_inputs = [vi.name for vi in g.input if vi.name not in init_names]
    dynamic = [n for n, (shape, _) in info.items() if shape is not None and any(d < 0 for d in shape)]
    unknown = [n for node in g.node for n in node.output if n and info.get(n, (None, ""))[0] is None]
    external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in g.initializer)
    return InspectReport(
        path=str(p),
        format="onnx",
        size_bytes=p.stat().st_size,
        sha256=sha256_file(p),
        opsets=opsets,
        ir_version=model.ir_version,
        producer=f"{model.producer_name} {model.producer_version}".strip(),
        external_data=external,
        inputs=[spec(n) for n in graph_inputs],
        outputs=[spec(vi.name) for vi in g.output],
        ops=ops,
        params=ParamCounts.tally(params),
        macs_counted_ops=", ".join(MAC_OPS_ONNX),
        all_static=not dynamic and not unknown,
        dynamic_tensors=dynamic[:20],
        unknown_shapes=len(unknown),
    )
