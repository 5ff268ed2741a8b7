"""Tiny ONNX graphs (onnx.helper, seeded numpy weights, no torch) with the patterns onnx2tf failed on in the zoo.

- `paddle_like`: what Paddle2ONNX writes for PP-OCR's orientation classifier (at opset 17 here, for
  LayerNormalization): a batch written as `dim_value: -1`, height and width named "?", node names with
  "@" ("Conv@0", "Add@0"), a Reshape whose shape is computed (Shape -> Slice -> Concat), a Softmax head.
  Between the stem and the head, ConvNeXt's channels-first LayerNorm as transformers exports it:
  Transpose(0,2,3,1) -> LayerNormalization(axis -1) -> Transpose(0,3,1,2) -> depthwise Conv, which
  onnx2tf mis-lays out when the batch is symbolic (the -1 becomes one).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _w(rng: np.random.Generator, *shape: int) -> np.ndarray:
    fan_in = int(np.prod(shape[1:])) or 1
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def paddle_like(path: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    consts = {"conv_w": _w(rng, 4, 3, 3, 3), "ln_w": np.full(4, 1.5, np.float32), "ln_b": np.full(4, 0.1, np.float32),
              "dw_w": _w(rng, 4, 1, 3, 3), "bn_scale": np.ones(4, np.float32), "bn_bias": np.full(4, 0.1, np.float32),
              "bn_mean": np.zeros(4, np.float32), "bn_var": np.ones(4, np.float32),
              "add_c": np.float32(0.5).reshape(()), "fc_w": _w(rng, 4, 2), "starts": np.array([0], np.int64),
              "ends": np.array([1], np.int64), "minus1": np.array([-1], np.int64)}
    nodes = [helper.make_node("Constant", [], [k], name="", value=numpy_helper.from_array(v, k))
             for k, v in consts.items()]
    nodes += [
        helper.make_node("Conv", ["x", "conv_w"], ["conv@out"], name="Conv@0", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv@out", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["bn@out"],
                         name="BatchNormalization@0"),
        helper.make_node("Add", ["bn@out", "add_c"], ["add@out"], name="Add@0"),
        helper.make_node("Transpose", ["add@out"], ["nhwc@out"], name="Transpose@0", perm=[0, 2, 3, 1]),
        helper.make_node("LayerNormalization", ["nhwc@out", "ln_w", "ln_b"], ["ln@out"], name="LayerNorm@0", axis=-1,
                         epsilon=1e-6),
        helper.make_node("Transpose", ["ln@out"], ["nchw@out"], name="Transpose@1", perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["nchw@out", "dw_w"], ["dw@out"], name="Conv@1", group=4, pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["dw@out"], ["relu@out"], name="Relu@0"),
        helper.make_node("GlobalAveragePool", ["relu@out"], ["gap@out"], name="GlobalAveragePool@0"),
        helper.make_node("Shape", ["gap@out"], ["shape@out"], name="Shape@0"),
        helper.make_node("Slice", ["shape@out", "starts", "ends"], ["batch@out"], name="Slice@0"),
        helper.make_node("Concat", ["batch@out", "minus1"], ["newshape@out"], name="Concat@0", axis=0),
        helper.make_node("Reshape", ["gap@out", "newshape@out"], ["flat@out"], name="Reshape@0"),
        helper.make_node("MatMul", ["flat@out", "fc_w"], ["fc@out"], name="MatMul@0"),
        helper.make_node("Softmax", ["fc@out"], ["prob"], name="Softmax@0", axis=1),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, "?", "?"])
    prob = helper.make_tensor_value_info("prob", TensorProto.FLOAT, [-1, 2])
    graph = helper.make_graph(nodes, "paddle_like", [x], [prob])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="PaddlePaddle")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def abort_child(request: dict, arrays: dict) -> tuple[dict, dict]:
    """Stands in for onnx2tf in edgekit's child process: dies natively, as TensorFlow's kernels do (SIGABRT)."""
    import os

    os.abort()


def modules_child(request: dict, arrays: dict) -> tuple[dict, dict]:
    """In edgekit's child process: import the step module as the onnx2tf child does; which heavy modules came."""
    import importlib
    import sys

    importlib.import_module(request["module"])
    heavy = ("torch", "tensorflow", "onnx", "onnxruntime", "onnx2tf", "keras", "tf_keras")
    return {"heavy": [m for m in heavy if m in sys.modules]}, {}
