"""Tiny ONNX graphs (onnx.helper, seeded numpy weights, no torch) with the patterns onnx2tf failed on in the zoo.

- `paddle_like`: what Paddle2ONNX writes for PP-OCR's orientation classifier (at opset 17 here, for
  LayerNormalization): a batch written as `dim_value: -1`, height and width named "?", node names with
  "@" ("Conv@0", "Add@0"), a Reshape whose shape is computed (Shape -> Slice -> Concat), a Softmax head.
  Between the stem and the head, ConvNeXt's block as transformers exports it: Transpose(0,2,3,1) ->
  LayerNormalization(axis -1) -> Transpose(0,3,1,2) -> depthwise Conv -> Transpose -> LayerNormalization
  -> MatMul (the pointwise Linear) -> GELU in torch's order (Div(sqrt 2), Erf, Add(1), Mul(0.5), Mul(x))
  -> Mul(gamma, x) (the layer scale, its constant first) -> Transpose
  -> residual Add, which onnx2tf mis-lays out when the batch is symbolic (the -1 becomes one) and
  with the constant first (onnx2tf#698); after it, BiT's GroupNorm as transformers exports it:
  Reshape to [N, 2, -1] (N read by Shape) -> InstanceNormalization ->
  Reshape to [-1, 4, H, W] -> ReLU -> Conv, which came out channels-first the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgekit.core.records import Record


def _w(rng: np.random.Generator, *shape: int) -> np.ndarray:
    fan_in = int(np.prod(shape[1:])) or 1
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def paddle_like(path: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    consts = {"conv_w": _w(rng, 4, 3, 3, 3), "ln_w": np.full(4, 1.5, np.float32), "ln_b": np.full(4, 0.1, np.float32),
              "dw_w": _w(rng, 4, 1, 3, 3), "pw_w": _w(rng, 4, 4, 1, 1),
              "two_m1": np.array([2, -1], np.int64),
              "back": np.array([-1, 4, 16, 16], np.int64),
              "bn_scale": np.ones(4, np.float32), "bn_bias": np.full(4, 0.1, np.float32),
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
        # ConvNeXt's block: channels-first LayerNorm, depthwise Conv, LayerNorm, Linear, layer scale, residual
        helper.make_node("Transpose", ["add@out"], ["nhwc@out"], name="Transpose@0", perm=[0, 2, 3, 1]),
        helper.make_node("LayerNormalization", ["nhwc@out", "ln_w", "ln_b"], ["ln@out"], name="LayerNorm@0", axis=-1,
                         epsilon=1e-6),
        helper.make_node("Transpose", ["ln@out"], ["nchw@out"], name="Transpose@1", perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["nchw@out", "dw_w"], ["dwc@out"], name="Conv@1", group=4, pads=[1, 1, 1, 1]),
        helper.make_node("Transpose", ["dwc@out"], ["nhwc2@out"], name="Transpose@2", perm=[0, 2, 3, 1]),
        helper.make_node("LayerNormalization", ["nhwc2@out", "ln_w", "ln_b"], ["ln2@out"], name="LayerNorm@1",
                         axis=-1, epsilon=1e-6),
        helper.make_node("MatMul", ["ln2@out", "lin_w"], ["lin@out"], name="MatMul@1"),
        helper.make_node("Div", ["lin@out", "sqrt2"], ["gd@out"], name="Div@0"),
        helper.make_node("Erf", ["gd@out"], ["ge@out"], name="Erf@0"),
        helper.make_node("Add", ["ge@out", "one"], ["ga@out"], name="Add@2"),
        helper.make_node("Mul", ["half", "ga@out"], ["gh@out"], name="Mul@1"),
        helper.make_node("Mul", ["lin@out", "gh@out"], ["gelu@out"], name="Mul@2"),
        helper.make_node("Mul", ["gamma", "gelu@out"], ["scaled@out"], name="Mul@0"),
        helper.make_node("Transpose", ["scaled@out"], ["nchw2@out"], name="Transpose@3", perm=[0, 3, 1, 2]),
        helper.make_node("Add", ["nchw@out", "nchw2@out"], ["dw@out"], name="Add@1"),
        helper.make_node("Shape", ["dw@out"], ["gn_shape@out"], name="Shape@1"),
        helper.make_node("Slice", ["gn_shape@out", "starts", "ends"], ["gn_n@out"], name="Slice@1"),
        helper.make_node("Concat", ["gn_n@out", "two_m1"], ["gn_groups@out"], name="Concat@1", axis=0),
        helper.make_node("Reshape", ["dw@out", "gn_groups@out"], ["gn_in@out"], name="Reshape@1"),
        helper.make_node("InstanceNormalization", ["gn_in@out", "gn_s", "gn_b"], ["gn_norm@out"],
                         name="InstanceNormalization@0"),
        helper.make_node("Reshape", ["gn_norm@out", "back"], ["gn@out"], name="Reshape@2"),
        helper.make_node("Relu", ["gn@out"], ["gn_relu@out"], name="Relu@1"),
        helper.make_node("Conv", ["gn_relu@out", "pw_w"], ["pw@out"], name="Conv@2"),
        helper.make_node("Relu", ["pw@out"], ["relu@out"], name="Relu@0"),
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
    # the torch-exported parts' constants as initializers, as torch writes them (onnx2tf takes no Constant as
    # InstanceNormalization's scale; a layer scale only fails as an initializer)
    inits = [numpy_helper.from_array(np.full(2, 1.2, np.float32), "gn_s"),
             numpy_helper.from_array(np.full(2, 0.1, np.float32), "gn_b"),
             numpy_helper.from_array(np.array([0.5, 2.0, 1.0, 1.5], np.float32), "gamma"),
             numpy_helper.from_array(_w(rng, 4, 4), "lin_w"),
             *(numpy_helper.from_array(np.float32(v).reshape(()), k) for k, v in
               (("sqrt2", 2 ** 0.5), ("one", 1.0), ("half", 0.5)))]
    graph = helper.make_graph(nodes, "paddle_like", [x], [prob], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="PaddlePaddle")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@dataclass(frozen=True)
class ModuleRequest(Record):
    """modules_child's request: the module to import (edgekit.core.isolate sends records, never dicts)."""

    module: str


