"""16-bit activations too small for LiteRT's fused ReLU6 (edgekit.quantize.tflite.int16_bounds): the 16x8 model of
a layer whose ReLU6 output stays under 9.2e-5 fails to prepare in LiteRT; with its step raised it loads and keeps the
float model's outputs."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # TensorFlow: a float model and its 16x8 conversion (a few seconds)


def _sixteen_by_eight(x: np.ndarray) -> tuple[bytes, np.ndarray]:
    """(the 16x8 .tflite, the float outputs on X) of conv 3x3 (ReLU6, outputs under 1e-4) -> conv 1x1 (x 2e4)."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    w1 = tf.constant(rng.normal(0, 3e-6, (3, 3, 3, 8)).astype(np.float32))
    b1 = tf.constant(np.full(8, 1e-5, np.float32))
    w2 = tf.constant(rng.normal(0, 2e4, (1, 1, 8, 4)).astype(np.float32))
    b2 = tf.constant(rng.normal(0, 0.1, 4).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 3], tf.float32)])
    def f(v: tf.Tensor) -> tf.Tensor:
        h = tf.nn.relu6(tf.nn.conv2d(v, w1, 1, "SAME") + b1)
        return tf.nn.conv2d(h, w2, 1, "SAME") + b2

    conv = tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()], None)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([x[i:i + 1]] for i in range(len(x)))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    return conv.convert(), np.concatenate([f(x[i:i + 1]).numpy() for i in range(len(x))])


def _run(blob: bytes, x: np.ndarray) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=blob)
    it.allocate_tensors()
    i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    out = []
    for k in range(len(x)):
        it.set_tensor(i, x[k:k + 1])
        it.invoke()
        out.append(it.get_tensor(o).copy())
    return np.concatenate(out)


def test_a_tiny_relu6_range_is_raised_so_litert_runs_the_model() -> None:
    from edgekit.quantize.tflite.int16_bounds import HEADROOM, raise_small_steps
    from edgekit.tflite.model import read_tflite

    x = np.random.default_rng(1).uniform(-1, 1, (32, 8, 8, 3)).astype(np.float32)
    blob, y_ref = _sixteen_by_eight(x)
    with pytest.raises(RuntimeError, match="no_integer_overflow_from_quantization"):
        _run(blob, x)  # LiteRT's own refusal, as the MobileNetV2 gave it
    fixed, raised = raise_small_steps(blob)
    assert raised is not None and raised.tensors == 1 and raised.biases == 1
    assert raised.smallest < 6 / 2 ** 31 and raised.step == pytest.approx(6 / HEADROOM)
    y = _run(fixed, x)
    cos = float((y * y_ref).sum() / np.linalg.norm(y) / np.linalg.norm(y_ref))
    assert cos > 0.9999 and np.abs(y - y_ref).max() < 0.01 * np.abs(y_ref).max()
    m = read_tflite_bytes(fixed, read_tflite)
    conv = [op for op in m.ops if op.op == "CONV_2D"]
    assert {m.tensors[op.outputs[0]].dtype for op in conv} == {"int16"}  # still 16x8, nothing left in float
    assert raise_small_steps(fixed)[1] is None  # nothing left to raise


def read_tflite_bytes(blob: bytes, read: object) -> object:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.tflite"
        p.write_bytes(blob)
        return read(p)  # type: ignore[operator]
