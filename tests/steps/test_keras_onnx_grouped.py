"""Keras 3 models with grouped convolutions and exact GELU export to ONNX (Keras ConvNeXtTiny's two blockers).

Keras's TF backend wraps a grouped Conv2D in an XLA-compiled function (a StatefulPartitionedCall tf2onnx cannot
convert), and its exact GELU is written with Erfc, which tf2onnx has no handler for. Both are checked on a tiny
model against Keras's own outputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("tf2onnx")
pytestmark = pytest.mark.slow  # a Keras model traced and converted by tf2onnx: seconds


def test_grouped_conv_and_exact_gelu_convert_with_the_same_values(tmp_path: Path) -> None:
    import onnx

    from edgekit.steps.keras_to_onnx import tf_function_to_onnx

    keras.utils.set_random_seed(0)
    inp = keras.Input((16, 16, 8))
    x = keras.layers.Conv2D(8, 3, padding="same", groups=8)(inp)  # ConvNeXt's depthwise, as Keras writes it
    x = keras.layers.Activation(lambda t: keras.activations.gelu(t, approximate=False))(x)
    x = keras.layers.Conv2D(16, 3, padding="same", groups=4)(x)
    model = keras.Model(inp, keras.layers.GlobalAveragePooling2D()(x))
    spec = tf.TensorSpec([None, 16, 16, 8], tf.float32, name="x")

    @tf.function(input_signature=[spec])
    def forward(t: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"out": model(t, training=False)}

    out = tf_function_to_onnx(forward, spec, 18, tmp_path / "m.onnx", "keras_to_onnx")
    proto = onnx.load(str(out))
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("Conv") == 2 and "Erf" in ops
    convs = [n for n in proto.graph.node if n.op_type == "Conv"]
    assert sorted(a.i for n in convs for a in n.attribute if a.name == "group") == [4, 8]
    xs = np.random.default_rng(0).random((2, 16, 16, 8), np.float32)
    got = ort.InferenceSession(str(out)).run(None, {proto.graph.input[0].name: xs})[0]
    np.testing.assert_allclose(got, model.predict(xs, verbose=0), atol=1e-5)
