"""Pin a third-party ONNX graph before any step: fixed input dims, fresh shapes, a usable opset.

ONNX from other frameworks' exporters often has dynamic batch, height and width, stale
`value_info` from an earlier export, and opset 11-12. Each of those breaks a later step: symbolic
shape inference gives up inside int8 quantization ("Incomplete symbolic shape inference"),
onnx2tf makes a SavedModel with [1, None, None, 3] that TFLite cannot convert, and per-channel QDQ
writes `DequantizeLinear(axis)`, which only exists from opset 13. So before any step, in edgekit's
own copy of the model (the user's file is never changed):

1. the opset is raised to MIN_OPSET where a planned step needs it (onnx.version_converter);
2. every dynamic dim the user gave (`--input-shape`) is fixed; a dim_param is fixed everywhere it
   is used (onnxruntime.tools.onnx_model_utils.make_dim_param_fixed); the batch stays dynamic where
   it was, since every step fixes its own (TFLite: --batch);
3. stale `value_info` is dropped and ONNX shape inference redone; output dims it can now tell are written.

Each change is described in a sentence that the manifest records (`source.changes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from edgekit.core._deps import require
from edgekit.core.border import vendor_errors
from edgekit.core.errors import UnsupportedModel, UsageError

QDQ_MIN_OPSET = 13  # DequantizeLinear's `axis` (per-channel int8) exists from opset 13


def dims_of(value: Any) -> list[int]:
    """The shape of a graph input/output: -1 for a dynamic (dim_param or unknown) dim."""
    return [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else -1
            for d in value.type.tensor_type.shape.dim]


def dim_names(value: Any) -> list[str]:
    """Each dim as a user reads it: its size, or its dim_param name ("height"), or "?"."""
    return [str(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or "?")
            for d in value.type.tensor_type.shape.dim]


def opset_of(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def pin(model: Any, shapes: Mapping[str, Sequence[int]], min_opset: int | None = None) -> tuple[Any, list[str]]:
    """MODEL (an onnx.ModelProto) with the inputs in SHAPES fixed and the opset at least MIN_OPSET.

    Returns the new model and a sentence per change; ([], model unchanged) when nothing needed doing.
    A given dim that contradicts a fixed one is a UsageError (checked by the caller first).
    """
    onnx = require("onnx")
    from onnxruntime.tools.onnx_model_utils import make_dim_param_fixed

    changes: list[str] = []
    opset = opset_of(model)
    if min_opset and opset and opset < min_opset:
        with vendor_errors("onnx", error=UnsupportedModel,
                           what=f"Raising the model's opset from {opset} to {min_opset} (needed by int8 per-channel "
                                "quantization) failed",
                           hint="Re-export the model at opset 13 or later, or leave int8 out of --quantize."):
            model = onnx.version_converter.convert_version(model, min_opset)
        changes.append(f"opset raised from {opset} to {min_opset} (per-channel int8 QDQ needs DequantizeLinear's "
                       "axis, opset 13+)")
    graph = model.graph
    fixed_any = False
    for value in graph.input:
        shape = shapes.get(value.name)
        if shape is None:
            continue
        before = dim_names(value)
        for i, (dim, want) in enumerate(zip(value.type.tensor_type.shape.dim, shape, strict=True)):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                continue
            if i == 0:
                continue  # the batch stays free: each step fixes its own
            if dim.HasField("dim_param") and dim.dim_param and dim.dim_param != "?":  # Paddle2ONNX names all "?"
                make_dim_param_fixed(graph, dim.dim_param, int(want))
            else:
                dim.Clear()
                dim.dim_value = int(want)
        after = dim_names(value)
        if after != before:
            fixed_any = True
            changes.append(f"input '{value.name}' pinned from [{', '.join(before)}] to [{', '.join(after)}]")
    if fixed_any or changes:
        stale = len(graph.value_info)
        del graph.value_info[:]
        with vendor_errors("onnx", error=UsageError, what="ONNX shape inference failed on the pinned model",
                           hint="The --input-shape given may not be one the model accepts (a size the strides "
                                "do not divide?)."):
            inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
        for out, new in zip(graph.output, inferred.graph.output, strict=True):
            dims, new_dims = out.type.tensor_type.shape.dim, new.type.tensor_type.shape.dim
            if len(dims) != len(new_dims):
                continue
            for i, (d, nd) in enumerate(zip(dims, new_dims, strict=True)):
                if i and not (d.HasField("dim_value") and d.dim_value > 0) and nd.HasField("dim_value") \
                        and nd.dim_value > 0:
                    d.Clear()
                    d.dim_value = nd.dim_value
        del graph.value_info[:]
        graph.value_info.extend(inferred.graph.value_info)
        changes.append(f"shape annotations redone: {stale} stale value_info entries dropped, ONNX shape inference "
                       f"run again ({len(graph.value_info)} inferred)")
    return model, changes


__all__ = ["QDQ_MIN_OPSET", "dim_names", "dims_of", "opset_of", "pin"]
