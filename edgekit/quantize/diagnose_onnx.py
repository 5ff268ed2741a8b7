"""ONNX float vs QDQ int8, layer by layer: each Conv/Gemm/MatMul's output in both models on the same inputs.

Both models are run by onnxruntime with graph optimizations off, so the QDQ model computes exactly the
quantize/dequantize arithmetic it declares and every node keeps its name; a node of the float model is
matched to the node of the same name in the QDQ model (quantize_static keeps names), and the tensors
compared are the node's output (before the next quantization) and the input it actually read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from edgekit.quantize.diagnose import LayerMeasure, channel_spread, cosine, outlier_ratio, rank, sqnr_db
from edgekit.quantize.onnx_graph import Graph, run_batches, session, with_outputs
from edgekit.quantize.records import Diagnosis

LAYER_OPS = ("Conv", "Gemm", "MatMul", "ConvTranspose")
MAX_SAMPLES = 32  # every intermediate of every layer is held in memory, and a miss is diagnosed unasked


def measure(float_path: Path, qdq_path: Path, x: np.ndarray) -> list[LayerMeasure]:
    """Per-layer SQNR, cosine and range spreads of the QDQ model against the float one on X (graph order)."""
    import onnx

    fm, qm = onnx.load(str(float_path)), onnx.load(str(qdq_path))
    fg = Graph(fm)
    qnodes = {n.name: n for n in qm.graph.node}
    layers: list[tuple[Any, Any]] = [(n, qnodes[n.name]) for n in fm.graph.node
                                     if n.op_type in LAYER_OPS and n.name in qnodes]
    if not layers:
        return []
    x = x[:MAX_SAMPLES]
    f_names = list(dict.fromkeys(t for n, _ in layers for t in (n.input[0], n.output[0])))
    q_names = list(dict.fromkeys(t for _, q in layers for t in (q.input[0], q.output[0])))
    f_vals = dict(zip(f_names, run_batches(session(with_outputs(fm, f_names), optimize=False), x, f_names, 16),
                      strict=True))
    q_vals = dict(zip(q_names, run_batches(session(with_outputs(qm, q_names), optimize=False), x, q_names, 16),
                      strict=True))
    out = []
    for fnode, qnode in layers:
        f_in, q_in = f_vals[fnode.input[0]], q_vals[qnode.input[0]]
        f_out, q_out = f_vals[fnode.output[0]], q_vals[qnode.output[0]]
        if f_out.shape != q_out.shape:
            continue
        quantized = qnode.input[0] != fnode.input[0] or qnode.input[1] != fnode.input[1]
        w = fg.inits.get(fnode.input[1]) if len(fnode.input) > 1 else None
        out.append(LayerMeasure(
            name=fnode.name, op=_op_words(fnode, fg) + ("" if quantized else " (float)"),
            sqnr_db=sqnr_db(f_out, q_out), cosine=cosine(f_out, q_out),
            input_sqnr_db=sqnr_db(f_in, q_in) if f_in.shape == q_in.shape else None,
            act_spread=channel_spread(f_in, 1) if f_in.ndim >= 2 else None,
            weight_spread=channel_spread(w, 0) if w is not None and w.ndim >= 2 else None,
            outlier_ratio=outlier_ratio(f_out)))
    return out


def _op_words(node: Any, g: Graph) -> str:
    if node.op_type == "Conv" and int(g.attr(node, "group", 1)) > 1:
        return "depthwise Conv" if len(node.input) > 1 and g.inits.get(node.input[1], np.zeros((1, 1))).shape[1] == 1 \
            else "grouped Conv"
    return str(node.op_type)


def diagnose(float_path: Path, qdq_path: Path, x: np.ndarray, inputs: str) -> Diagnosis:
    """The ranked diagnosis of QDQ_PATH against FLOAT_PATH on inputs X (in the model's layout)."""
    measures = measure(float_path, qdq_path, x)
    return rank(measures, "onnxruntime intermediate tensors", min(len(x), MAX_SAMPLES), inputs)


__all__ = ["LAYER_OPS", "diagnose", "measure"]
