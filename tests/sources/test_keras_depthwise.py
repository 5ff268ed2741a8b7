"""Keras's depthwise convolutions written as grouped Conv2D run by TensorFlow's depthwise kernel for the reference.

The same outputs as Keras's own (XLA) path, a DepthwiseConv2dNative in the traced graph instead of an XLA call,
everything else through Keras, and Keras left as it was.
"""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

from edgekit.sources.keras import _forward  # noqa: E402
from edgekit.sources.keras_depthwise import depthwise_or_none, grouped_convs_as_depthwise  # noqa: E402

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="Keras on TensorFlow only")


def _model() -> keras.Model:
    keras.utils.set_random_seed(0)
    inp = keras.Input((12, 12, 4))
    x = keras.layers.Conv2D(4, 7, padding="same", groups=4, name="dw7")(inp)  # ConvNeXt's depthwise 7x7
    x = keras.layers.Conv2D(8, 3, strides=2, padding="valid", groups=4, name="dw_m2_s2")(x)  # multiplier 2
    x = keras.layers.Conv2D(8, 3, padding="same", dilation_rate=2, groups=8, name="dw_dil")(x)
    x = keras.layers.Conv2D(8, 1, groups=2, name="grouped_4_per_group")(x)  # not depthwise: Keras's own path
    return keras.Model(inp, keras.layers.GlobalAveragePooling2D()(x))


def test_the_reference_equals_keras_own_path_and_keras_is_left_as_it_was() -> None:
    from keras.src.backend.tensorflow import nn as keras_tf_nn

    model = _model()
    x = np.random.default_rng(0).random((5, 12, 12, 4), dtype=np.float32)
    before = keras_tf_nn.conv
    got = _forward(model, "float32", [None, 12, 12, 4])(x).numpy()
    assert keras_tf_nn.conv is before
    np.testing.assert_allclose(got, model(x, training=False).numpy(), rtol=0, atol=2e-5)


def test_the_trace_holds_depthwise_kernels_where_a_group_is_one_channel() -> None:
    model = _model()
    spec = tf.TensorSpec([None, 12, 12, 4])
    with grouped_convs_as_depthwise():
        graph = tf.function(lambda t: model(t, training=False), input_signature=[spec]).get_concrete_function().graph
    ops = [op.type for op in graph.get_operations()]
    assert ops.count("DepthwiseConv2dNative") == 3
    plain = tf.function(lambda t: model(t, training=False), input_signature=[spec]).get_concrete_function().graph
    assert "DepthwiseConv2dNative" not in [op.type for op in plain.get_operations()]  # Keras's own: XLA calls


@pytest.mark.parametrize(("kernel", "strides", "fmt", "dilation"), [
    ((3, 3, 2, 8), 1, "channels_last", 1),  # two channels per group
    ((3, 3, 1, 8), 1, "channels_first", 1),
    ((3, 3, 1, 8), (1, 2), "channels_last", 1),  # unequal strides: the depthwise kernel has none
    ((3, 3, 1, 8), 2, "channels_last", 2),  # strides with dilation
])
def test_what_is_not_a_plain_depthwise_goes_through_keras(kernel, strides, fmt, dilation) -> None:  # noqa: ANN001
    x = tf.zeros((1, 8, 8, 8))
    assert depthwise_or_none(tf, x, tf.zeros(kernel), strides, "same", fmt, dilation) is None
