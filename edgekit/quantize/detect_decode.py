"""A detector's final decode, found from the graph, so that int8 recipes keep it in float (issue 27).

Why: a YOLOv8 head ends in one (N, 4 + C, A) tensor that concatenates box coordinates in input pixels
(0-640) with class scores (0-1). Quantized as one tensor it gets one int8 scale: a step of 2.5 pixels is
also a step of 2.5 in score, so every score becomes 0 or 1 and most boxes vanish (onnxruntime's plain
QDQ int8 kept 38% of a YOLOv8n's fp32 detections). The arithmetic that builds that tensor (DFL softmax and
its expectation, anchor offsets, strides, sigmoid, concat) holds no weights and almost no MACs; run in
float, each branch keeps the scale of the layer that feeds it.

The decode is found structurally, never by node names: walk back from the detection outputs through every
producer until a layer (Conv, MatMul, Gemm ...): those are the head's last layers, which stay int8. A
layer whose input is a Softmax (through reshapes and transposes only) is an expectation over a
distribution, DFL's fixed `arange` convolution, and belongs to the decode. Shape-reading ops are kept
but not walked through (their outputs do not depend on values). A walk that reaches a graph input
without meeting a layer is not a head: nothing is kept (the record says so).

Plain data and graph walking: onnx is only read here, never imported at module level.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

# layers with weights: the walk stops at these (the head's last convolutions stay int8)
ONNX_LAYERS = ("Conv", "ConvTranspose", "MatMul", "Gemm", "MatMulInteger", "ConvInteger")
# ops that move values without computing on them: followed back from a layer to see whether a Softmax feeds it
ONNX_MOVES = ("Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Slice", "Split")
# ops whose output depends on their input's shape only: kept in the decode, not walked through
ONNX_SHAPE_READERS = ("Shape", "Size")

TFLITE_LAYERS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "BATCH_MATMUL")
TFLITE_MOVES = ("RESHAPE", "TRANSPOSE", "SQUEEZE", "EXPAND_DIMS", "SLICE", "STRIDED_SLICE", "SPLIT", "SPLIT_V")
TFLITE_SHAPE_READERS = ("SHAPE",)

WHY = ("a detection output concatenates box coordinates in input pixels with class scores in [0, 1]: one int8 "
       "scale for both rounds every score to 0 or 1 (issue 27), so the decode after the head's last layers (DFL "
       "softmax and expectation, anchor arithmetic, strides, sigmoid, concat) runs in float and each branch keeps "
       "the int8 scale of the layer that feeds it")


@dataclass(frozen=True)
class DecodeRegion:
    """The float decode of a detector: its nodes (ONNX node names, or TFLite ops by first output tensor name),
    the layers it starts after, and the detection outputs it feeds."""

    outputs: tuple[str, ...]
    nodes: tuple[str, ...] = ()
    head_layers: tuple[str, ...] = ()  # the last layers before the decode (int8), by the same naming
    ops: dict[str, int] = field(default_factory=dict)  # op type -> count in the decode
    reason: str = ""  # why nothing was kept, where nothing was

    def record(self, macs_share: float, where: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The recipe record's `detection_decode`: what was kept in float, how many nodes, what share of MACs."""
        out: dict[str, Any] = {
            "outputs": list(self.outputs), "kept_in_float": where, "nodes": len(self.nodes),
            "macs_float_fraction": round(macs_share, 6), "ops": dict(sorted(self.ops.items())),
            "head_layers": list(self.head_layers), "found": "structurally: back from the detection outputs to the "
            "last layers with weights (a layer fed by a Softmax is DFL's expectation, part of the decode)",
            "why": WHY, "node_names": list(self.nodes)}
        if self.reason:
            out["not_kept"] = self.reason
        return {**out, **(extra or {})}


_Tensor = TypeVar("_Tensor", str, int)  # how a graph names its tensors: ONNX by name, TFLite by index


