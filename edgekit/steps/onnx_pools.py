"""Pools whose window covers the whole input, made global, before onnx2tf reads the graph.

transformers' EfficientNet pools its last feature map with `nn.AvgPool2d(config.hidden_dim, ceil_mode=True)`:
a 1280x1280 window over a 5x5 map (at 160x160), which is a global average (PyTorch and ONNX Runtime divide
by the cells inside the input, 25). onnx2tf 1.28.8 writes that AveragePool as a PAD to the window's size
followed by AVERAGE_POOL_2D: a [1, 1280, 1280, 1280] float tensor, 8 GB, in every TFLite model made from
it. LiteRT then took 4.5 s and 8 GB per inference (the TFLite converter's calibration ran it once per
sample: the zoo's hf_efficientnet_b0 passed 10 GB and 600 s). A pool whose window covers the input
exactly like that is the Global pool of the same kind, which every converter writes as one MEAN/MAX.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

_GLOBAL = {"AveragePool": "GlobalAveragePool", "MaxPool": "GlobalMaxPool"}


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _static_shapes(graph: Any) -> dict[str, list[int]]:
    shapes = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        if not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        if dims and all(d.HasField("dim_value") and d.dim_value > 0 for d in dims):
            shapes[value.name] = [int(d.dim_value) for d in dims]
    return shapes


def covers_input(attrs: dict[str, Any], spatial: list[int]) -> bool:
    """True where a pool with ATTRS over an input of SPATIAL dims has one output cell whose window holds every
    input cell and no padding: then its value is the global pool's, whatever count_include_pad says."""
    kernel = list(attrs.get("kernel_shape", []))
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    if len(kernel) != len(spatial) or (auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad) not in (
            "NOTSET", "VALID"):
        return False
    if any(p != 0 for p in attrs.get("pads", [])) or any(d != 1 for d in attrs.get("dilations", [])):
        return False
    strides = list(attrs.get("strides", [1] * len(kernel)))
    rounding = math.ceil if attrs.get("ceil_mode", 0) else math.floor
    # one output cell per dim (ONNX's output size), its window from 0 to k >= n: every cell, no padding
    return all(k >= n and rounding((n - k) / s) + 1 == 1 for k, s, n in zip(kernel, strides, spatial, strict=True))


def whole_input_pools_to_global(model: Any) -> list[str]:
    """Replace every AveragePool/MaxPool of MODEL whose window covers its whole (static) input by the Global
    pool of its kind (in place); a sentence naming them, or nothing where there are none."""
    from onnx import helper

    graph = model.graph
    pools = [n for n in graph.node if n.op_type in _GLOBAL]
    if not pools:
        return []
    shapes = _static_shapes(graph)
    if any(n.input[0] not in shapes for n in pools):  # shapes the graph does not record: inferred on a copy
        import onnx

        # where inference fails, the pools whose input shape stays unknown are left as they are
        with contextlib.suppress(onnx.shape_inference.InferenceError, onnx.checker.ValidationError):
            shapes = _static_shapes(onnx.shape_inference.infer_shapes(model, data_prop=True).graph)
    changed: list[str] = []
    for i, node in enumerate(graph.node):
        if node.op_type not in _GLOBAL or node.domain not in ("", "ai.onnx") or len(node.output) != 1:
            continue
        shape, attrs = shapes.get(node.input[0]), _attrs(node)
        if shape is None or len(shape) < 3 or not covers_input(attrs, shape[2:]):
            continue
        changed.append(f"{node.name or node.output[0]} ({node.op_type} {attrs.get('kernel_shape')} over {shape[2:]})")
        graph.node[i].CopyFrom(helper.make_node(_GLOBAL[node.op_type], [node.input[0]], list(node.output),
                                                name=node.name))
    if not changed:
        return []
    return [f"{len(changed)} pool(s) whose window covers the whole input made global, which onnx2tf writes as one "
            f"MEAN/MAX instead of padding the input to the window's size: {', '.join(changed[:3])}"
            f"{' ...' if len(changed) > 3 else ''}"]


__all__ = ["covers_input", "whole_input_pools_to_global"]
