"""A small YOLOv8-style detector built with onnx.helper (no torch, milliseconds): two levels, a DFL box branch and
a sigmoid class branch per level, and Ultralytics' decode (DFL softmax and expectation, anchors, strides, concat)
into one (1, 4 + C, A) output of pixel boxes beside [0, 1] scores, as models/yolo.py exports it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

REG_MAX = 16
SIZE = 32
LEVELS = ((4, 8), (8, 4))  # (stride, side of the feature map)
# the decode's nodes, by the names this builder gives them: what the structural walk must find (and nothing else)
DECODE = ("cat_l0", "flat_l0", "cat_l1", "flat_l1", "cat_levels", "split", "sigmoid", "dfl_reshape",
          "dfl_transpose", "dfl_softmax", "dfl_conv", "dfl_flat", "lt", "rb", "x1y1", "x2y2", "xy_sum", "xy",
          "wh", "xywh", "scaled", "output")
HEAD_LAYERS = ("box_l0", "cls_l0", "box_l1", "cls_l1")


def dfl_detector(path: Path, classes: int = 3, seed: int = 0, score_bias: float = -1.0) -> Path:
    """The detector at PATH: input x (1, 3, 32, 32), output y (1, 4 + CLASSES, 80); SCORE_BIAS sets how many
    anchors score above the 0.25 cut on random images (-1.0: about a quarter)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits: dict[str, np.ndarray] = {}

    def w(name: str, shape: tuple[int, ...], scale: float) -> str:
        inits[name] = (rng.standard_normal(shape) * scale).astype(np.float32)
        return name

    def const(name: str, value: np.ndarray) -> str:
        inits[name] = np.asarray(value)
        return name

    no = 4 * REG_MAX + classes
    nodes = [helper.make_node("Conv", ["x", w("w_s1", (16, 3, 3, 3), 0.4), w("b_s1", (16,), 0.1)], ["s1"],
                              name="stem1", pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["s1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", w("w_s2", (16, 16, 3, 3), 0.2), w("b_s2", (16,), 0.1)], ["f0"],
                              name="stem2", pads=[1, 1, 1, 1], strides=[2, 2]),  # stride 4: 8x8
             helper.make_node("Relu", ["f0"], ["p0"], name="relu2"),
             helper.make_node("Conv", ["p0", w("w_s3", (16, 16, 3, 3), 0.2), w("b_s3", (16,), 0.1)], ["f1"],
                              name="stem3", pads=[1, 1, 1, 1], strides=[2, 2]),  # stride 8: 4x4
             helper.make_node("Relu", ["f1"], ["p1"], name="relu3")]
    anchors, strides = [], []
    for k, (stride, side) in enumerate(LEVELS):
        nodes += [
            helper.make_node("Conv", [f"p{k}", w(f"w_box{k}", (4 * REG_MAX, 16, 1, 1), 0.5),
                                      const(f"b_box{k}", np.ones(4 * REG_MAX, np.float32))], [f"box{k}"],
                             name=f"box_l{k}"),
            helper.make_node("Conv", [f"p{k}", w(f"w_cls{k}", (classes, 16, 1, 1), 0.5),
                                      const(f"b_cls{k}", np.full(classes, score_bias, np.float32))], [f"cls{k}"],
                             name=f"cls_l{k}"),
            helper.make_node("Concat", [f"box{k}", f"cls{k}"], [f"lvl{k}"], name=f"cat_l{k}", axis=1),
            helper.make_node("Reshape", [f"lvl{k}", const("shape_lvl", np.array([1, no, -1], np.int64))],
                             [f"flat{k}"], name=f"flat_l{k}"),
        ]
        grid = np.arange(side, dtype=np.float32) + 0.5
        gy, gx = np.meshgrid(grid, grid, indexing="ij")
        anchors.append(np.stack([gx.ravel(), gy.ravel()]))
        strides.append(np.full(side * side, stride, np.float32))
    a = sum(side * side for _, side in LEVELS)
    nodes += [
        helper.make_node("Concat", ["flat0", "flat1"], ["all"], name="cat_levels", axis=2),
        helper.make_node("Split", ["all", const("split_sizes", np.array([4 * REG_MAX, classes], np.int64))],
                         ["box", "cls"], name="split", axis=1),
        helper.make_node("Sigmoid", ["cls"], ["scores"], name="sigmoid"),
        helper.make_node("Reshape", ["box", const("shape_dfl", np.array([1, 4, REG_MAX, a], np.int64))],
                         ["dfl_r"], name="dfl_reshape"),
        helper.make_node("Transpose", ["dfl_r"], ["dfl_t"], name="dfl_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Softmax", ["dfl_t"], ["dfl_p"], name="dfl_softmax", axis=1),
        helper.make_node("Conv", ["dfl_p", const("w_dfl", np.arange(REG_MAX, dtype=np.float32).reshape(
            1, REG_MAX, 1, 1))], ["dfl_e"], name="dfl_conv"),
        helper.make_node("Reshape", ["dfl_e", const("shape_dist", np.array([1, 4, a], np.int64))], ["dist"],
                         name="dfl_flat"),
        helper.make_node("Slice", ["dist", const("s0", np.array([0], np.int64)), const("s2", np.array([2], np.int64)),
                                   const("ax1", np.array([1], np.int64))], ["lt_d"], name="lt"),
        helper.make_node("Slice", ["dist", "s2", const("s4", np.array([4], np.int64)), "ax1"], ["rb_d"], name="rb"),
        helper.make_node("Sub", [const("anchors", np.concatenate(anchors, 1)[None]), "lt_d"], ["p1_"], name="x1y1"),
        helper.make_node("Add", ["anchors", "rb_d"], ["p2_"], name="x2y2"),
        helper.make_node("Add", ["p1_", "p2_"], ["c2"], name="xy_sum"),
        helper.make_node("Div", ["c2", const("two", np.array(2.0, np.float32))], ["cxy"], name="xy"),
        helper.make_node("Sub", ["p2_", "p1_"], ["wh_"], name="wh"),
        helper.make_node("Concat", ["cxy", "wh_"], ["dbox"], name="xywh", axis=1),
        helper.make_node("Mul", ["dbox", const("strides", np.concatenate(strides)[None, None])], ["pix"],
                         name="scaled"),
        helper.make_node("Concat", ["pix", "scores"], ["y"], name="output", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "dfl_detector", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4 + classes, a])],
        [numpy_helper.from_array(v, n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    entry = model.metadata_props.add()
    entry.key, entry.value = "task", "detect"
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


def canvases(n: int = 64, seed: int = 1) -> np.ndarray:
    """N random images in [0, 1] with a few bright squares: inputs the detector answers with varied scores."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 0.2, (n, 3, SIZE, SIZE)).astype(np.float32)
    for i in range(n):
        for _ in range(rng.integers(1, 4)):
            s = int(rng.integers(4, 12))
            r, c = rng.integers(0, SIZE - s, 2)
            x[i, :, r:r + s, c:c + s] = rng.uniform(0.5, 1.0, (3, 1, 1))
    return x
