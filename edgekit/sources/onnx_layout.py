"""Which layout an ONNX model's image input is in: read from the graph, not guessed from the shape alone.

Most ONNX models take NCHW (PyTorch's export), but tf2onnx writes a Keras/TF model with its
channels-last input kept: N x H x W x C, with a Transpose to NCHW in front of the first Conv. Taken
for NCHW, such a model fails in the ONNX-to-TensorFlow step ("Depth of input (160) is not a multiple
of input depth of filter (3)"). The graph says which it is:
- the first Conv's weight is (M, C/group, kH, kW): the input axis that holds C (1 or last) is the
  channel axis;
- an input that feeds a Transpose with perm (0, 3, 1, 2) first is NHWC (tf2onnx's own pattern).
Where neither tells (no Conv with a constant weight, or both axes have C), the shape rule of
edgekit.core.layout decides; `--layout NCHW|NHWC` overrides all of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edgekit.core.errors import UsageError
from edgekit.core.layout import guess_layout

LAYOUTS = ("NCHW", "NHWC")


def check_layout(value: str | None) -> str | None:
    """--layout, upper-cased and checked; None when not given."""
    if value is None or str(value).strip() == "":
        return None
    v = str(value).strip().upper()
    if v not in LAYOUTS:
        raise UsageError(f"--layout '{value}' is not a layout edgekit knows.",
                         hint="Pass NCHW (channels first, PyTorch's default) or NHWC (channels last, what tf2onnx "
                         "writes for Keras/TF models).")
    return v


def _consumers(graph: Any, name: str) -> list[Any]:
    return [n for n in graph.node if name in n.input]


def _attr(node: Any, key: str, default: Any) -> Any:
    for a in node.attribute:
        if a.name == key:
            return list(a.ints) if a.ints else (a.i if a.type == a.INT else default)
    return default


def _first_conv_channels(graph: Any) -> int | None:
    """Input channels of the graph's first Conv whose weight is an initializer (weight dim 1 x group)."""
    inits = {i.name: i for i in graph.initializer}
    for node in graph.node:
        if node.op_type == "Conv" and len(node.input) > 1 and node.input[1] in inits:
            dims = list(inits[node.input[1]].dims)
            if len(dims) >= 3:
                return int(dims[1]) * int(_attr(node, "group", 1) or 1)
    return None


def graph_layout(model: Any, name: str, shape: Sequence[int]) -> str | None:
    """NCHW or NHWC as the graph of MODEL shows it for input NAME of SHAPE (4-D), or None when it does not tell."""
    if len(shape) != 4:
        return None
    graph = model.graph
    for node in _consumers(graph, name):
        if node.op_type == "Transpose" and _attr(node, "perm", []) == [0, 3, 1, 2]:
            return "NHWC"
    channels = _first_conv_channels(graph)
    if channels is None:
        return None
    first, last = shape[1] == channels, shape[3] == channels
    if first != last:
        return "NCHW" if first else "NHWC"
    return None


def input_layout(model: Any, name: str, shape: Sequence[int], asked: str | None = None) -> str:
    """The layout of input NAME: ASKED (--layout) where given, else the graph's, else the shape rule's."""
    chosen = check_layout(asked)
    if chosen is not None and len(shape) == 4:
        return chosen
    return graph_layout(model, name, shape) or guess_layout(shape)


__all__ = ["LAYOUTS", "check_layout", "graph_layout", "input_layout"]
