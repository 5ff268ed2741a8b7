"""Small real TensorFlow models for the TFLite recipe and Edge TPU fix tests, one pattern each, written as
SavedModels with a static [1, 16, 16, 3] input (what edgekit's TFLite step makes of any source)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

SHAPE = (1, 16, 16, 3)


def _weights(seed: int, spread: float, head_spread: float) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((3, 3, 3, 8)) * 0.3).astype(np.float32)  # HWIO
    b1 = (rng.standard_normal(8) * 0.1).astype(np.float32)
    dw = (rng.standard_normal((3, 3, 8, 1)) * 0.5).astype(np.float32)
    w1[..., [0, 5]] *= spread  # two channels SPREAD times wider, the depthwise weights reading them smaller
    b1[[0, 5]] *= spread
    dw[:, :, [0, 5], :] /= spread
    w3 = (rng.standard_normal((1, 1, 8, 16)) * 0.4).astype(np.float32)
    wg = (rng.standard_normal((16, 10)) * 0.5).astype(np.float32)
    w3[..., [0, 7]] *= head_spread  # the same problem at the classifier's input
    wg[[0, 7]] /= head_spread
    return {"w1": w1, "b1": b1, "dw": dw, "w3": w3, "wg": wg,
            "wf": (rng.standard_normal((16 * 8 * 8, 10)) * 0.05).astype(np.float32),
            "wp": (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)}


def build(path: Path, pattern: str = "plain", spread: float = 1.0, seed: int = 0, head_spread: float = 1.0) -> Path:
    """PATTERN: plain (conv, depthwise, 1x1 conv, GAP, dense; SPREAD gives the channel-range problem after the
    first conv, HEAD_SPREAD between the last conv and the classifier), hard_swish (the same with hard-swish
    activations), transpose_fc (an NCHW flatten before the dense layer), padv2 (a MaxPool padded with the
    float minimum after a ReLU), fc4d (a pointwise dense layer on the 4-D map, ConvNeXt's MLP), fc3d (the same on
    the map as 256 tokens), gelu (a 1x1 conv and GELU after the last conv), neg and square (a branch through
    those ops added to the last conv's output), mask_fill (a channel softmax with one channel masked by -1e9),
    div_zero (the map divided by a ReLU'd copy of itself plus 1e-9: a billion times it wherever that is 0), grown
    (eight 1x1 convs each growing the activations tenfold, to about 1e9: a range the model computes itself)."""
    import tensorflow as tf

    w = {k: tf.constant(v) for k, v in _weights(seed, spread, head_spread).items()}

    def act(x: tf.Tensor) -> tf.Tensor:
        if pattern == "relu6":
            return tf.nn.relu6(x)
        return x * tf.nn.relu6(x + 3.0) / 6.0 if pattern == "hard_swish" else tf.nn.relu(x)

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec(SHAPE, tf.float32, name="x")])
        def __call__(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
            h = act(tf.nn.conv2d(x, w["w1"], 1, "SAME") + w["b1"])
            if pattern == "padv2":
                h = tf.pad(h, [[0, 0], [1, 1], [1, 1], [0, 0]], constant_values=np.finfo(np.float32).min)
                h = tf.nn.max_pool2d(h, 3, 1, "VALID")
            h = act(tf.nn.depthwise_conv2d(h, w["dw"], [1, 1, 1, 1], "SAME"))
            h = act(tf.nn.conv2d(h, w["w3"], 1, "SAME"))
            if pattern == "fc4d":  # a constant right operand: the converter writes FULLY_CONNECTED, keep_num_dims
                h = tf.nn.relu(tf.matmul(h, w["wp"]))
            if pattern == "fc3d":  # the same on the map as a sequence of 256 tokens
                h = tf.reshape(tf.nn.relu(tf.matmul(tf.reshape(h, [1, 256, 16]), w["wp"])), [1, 16, 16, 16])
            if pattern in ("neg", "square"):  # float in an int8 model: the quantizer has neither in int8
                t = tf.tanh(tf.nn.conv2d(h, w["wp"][None, None], 1, "SAME"))
                h = h + (tf.negative(t) * t if pattern == "neg" else tf.square(t))
            if pattern == "mask_fill":  # attention's mask: -1e9 where a channel must not count
                h = tf.nn.softmax(h + tf.constant([-1e9] + [0.0] * 15, tf.float32), axis=-1)
            if pattern == "div_zero":
                h = h / (tf.nn.relu(h - 0.5) + 1e-9)
            if pattern == "grown":
                for _ in range(8):
                    h = tf.nn.conv2d(h, w["wp"][None, None] * 10.0, 1, "SAME")
            if pattern == "gelu":
                h = tf.nn.gelu(tf.nn.conv2d(h, w["wp"][None, None], 1, "SAME"), approximate=False)
            if pattern == "transpose_fc":
                h = tf.nn.max_pool2d(h, 2, 2, "VALID")
                flat = tf.reshape(tf.transpose(h, [0, 3, 1, 2]), [1, -1])  # NCHW order, as from PyTorch
                return {"y": tf.matmul(flat, w["wf"])}
            return {"y": tf.matmul(tf.reduce_mean(h, axis=[1, 2]), w["wg"])}

    m = Model()
    tf.saved_model.save(m, str(path), signatures={"serving_default": m.__call__})
    return path


def images(n: int = 96, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.random((n, 8, 8, 3)).astype(np.float32)
    return np.ascontiguousarray(x.repeat(2, axis=1).repeat(2, axis=2))


def squash(path: Path, seed: int = 0) -> Path:
    """onnx_models.squash as a SavedModel (NHWC): 1x1 conv -> tanh -> 1x1 conv, the same weights."""
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    w1 = tf.constant((rng.standard_normal((8, 3, 1, 1)) * 0.5).astype(np.float32).transpose(2, 3, 1, 0))  # HWIO
    w2 = tf.constant((rng.standard_normal((4, 8, 1, 1)) * 0.5).astype(np.float32).transpose(2, 3, 1, 0))

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec((1, 16, 16, 3), tf.float32, name="x")])
        def __call__(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
            return {"y": tf.nn.conv2d(tf.tanh(tf.nn.conv2d(x, w1, 1, "SAME")), w2, 1, "SAME")}

    m = Model()
    tf.saved_model.save(m, str(path), signatures={"serving_default": m.__call__})
    return path


def relu_0_to_1(tf: Any, folder: Path) -> bytes:
    """A float .tflite ending in RELU_0_TO_1 (the converter writes that op only from onnx2tf's graphs: PaddleOCR's
    hard sigmoids), made by hand: MINIMUM(RELU(t), 1) replaced by the one op, on a (1, 8, 8, 4) input."""
    from edgekit.tflite.flatbuffer import FlatModel

    class Clip(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec((1, 8, 8, 4), tf.float32)])
        def __call__(self, x):  # noqa: ANN001, ANN204
            return {"y": tf.maximum(tf.minimum(tf.tanh(x) * 2.0 + x, 1.0), 0.0)}

    m = Clip()
    tf.saved_model.save(m, str(folder / "clip"), signatures={"serving_default": m.__call__})
    f = FlatModel(tf.lite.TFLiteConverter.from_saved_model(str(folder / "clip")).convert())
    assert [f.name(k) for k in range(len(f.sg.operators))][-2:] == ["MINIMUM", "RELU"]
    lo, hi = f.sg.operators[-2], f.sg.operators[-1]
    f.sg.operators[-2:] = [f.make_op("RELU_0_TO_1", [int(lo.inputs[0])], [int(hi.outputs[0])])]
    return f.to_bytes()

