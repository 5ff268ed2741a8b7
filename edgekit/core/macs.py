"""Multiply-accumulate counts per operator, from shapes alone.

Counted: the ops whose cost is dominated by multiply-accumulates (convolutions, depthwise and
transposed convolutions, fully connected / matrix products, and the LSTM's gates). Element-wise
ops, pooling, activations and data movement count 0: this is the usual convention of MAC
counters (thop, ptflops, fvcore), so totals compare with the figures papers quote. A dynamic
dimension counts as 1, so a dynamic-batch model gets per-sample MACs.

Pure shape arithmetic with no edgekit imports: the TFLite reader (`edgekit.tflite.model`), the
ONNX inspector and the Edge TPU pre-flight all count with these functions, so their figures agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

MAC_OPS_TFLITE = (
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "TRANSPOSE_CONV",
    "FULLY_CONNECTED",
    "BATCH_MATMUL",
    "CONV_3D",
    "UNIDIRECTIONAL_SEQUENCE_LSTM",
    "LSTM",
)
MAC_OPS_ONNX = (
    "Conv",
    "ConvTranspose",
    "Gemm",
    "MatMul",
    "QLinearConv",
    "ConvInteger",
    "QLinearMatMul",
    "MatMulInteger",
)
# OpenVINO IR op types (opset names), counted as their ONNX counterparts are
MAC_OPS_OPENVINO = ("Convolution", "GroupConvolution", "ConvolutionBackpropData", "GroupConvolutionBackpropData",
                    "MatMul")


def _prod(shape: Sequence[int]) -> int:
    return int(math.prod(max(int(d), 1) for d in shape)) if shape else 1


def tflite_op_macs(
    op: str,
    in_shapes: Sequence[Sequence[int] | None],
    out_shapes: Sequence[Sequence[int] | None],
    options: Mapping[str, object],
) -> int:
    """MACs of one TFLite op from its tensors' stored shapes (None for an absent optional input).

    0 for ops that are not multiply-accumulate bound, and where a needed shape is missing.
    """
    if op not in MAC_OPS_TFLITE or not out_shapes or out_shapes[0] is None:
        return 0
    out = _prod(out_shapes[0])

    def shape(k: int) -> list[int]:
        s = in_shapes[k] if k < len(in_shapes) else None
        return list(s) if s is not None else []

    if op == "CONV_2D":  # filter [Cout, kh, kw, Cin/groups]
        w = shape(1)
        return out * _prod(w[1:]) if len(w) == 4 else 0
    if op == "DEPTHWISE_CONV_2D":  # filter [1, kh, kw, Cout]
        w = shape(1)
        return out * w[1] * w[2] if len(w) == 4 else 0
    if op == "CONV_3D":  # filter [kd, kh, kw, Cin, Cout]
        w = shape(1)
        return out * _prod(w[:4]) if len(w) == 5 else 0
    if op == "TRANSPOSE_CONV":  # inputs: output_shape, filter [Cout, kh, kw, Cin], input
        w, x = shape(1), shape(2)
        return _prod(x) * w[0] * w[1] * w[2] if len(w) == 4 and x else 0
    if op == "FULLY_CONNECTED":  # weights [units, in]
        w = shape(1)
        return out * w[-1] if len(w) == 2 else 0
    if op == "BATCH_MATMUL":
        a = shape(0)
        if len(a) < 2:
            return 0
        k = a[-2] if options.get("adjX") else a[-1]
        return out * max(k, 1)
    # LSTM: 4 gates, each an input and a recurrent matrix product per step
    x = shape(0)
    w_in = shape(2)  # input_to_forget_weights [units, in]
    if len(x) < 2 or len(w_in) != 2:
        return 0
    units, n_in = w_in
    steps = _prod(x[:-1])
    return steps * 4 * units * (n_in + units)


def onnx_node_macs(
    op_type: str,
    in_shapes: list[list[int] | None],
    out_shapes: list[list[int] | None],
    attrs: dict[str, object],
) -> int:
    """MACs of one ONNX node from inferred shapes (None where a shape is unknown)."""
    if op_type not in MAC_OPS_ONNX or not out_shapes or not out_shapes[0]:
        return 0
    out = _prod(out_shapes[0])
    if op_type in ("QLinearConv",):
        w = in_shapes[3] if len(in_shapes) > 3 else None
    elif op_type in ("QLinearMatMul",):
        a = in_shapes[0]
        return out * max(a[-1], 1) if a else 0
    else:
        w = in_shapes[1] if len(in_shapes) > 1 else None
    if op_type in ("Conv", "QLinearConv", "ConvInteger"):  # W [Cout, Cin/groups, k...]
        return out * _prod(w[1:]) if w and len(w) >= 3 else 0
    if op_type == "ConvTranspose":  # W [Cin, Cout/groups, k...]; each input pixel scatters
        x = in_shapes[0]
        return _prod(x) * _prod(w[1:]) if w and x and len(w) >= 3 else 0
    if op_type == "Gemm":
        a = in_shapes[0]
        if not a or len(a) != 2:
            return 0
        k = a[0] if attrs.get("transA") else a[1]
        return out * max(k, 1)
    # MatMul / MatMulInteger: [..., M, K] x [..., K, N]
    a = in_shapes[0]
    return out * max(a[-1], 1) if a else 0


def openvino_node_macs(
    op_type: str,
    in_shapes: list[list[int] | None],
    out_shapes: list[list[int] | None],
    attrs: Mapping[str, object],
) -> int:
    """MACs of one OpenVINO op from its ports' shapes (-1 dynamic), as the ONNX op it corresponds to.

    Grouped convolutions' weights [G, Cout/G, Cin/G, k...] count as a Conv's [Cout, Cin/G, k...]; MatMul's
    transpose_a picks the inner dimension as Gemm's transA does.
    """
    w = in_shapes[1] if len(in_shapes) > 1 else None
    if op_type not in MAC_OPS_OPENVINO or not w or not in_shapes[0]:
        return 0
    if op_type.startswith("Group"):  # [G, Cout/G, Cin/G, k...] -> [Cout, Cin/G, k...] (backprop: [G, Cin/G, Cout/G])
        w = [w[0] * w[1], *w[2:]] if len(w) >= 4 else None
    shapes = [in_shapes[0], w]
    if op_type == "MatMul":
        a = list(in_shapes[0])
        if attrs.get("transpose_a") and len(a) >= 2:
            a[-1], a[-2] = a[-2], a[-1]
        return onnx_node_macs("MatMul", [a, w], out_shapes, {})
    onnx_op = "ConvTranspose" if "Backprop" in op_type else "Conv"
    return onnx_node_macs(onnx_op, shapes, out_shapes, {})
