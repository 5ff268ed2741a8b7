"""A small ONNX CNN built with onnx.helper (no torch, no TensorFlow: milliseconds), for the API's tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest


def cnn_proto(seed: int = 0, batch: int | str = "N") -> Any:
    """Conv 3->4 3x3 + Relu, global average pool, Gemm 4->3, on (batch, 3, 12, 12): input 'image', output 'scores'."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(a, n) for n, a in (
        ("w", (rng.standard_normal((4, 3, 3, 3)) * 0.5).astype(np.float32)),
        ("b", (rng.standard_normal(4) * 0.1).astype(np.float32)),
        ("fc_w", rng.standard_normal((3, 4)).astype(np.float32)),
        ("fc_b", (rng.standard_normal(3) * 0.1).astype(np.float32)))]
    nodes = [helper.make_node("Conv", ["image", "w", "b"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["scores"], transB=1)]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                                             [batch, 3, 12, 12])],
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [batch, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def cnn_forward(proto: Any, x: np.ndarray) -> np.ndarray:
    """The proto's function in numpy (float64), the ground truth its artifacts are compared with."""
    from onnx import numpy_helper

    w = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in proto.graph.initializer}
    win = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), (3, 3), axis=(2, 3))
    c = np.einsum("nchwij,ocij->nohw", win, w["w"]) + w["b"][None, :, None, None]
    return np.maximum(c, 0).mean(axis=(2, 3)) @ w["fc_w"].T + w["fc_b"]
