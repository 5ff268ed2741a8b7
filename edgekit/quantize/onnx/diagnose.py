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

from edgekit.quantize.diagnose import LayerMeasure, channel_spread, rank
from edgekit.quantize.onnx.graph import Graph
from edgekit.quantize.onnx.layers import compare_layers
from edgekit.quantize.records import Diagnosis

LAYER_OPS = ("Conv", "Gemm", "MatMul", "ConvTranspose")
MAX_SAMPLES = 32  # a miss is diagnosed unasked: each sample is a run of both models


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
    # folded chunk by chunk (edgekit.quantize.onnx.layers): the whole tensors of 32 samples took PP-OCR past 5 GB
    stats = compare_layers(fm, qm, [((n.input[0], n.output[0]), (q.input[0], q.output[0])) for n, q in layers],
                           x[:MAX_SAMPLES])
    out = []
    for (fnode, qnode), s in zip(layers, stats, strict=True):
        if not s.out.same_shape:
            continue
        quantized = qnode.input[0] != fnode.input[0] or qnode.input[1] != fnode.input[1]
        w = fg.inits.get(fnode.input[1]) if len(fnode.input) > 1 else None
        out.append(LayerMeasure(
            name=fnode.name, op=_op_words(fnode, fg) + ("" if quantized else " (float)"),
            sqnr_db=s.out.sqnr_db(), cosine=s.out.cosine(),
            input_sqnr_db=s.inp.sqnr_db() if s.inp.same_shape else None,
            act_spread=s.act.spread() if s.input_ndim >= 2 else None,
            weight_spread=channel_spread(w, 0) if w is not None and w.ndim >= 2 else None,
            outlier_ratio=s.top.ratio() if s.top is not None else None))
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


def diagnose_int8(choice: Any, path: Path, x: np.ndarray, inputs: str) -> Diagnosis:
    """FORMATS' diagnosis of an int8 ONNX artifact at PATH: against the float model its recipe quantized."""
    return diagnose(Path(choice.float_model), Path(path), x, inputs)


__all__ = ["LAYER_OPS", "diagnose", "diagnose_int8", "measure"]
