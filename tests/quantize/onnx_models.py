"""Small real ONNX CNNs built with onnx.helper for the int8 recovery tests (no torch, milliseconds to build)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def conv_chain(path: Path, spread: float = 1.0, relu6: bool = False, seed: int = 0) -> Path:
    """Conv 3->8 3x3 -> act -> depthwise 3x3 -> act -> Conv 8->16 1x1 -> act -> GAP -> Gemm 16->10.

    SPREAD > 1 builds the channel-range problem of the equalization papers: channel 0 of the first conv is
    scaled by SPREAD and the depthwise weights reading it by 1/SPREAD, so the float function is the same but
    the tensor between them holds one channel SPREAD times wider than the rest.
    """
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(8).astype(np.float32) * 0.1
    w2 = rng.standard_normal((8, 1, 3, 3)).astype(np.float32) * 0.5
    b2 = rng.standard_normal(8).astype(np.float32) * 0.1
    w3 = rng.standard_normal((16, 8, 1, 1)).astype(np.float32) * 0.4
    b3 = rng.standard_normal(16).astype(np.float32) * 0.1
    wf = rng.standard_normal((10, 16)).astype(np.float32) * 0.5
    bf = np.zeros(10, np.float32)
    for k in (0, 5):  # two channels far wider than the rest, the same function
        w1[k] *= spread
        b1[k] *= spread
        w2[k] /= spread
    act = "Clip" if relu6 else "Relu"

    def act_node(i: str, o: str) -> object:
        return helper.make_node(act, [i, "c0", "c6"] if relu6 else [i], [o], name=f"act_{o}")

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["h1"], name="conv1", pads=[1, 1, 1, 1]),
        act_node("h1", "a1"),
        helper.make_node("Conv", ["a1", "w2", "b2"], ["h2"], name="dw2", pads=[1, 1, 1, 1], group=8),
        act_node("h2", "a2"),
        helper.make_node("Conv", ["a2", "w3", "b3"], ["h3"], name="pw3"),
        act_node("h3", "a3"),
        helper.make_node("GlobalAveragePool", ["a3"], ["p"], name="gap"),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1),
    ]
    inits = [numpy_helper.from_array(v, n) for n, v in
             (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w3", w3), ("b3", b3), ("wf", wf), ("bf", bf))]
    if relu6:
        inits += [numpy_helper.from_array(np.array(0, np.float32), "c0"),
                  numpy_helper.from_array(np.array(6, np.float32), "c6")]
    return save_checked(path, "chain", nodes, inits, [1, 3, 16, 16], [1, 10])


def save_checked(path: Path, name: str, nodes: list, inits: list, x_shape: list[int], y_shape: list[int]) -> Path:
    """The graph of NODES and INITS (float input x of X_SHAPE, output y of Y_SHAPE) as a checked opset-17 model."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def images(n: int = 64, seed: int = 1) -> np.ndarray:
    """N smooth random 3x16x16 images in [0, 1] (blurred noise: neighbouring pixels correlate, as in photos)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3, 8, 8)).astype(np.float32)
    return np.ascontiguousarray(x.repeat(2, axis=2).repeat(2, axis=3))


def head_spread(path: Path, spread: float = 100.0, seed: int = 0) -> Path:
    """`conv_chain` with the channel-range problem at the classifier's input instead: two channels of the
    last conv SPREAD times wider, the classifier's weights for them SPREAD times smaller (same function).
    The layers involved (the last conv and the classifier) hold about 30% of the MACs."""
    import onnx
    from onnx import numpy_helper

    conv_chain(path, 1.0, seed=seed)
    model = onnx.load(str(path))
    inits = {i.name: i for i in model.graph.initializer}
    w3, b3, wf = (numpy_helper.to_array(inits[n]).copy() for n in ("w3", "b3", "wf"))
    for k in (0, 7):
        w3[k] *= spread
        b3[k] *= spread
        wf[:, k] /= spread
    for name, value in (("w3", w3), ("b3", b3), ("wf", wf)):
        inits[name].CopyFrom(numpy_helper.from_array(value, name))
    onnx.save(model, str(path))
    return path


def weight_outliers(path: Path, factor: float = 30.0, seed: int = 0) -> Path:
    """`conv_chain` with one input weight of every output channel of the three convolutions FACTOR times larger:
    per-channel weight scales are set by that one weight, so the others keep few levels (7-bit weights lose
    what 8-bit ones keep)."""
    import onnx
    from onnx import numpy_helper

    conv_chain(path, 1.0, seed=seed)
    model = onnx.load(str(path))
    for init in model.graph.initializer:
        if init.name in ("w1", "w2", "w3"):
            w = numpy_helper.to_array(init).copy()
            flat = w.reshape(w.shape[0], -1)
            flat[:, 0] *= factor
            init.CopyFrom(numpy_helper.from_array(flat.reshape(w.shape), init.name))
    onnx.save(model, str(path))
    return path


def squash(path: Path, seed: int = 0) -> Path:
    """Conv 3->8 1x1 -> Tanh -> Conv 8->4 1x1, fed `heavy_tailed` inputs: the pre-activations' rare large values
    stretch MinMax's int8 step while tanh flattens them, the case clipping calibration statistics are for."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((8, 3, 1, 1)) * 0.5).astype(np.float32)
    w2 = (rng.standard_normal((4, 8, 1, 1)) * 0.5).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["h1"], name="conv1"),
             helper.make_node("Tanh", ["h1"], ["a1"], name="tanh1"),
             helper.make_node("Conv", ["a1", "w2"], ["y"], name="conv2")]
    graph = helper.make_graph(nodes, "squash", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])],
                              [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def heavy_tailed(n: int, seed: int = 0, layout: str = "NCHW") -> np.ndarray:
    """N 3x16x16 inputs of Student-t noise (3 degrees of freedom: a bulk near 0, rare values 10-30x wider)."""
    x = np.random.default_rng(seed).standard_t(3, (n, 3, 16, 16)).astype(np.float32)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1) if layout == "NHWC" else x)