def abort_child(request: object, arrays: dict) -> tuple[dict, dict]:
    """Stands in for onnx2tf in edgekit's child process: dies natively, as TensorFlow's kernels do (SIGABRT)."""
    import os

    os.abort()


def modules_child(request: ModuleRequest, arrays: dict) -> tuple[dict, dict]:
    """In edgekit's child process: import the step module as the onnx2tf child does; which heavy modules came."""
    import importlib
    import sys

    importlib.import_module(request.module)
    heavy = ("torch", "tensorflow", "onnx", "onnxruntime", "onnx2tf", "keras", "tf_keras")
    return {"heavy": [m for m in heavy if m in sys.modules]}, {}


def convnext_tie(path: Path) -> Path:
    """A ConvNeXt stem and block at a size where every dimension after the batch is the same (8 channels on an
    8 x 8 map: ConvNeXt-V2 atto's 40 x 40 x 40 at 160 x 160, small): patchify Conv -> Transpose(0,2,3,1) ->
    LayerNormalization(-1) -> Transpose back -> depthwise Conv -> Transpose -> LayerNormalization -> MatMul ->
    ReLU -> MatMul -> layer scale -> Transpose back -> residual Add -> GlobalAveragePool -> Gemm.
    onnx2tf 1.28.8 normalized over a spatial axis and fed NCHW data to the depthwise Conv as NHWC here."""
    from onnx import helper

    rng = np.random.default_rng(3)
    inits = {"stem_w": _w(rng, 8, 3, 4, 4), "stem_b": np.full(8, 0.1, np.float32),
             "ln_w": rng.uniform(0.5, 1.5, 8).astype(np.float32), "ln_b": rng.uniform(-0.2, 0.2, 8).astype(np.float32),
             "dw_w": _w(rng, 8, 1, 3, 3), "up_w": _w(rng, 8, 16), "down_w": _w(rng, 16, 8),
             "gamma": rng.uniform(0.5, 1.5, 8).astype(np.float32), "fc_w": _w(rng, 4, 8),
             "fc_b": np.zeros(4, np.float32)}
    nodes = [
        helper.make_node("Conv", ["x", "stem_w", "stem_b"], ["stem"], strides=[4, 4], kernel_shape=[4, 4]),
        helper.make_node("Transpose", ["stem"], ["stem_nhwc"], perm=[0, 2, 3, 1]),
        helper.make_node("LayerNormalization", ["stem_nhwc", "ln_w", "ln_b"], ["stem_ln"], axis=-1, epsilon=1e-6),
        helper.make_node("Transpose", ["stem_ln"], ["block_in"], perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["block_in", "dw_w"], ["dw"], group=8, pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Transpose", ["dw"], ["dw_nhwc"], perm=[0, 2, 3, 1]),
        helper.make_node("LayerNormalization", ["dw_nhwc", "ln_w", "ln_b"], ["dw_ln"], axis=-1, epsilon=1e-6),
        helper.make_node("MatMul", ["dw_ln", "up_w"], ["up"]),
        helper.make_node("Relu", ["up"], ["up_relu"]),
        helper.make_node("MatMul", ["up_relu", "down_w"], ["down"]),
        helper.make_node("Mul", ["down", "gamma"], ["scaled"]),
        helper.make_node("Transpose", ["scaled"], ["branch"], perm=[0, 3, 1, 2]),
        helper.make_node("Add", ["block_in", "branch"], ["block_out"]),
        helper.make_node("GlobalAveragePool", ["block_out"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1),
    ]
    return _classifier(path, nodes, inits, "convnext_tie", [1, 3, 32, 32], 17)


def mobilevit_like(path: Path) -> Path:
    """MobileViT's block as transformers exports it, small: a Conv's map unfolded into 2 x 2 patches as
    (pixels of a patch = 4, patches = 64, channels = 8) with a batch of 1, a transformer layer on it (LayerNorm,
    hand-written self-attention: Q/K/V Linear, heads split by Reshape/Transpose, scores / sqrt(d), Softmax,
    output Linear; residual), folded back, then a 1 x 1 Conv and a classifier. onnx2tf 1.28.8 marked the
    patches transposed (their first dimension is not the batch) and onnxsim fused the attention into an op
    nothing downstream can run."""
    from onnx import helper

    rng = np.random.default_rng(5)
    c, heads, d = 8, 2, 4
    inits = {"conv_w": _w(rng, c, 3, 3, 3), "ln_w": rng.uniform(0.5, 1.5, c).astype(np.float32),
             "ln_b": rng.uniform(-0.2, 0.2, c).astype(np.float32), "pw_w": _w(rng, c, c, 1, 1),
             "fc_w": _w(rng, 4, c), "fc_b": np.zeros(4, np.float32), "scale": np.float32(np.sqrt(d)).reshape(()),
             "unfold1": np.array([c * 8, 2, 8, 2], np.int64), "unfold2": np.array([1, c, 64, 4], np.int64),
             "tokens": np.array([4, 64, c], np.int64), "split": np.array([4, 64, heads, d], np.int64),
             "fold1": np.array([1, 4, 64, c], np.int64), "fold2": np.array([c * 8, 8, 2, 2], np.int64),
             "fold3": np.array([1, c, 16, 16], np.int64)}
    for k in "qkvo":
        inits[f"{k}_w"] = _w(rng, c, c)
    # one bias tensor for the four Linears, as torch's exporter writes equal (here zero, untrained) biases: then
    # onnxsim's fuse_qkv leaves the projections alone and its fuse_attention matches the block (MobileViT-S)
    inits["bias"] = np.zeros(c, np.float32)
    mk = helper.make_node
    nodes = [
        mk("Conv", ["x", "conv_w"], ["feat"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        mk("Reshape", ["feat", "unfold1"], ["u1"]),
        mk("Transpose", ["u1"], ["u2"], perm=[0, 2, 1, 3]),
        mk("Reshape", ["u2", "unfold2"], ["u3"]),
        mk("Transpose", ["u3"], ["u4"], perm=[0, 3, 2, 1]),
        mk("Reshape", ["u4", "tokens"], ["tok"]),
        mk("LayerNormalization", ["tok", "ln_w", "ln_b"], ["ln"], axis=-1, epsilon=1e-5),
    ]
    for k, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        nodes += [mk("MatMul", ["ln", f"{k}_w"], [f"{k}_mm"]), mk("Add", [f"{k}_mm", "bias"], [f"{k}_lin"]),
                  mk("Reshape", [f"{k}_lin", "split"], [f"{k}_heads"]),
                  mk("Transpose", [f"{k}_heads"], [f"{k}_t"], perm=perm)]
    nodes += [
        mk("MatMul", ["q_t", "k_t"], ["scores"]), mk("Div", ["scores", "scale"], ["scaled"]),
        mk("Softmax", ["scaled"], ["attn"], axis=-1), mk("MatMul", ["attn", "v_t"], ["ctx"]),
        mk("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]), mk("Reshape", ["ctx_t", "tokens"], ["ctx_r"]),
        mk("MatMul", ["ctx_r", "o_w"], ["o_mm"]), mk("Add", ["o_mm", "bias"], ["o_lin"]),
        mk("Add", ["tok", "o_lin"], ["res"]),
        mk("Reshape", ["res", "fold1"], ["f1"]), mk("Transpose", ["f1"], ["f2"], perm=[0, 3, 2, 1]),
        mk("Reshape", ["f2", "fold2"], ["f3"]), mk("Transpose", ["f3"], ["f4"], perm=[0, 2, 1, 3]),
        mk("Reshape", ["f4", "fold3"], ["folded"]),
        mk("Conv", ["folded", "pw_w"], ["pw"], kernel_shape=[1, 1]), mk("Relu", ["pw"], ["act"]),
        mk("GlobalAveragePool", ["act"], ["gap"]), mk("Flatten", ["gap"], ["flat"]),
        mk("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1),
    ]
    return _classifier(path, nodes, inits, "mobilevit_like", [1, 3, 16, 16], 18)


def _classifier(path: Path, nodes: list, inits: dict[str, np.ndarray], name: str, x_shape: list[int],
                opset: int) -> Path:
    """NODES (input x, output logits [1, 4]) with INITS saved as a checked ONNX model at PATH."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 4])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def yolov8_dfl_head(path: Path) -> Path:
    """YOLOv8's Detect decode as Ultralytics' TorchScript export (opset 17) writes it, small: three level maps
    (strides 4, 8, 16 on a 32 x 32 input: 64 + 16 + 4 = 84 anchors) of 4 x 16 DFL bins + 3 classes, each
    Reshape(1, 67, -1) -> Concat(axis 2) -> Split(64, 3); DFL: Reshape(1, 4, 16, A) -> Transpose(0, 2, 1, 3) ->
    Softmax(1) -> 1 x 1 Conv with weights 0..15 -> Reshape(1, 4, A); dist2bbox: Slice lt / rb, anchor - lt,
    anchor + rb, centre (x1y1 + x2y2) / 2 and size x2y2 - x1y1, Concat; * strides (1, A); then
    Concat((dbox, sigmoid(cls)), 1): output (1, 4 + 3, 84). The anchor grid (make_anchors) is a Constant node
    of shape [1, 2, A], as onnxsim leaves it: onnx2tf 1.28.8 wrote it channels-last and failed at the last
    Concat (issue 27)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    nc, no, sizes, strides = 3, 64 + 3, (8, 4, 2), (4.0, 8.0, 16.0)
    anchors, stride_row = [], []
    for size, stride in zip(sizes, strides, strict=True):
        sy, sx = np.meshgrid(np.arange(size) + 0.5, np.arange(size) + 0.5, indexing="ij")
        anchors.append(np.stack([sx.ravel(), sy.ravel()]))
        stride_row.append(np.full(size * size, stride))
    grid = np.concatenate(anchors, 1)[None].astype(np.float32)  # [1, 2, A]
    a = grid.shape[2]
    inits = {"stem_w": _w(rng, 8, 3, 3, 3), "stem_b": np.full(8, 0.1, np.float32),
             "p3_w": _w(rng, no, 8, 1, 1), "p4_w": _w(rng, no, 8, 3, 3), "p5_w": _w(rng, no, 8, 3, 3),
             "flat": np.array([1, no, -1], np.int64), "split": np.array([64, nc], np.int64),
             "bins": np.array([1, 4, 16, a], np.int64), "boxes": np.array([1, 4, a], np.int64),
             "dfl_w": np.arange(16, dtype=np.float32).reshape(1, 16, 1, 1), "zero": np.array([0], np.int64),
             "two": np.array([2], np.int64), "four": np.array([4], np.int64), "one": np.array([1], np.int64),
             "half": np.array(2.0, np.float32)}
    mk = helper.make_node
    nodes = [
        mk("Constant", [], ["anchors"], value=numpy_helper.from_array(grid, "anchors")),
        mk("Constant", [], ["strides"], value=numpy_helper.from_array(np.concatenate(stride_row)[None].astype(
            np.float32), "strides")),
        mk("Conv", ["x", "stem_w", "stem_b"], ["stem"], strides=[4, 4], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        mk("Relu", ["stem"], ["feat"]),
        mk("Conv", ["feat", "p3_w"], ["p3"], kernel_shape=[1, 1]),
        mk("Conv", ["feat", "p4_w"], ["p4"], strides=[2, 2], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        mk("Conv", ["feat", "p5_w"], ["p5"], strides=[4, 4], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        *(mk("Reshape", [p, "flat"], [f"{p}_flat"]) for p in ("p3", "p4", "p5")),
        mk("Concat", ["p3_flat", "p4_flat", "p5_flat"], ["levels"], axis=2),
        mk("Split", ["levels", "split"], ["box", "cls"], axis=1),
        mk("Reshape", ["box", "bins"], ["dfl_in"]),
        mk("Transpose", ["dfl_in"], ["dfl_t"], perm=[0, 2, 1, 3]),
        mk("Softmax", ["dfl_t"], ["dfl_p"], axis=1),
        mk("Conv", ["dfl_p", "dfl_w"], ["dfl_e"], kernel_shape=[1, 1]),
        mk("Reshape", ["dfl_e", "boxes"], ["dist"]),
        mk("Slice", ["dist", "zero", "two", "one"], ["lt"]),
        mk("Slice", ["dist", "two", "four", "one"], ["rb"]),
        mk("Sub", ["anchors", "lt"], ["x1y1"]),
        mk("Add", ["anchors", "rb"], ["x2y2"]),
        mk("Add", ["x1y1", "x2y2"], ["xy_sum"]),
        mk("Div", ["xy_sum", "half"], ["c_xy"]),
        mk("Sub", ["x2y2", "x1y1"], ["wh"]),
        mk("Concat", ["c_xy", "wh"], ["dbox_grid"], axis=1),
        mk("Mul", ["dbox_grid", "strides"], ["dbox"]),
        mk("Sigmoid", ["cls"], ["scores"]),
        mk("Concat", ["dbox", "scores"], ["output0"], axis=1),
    ]
    graph = helper.make_graph(nodes, "yolov8_dfl_head",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 4 + nc, a])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


def converts_like_onnxruntime(src: Path, x: np.ndarray, tmp_path: Path) -> list[int]:
    """SRC (batch 1, input "x") converted to fp32 TFLite by edgekit: published, passing, and equal to onnxruntime's
    outputs on 4 samples of X (NCHW); the TFLite output's shape."""
    import pytest

    pytest.importorskip("onnx2tf")
    import onnxruntime as ort
    from ai_edge_litert.interpreter import Interpreter

    from edgekit.conversion.pipeline import convert

    calib = tmp_path / "calib.npy"
    np.save(calib, x)
    run = convert(src, "tflite", "fp32", calib=str(calib), calib_size=8, val_size=16, out=tmp_path / "out")
    (art,) = run.artifacts
    assert art.status != "failed", art.failure
    it = Interpreter(str(tmp_path / "out" / art.path))
    it.allocate_tensors()
    sess = ort.InferenceSession(str(src))
    for i in range(4):
        it.set_tensor(it.get_input_details()[0]["index"], x[i:i + 1].transpose(0, 2, 3, 1).copy())
        it.invoke()
        np.testing.assert_allclose(it.get_tensor(it.get_output_details()[0]["index"]),
                                   sess.run(None, {"x": x[i:i + 1]})[0], atol=1e-4)
    assert art.fidelity is not None and art.fidelity.passed
    return [int(d) for d in it.get_output_details()[0]["shape"]]