def _walk(outputs: Iterable[_Tensor], producer: dict[_Tensor, Any], op_of: Any, inputs_of: Any, name_of: Any,
          layers: tuple[str, ...], moves: tuple[str, ...], readers: tuple[str, ...], graph_inputs: set[_Tensor]
          ) -> tuple[list[Any], list[Any], str]:
    """The nodes between OUTPUTS and the last layers, the layers met, and why none (where the walk escaped)."""

    def fed_by_softmax(node: Any) -> bool:
        ins = [t for t in inputs_of(node) if t in producer]
        seen: set[int] = set()
        while ins:
            p = producer[ins[0]]
            if id(p) in seen:
                return False
            seen.add(id(p))
            if op_of(p) in ("Softmax", "SOFTMAX"):
                return True
            if op_of(p) not in moves:
                return False
            ins = [t for t in inputs_of(p) if t in producer]
        return False

    region: dict[int, Any] = {}
    heads: dict[int, Any] = {}
    stack = [producer[o] for o in outputs if o in producer]
    while stack:
        node = stack.pop()
        if id(node) in region or id(node) in heads:
            continue
        if op_of(node) in layers and not fed_by_softmax(node):
            heads[id(node)] = node
            continue
        region[id(node)] = node
        if op_of(node) in readers:
            continue
        for t in inputs_of(node):
            if t in graph_inputs:
                return [], [], (f"the output is computed from the model input '{t}' without a layer in between "
                                "(no head to keep the decode after)")
            if t in producer:
                stack.append(producer[t])
    if not heads:
        return [], [], "no layer with weights feeds the detection output"
    return list(region.values()), list(heads.values()), ""


def onnx_decode(model: Any, outputs: Iterable[str]) -> DecodeRegion:
    """The decode nodes of an ONNX MODEL's detection OUTPUTS (graph output names), in graph order."""
    g = model.graph
    outputs = tuple(outputs)
    producer = {o: n for n in g.node for o in n.output}
    inits = {i.name for i in g.initializer}
    graph_inputs = {i.name for i in g.input if i.name not in inits}
    region, heads, reason = _walk(outputs, producer, lambda n: n.op_type, lambda n: [i for i in n.input if i],
                                  lambda n: n.name, ONNX_LAYERS, ONNX_MOVES, ONNX_SHAPE_READERS, graph_inputs)
    ops = _in_graph_order(region, heads, g.node, lambda n: n.op_type)
    return DecodeRegion(outputs, tuple(n.name for n in region), tuple(n.name for n in heads), ops, reason)


def _in_graph_order(region: list[Any], heads: list[Any], graph: Iterable[Any], op_type: Any) -> dict[str, int]:
    """Sort REGION and HEADS (in place) as GRAPH orders its nodes; the region's count of each op type."""
    order = {id(n): k for k, n in enumerate(graph)}
    region.sort(key=lambda n: order[id(n)])
    heads.sort(key=lambda n: order[id(n)])
    ops: dict[str, int] = {}
    for n in region:
        ops[op_type(n)] = ops.get(op_type(n), 0) + 1
    return ops


def tflite_decode(model: Any, outputs: Iterable[int]) -> DecodeRegion:
    """The decode ops of a TFLite model (edgekit.tflite.model.read_tflite) feeding the output tensors OUTPUTS
    (tensor indices), named as the TFLite quantizer's denylist names them (their first output tensor)."""
    outputs = tuple(outputs)
    producer = {t: op for op in model.ops for t in op.outputs}
    name = lambda op: model.tensors[op.outputs[0]].name  # noqa: E731
    region, heads, reason = _walk(outputs, producer, lambda op: op.op, lambda op: [i for i in op.inputs if i >= 0],
                                  name, TFLITE_LAYERS, TFLITE_MOVES, TFLITE_SHAPE_READERS, set(model.inputs))
    ops = _in_graph_order(region, heads, model.ops, lambda op: op.op)
    return DecodeRegion(tuple(model.tensors[t].name for t in outputs), tuple(name(op) for op in region),
                        tuple(name(op) for op in heads), ops, reason)




