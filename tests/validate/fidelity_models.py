"""Small ONNX models built with onnx.helper for issue 15's tests: several heads, dynamic shapes, two inputs.

No torch, no download: numpy weights (seeded), written in a second. Each builder returns the path.
- `heads`: image [batch, 3, height, width] -> conv 3x3 + ReLU -> conv 3x3 stride 2 + ReLU -> three 1x1 heads:
  "prob" (1 channel, sigmoid: a single-channel map), "geo" (4 channels) and "geo2" (4 channels, the same
  shape as "geo", other values): heads that share a shape must not be compared with each other.
  DYNAMIC makes batch, height and width dim_params, and stale value_info from an earlier shape
  inference is left in, as third-party exports have.
- `segmenter`: image -> conv -> 3 class scores per pixel ("seg", dense).
- `recognizer`: features [batch, 16, 8] -> per-step 5-class scores ("steps", a sequence).
- `two_inputs`: image [batch, 3, 8, 8] and mask [batch, 1, 8, 8] -> 5 class scores ("logits").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _w(rng: np.random.Generator, *shape: int) -> np.ndarray:
    fan_in = int(np.prod(shape[1:])) or 1
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def _save(graph: object, path: Path, opset: int, infer: bool = False) -> Path:
    import onnx
    from onnx import helper

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if infer:  # value_info with symbolic dims: stale once the dims are pinned
        model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def heads(path: Path, opset: int = 17, dynamic: bool = True, size: int = 32) -> Path:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = {"w1": _w(rng, 8, 3, 3, 3), "b1": np.full(8, 0.05, np.float32), "w2": _w(rng, 8, 8, 3, 3),
             "b2": np.full(8, 0.05, np.float32), "wp": _w(rng, 1, 8, 1, 1), "bp": np.zeros(1, np.float32),
             "wg": _w(rng, 4, 8, 1, 1), "bg": np.zeros(4, np.float32), "wg2": _w(rng, 4, 8, 1, 1) * 3,
             "bg2": np.ones(4, np.float32)}
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "wp", "bp"], ["p"]),
        helper.make_node("Sigmoid", ["p"], ["prob"]),
        helper.make_node("Conv", ["r2", "wg", "bg"], ["geo"]),
        helper.make_node("Conv", ["r2", "wg2", "bg2"], ["geo2"]),
    ]
    dims: list[int | str] = ["batch", 3, "height", "width"] if dynamic else [1, 3, size, size]
    out: list[int | str] = ["batch", 0, "h2", "w2"] if dynamic else [1, 0, size // 2, size // 2]

    def o(name: str, c: int) -> object:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [c if d == 0 else d for d in out])

    graph = helper.make_graph(nodes, "heads", [helper.make_tensor_value_info("image", TensorProto.FLOAT, dims)],
                              [o("prob", 1), o("geo", 4), o("geo2", 4)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return _save(graph, path, opset, infer=dynamic)


def segmenter(path: Path, size: int = 16) -> Path:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    inits = {"w": _w(rng, 8, 3, 3, 3), "b": np.zeros(8, np.float32), "ws": _w(rng, 3, 8, 1, 1),
             "bs": np.zeros(3, np.float32)}
    nodes = [helper.make_node("Conv", ["image", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Conv", ["r", "ws", "bs"], ["seg"])]
    graph = helper.make_graph(
        nodes, "seg", [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, size, size])],
        [helper.make_tensor_value_info("seg", TensorProto.FLOAT, ["batch", 3, size, size])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return _save(graph, path, 17)


def recognizer(path: Path) -> Path:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    inits = {"w": _w(rng, 8, 5) * 3, "b": np.zeros(5, np.float32)}
    nodes = [helper.make_node("MatMul", ["features", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["steps"])]
    graph = helper.make_graph(
        nodes, "rec", [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 16, 8])],
        [helper.make_tensor_value_info("steps", TensorProto.FLOAT, ["batch", 16, 5])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return _save(graph, path, 17)


def two_inputs(path: Path) -> Path:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    inits = {"w": _w(rng, 8, 4, 3, 3), "b": np.zeros(8, np.float32), "fc": _w(rng, 5, 8).T.copy(),
             "fb": np.zeros(5, np.float32)}
    nodes = [helper.make_node("Concat", ["image", "mask"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fb"], ["logits"])]
    graph = helper.make_graph(
        nodes, "two_in", [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 8, 8]),
                          helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 5])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return _save(graph, path, 17)