def float_head_outputs(model: Any, heads: Iterable[str]) -> int:
    """Drop the QuantizeLinear -> DequantizeLinear pairs on the outputs of the HEADS nodes of a QDQ MODEL (in
    place): those layers keep int8 weights and inputs and write float, which the float decode reads. The number of
    Q/DQ nodes removed.

    Why: the class branch's last convolution writes logits that the sigmoid turns into scores; rounded to its int8
    step s, a score near the 0.25 cut moves by up to 0.19 * s / 2, enough to cross it where a logit range of 20 gives
    s = 0.08. Measured on the mini DFL detector (tests/quantize/detector_models.py), box recall with the decode
    alone in float 94.9%, with the head's outputs float too 97.6%, at the cost of running those layers (about 2%
    of a YOLOv8n's MACs) as float convolutions on dequantized int8 operands."""
    heads = set(heads)
    g = model.graph
    readers: dict[str, list[Any]] = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    graph_outputs = {o.name for o in g.output}
    drop: list[Any] = []
    for node in g.node:
        if node.name not in heads:
            continue
        out = node.output[0]
        for q in [r for r in readers.get(out, []) if r.op_type == "QuantizeLinear"]:
            dqs = [r for r in readers.get(q.output[0], [])]
            if not dqs or any(r.op_type != "DequantizeLinear" for r in dqs) or q.output[0] in graph_outputs:
                continue
            for dq in dqs:
                if dq.output[0] in graph_outputs:
                    break
                for reader in readers.get(dq.output[0], []):
                    for k, name in enumerate(reader.input):
                        if name == dq.output[0]:
                            reader.input[k] = out
                drop.append(dq)
            else:
                drop.append(q)
    for node in drop:
        g.node.remove(node)
    return len(drop)



def role_parts(head: Any) -> list[tuple[int, slice]] | None:
    """The parts of a single-tensor detector HEAD's output (edgekit.fidelity.detection.Head) whose values live on
    different scales, as (axis, slice): box coordinates in pixels, then class scores (and objectness) in [0, 1];
    None for any other head (several outputs are apart already).

    Why: mixed precision ranks layer groups by the noise they add at the output; a YOLOv8 output's mean squared
    error is the box rows' (pixels, variance in the thousands), so the groups that move the class scores (variance
    about 0.01) ranked as harmless, and a search judged by score drift floated the wrong layers."""
    if head is None:
        return None
    if head.format == "yolov8":  # (N, 4 + C [+ extra], A)
        return [(1, slice(0, 4)), (1, slice(4, 4 + head.classes))]
    if head.format == "yolov5":  # (N, A, 5 + C [+ extra]): objectness multiplies the class scores
        return [(2, slice(0, 4)), (2, slice(4, 5 + head.classes))]
    return None


def box_bounds(fid: Any, z: float, wilson_low: Callable[[float, int, float], float]) -> list[str]:
    """Failures where box recall or precision meets its threshold on the judged boxes but not at its lower bound
    (Z sigmas, WILSON_LOW: edgekit.quantize.search's, passed in so this module needs nothing of the search): a few
    hundred boxes judge a search's candidates, and the luckiest must not end it."""
    out = []
    n_src = int(fid.detections or 0)
    n_art = round(n_src * (fid.detection_recall or 0.0) / fid.detection_precision) if fid.detection_precision else 0
    for key, value, n in (("detection_recall", fid.detection_recall, n_src),
                          ("detection_precision", fid.detection_precision, n_art)):
        need = (fid.thresholds or {}).get(key)
        if value is None or need is None or n <= 0:
            continue
        low = wilson_low(value, n, z)
        if low < need:
            out.append(f"{key.replace('_', ' ')} {value:.1%} of {n} boxes: its lower bound ({z:.2g} sigma) "
                       f"{low:.1%} < {need:.0%}")
    return out

__all__ = ["WHY", "DecodeRegion", "box_bounds", "float_head_outputs", "onnx_decode", "role_parts",
           "tflite_decode"]
