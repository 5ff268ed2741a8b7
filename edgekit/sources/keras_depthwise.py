"""Keras's depthwise convolutions written as grouped Conv2D, run by TensorFlow's depthwise kernel for the reference.

Keras 3 on TensorFlow runs a convolution with groups inside a `tf.function(jit_compile=True)`, because
TensorFlow's CPU convolution cannot run groups (keras/src/backend/tensorflow/nn.py, `conv`). ConvNeXt's
depthwise 7x7 is such a layer (Conv2D(groups=channels)), and XLA's CPU code for it is slow: one 7x7 layer on
6 x 40 x 40 x 96 took 167 ms against 2.5 ms for the same product by `tf.nn.depthwise_conv2d`, and Keras
ConvNeXtTiny's reference outputs (300 samples at 160 x 160) took 32 s of a 235 s conversion, against 7.5 s
for transformers' ConvNeXt-T in PyTorch.

A grouped convolution with one input channel per group is exactly a depthwise convolution: output channel
c * m + j reads input channel c through filter j, so the kernel (kh, kw, 1, C * m) is the depthwise kernel
(kh, kw, C, m) reshaped. While `grouped_convs_as_depthwise()` is active (while edgekit traces the model
for its reference outputs) the backend's `conv` computes those layers that way; any other convolution
(several channels per group, channels-first, unequal strides, strides with dilation, other ranks) goes
through Keras's own code. The swap is undone on exit: the user's Keras is left as it was, and what
converts the model (tf2onnx, the SavedModel export) never sees it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


def _pair(v: Any) -> tuple[int, int] | None:
    if isinstance(v, int):
        return v, v
    v = tuple(int(x) for x in v)
    return (v[0], v[1]) if len(v) == 2 else None


def depthwise_or_none(tf: Any, inputs: Any, kernel: Any, strides: Any, padding: str, data_format: str | None,
                      dilation_rate: Any) -> Any:
    """The grouped convolution as tf.nn.depthwise_conv2d where it is one (see the module docstring), else None."""
    if data_format not in (None, "channels_last") or len(inputs.shape) != 4 or len(kernel.shape) != 4:
        return None
    channels, per_group, filters = inputs.shape[-1], kernel.shape[-2], kernel.shape[-1]
    if channels is None or per_group != 1 or channels == 1 or filters % channels or str(padding).lower() not in (
            "valid", "same"):
        return None
    s, d = _pair(strides), _pair(dilation_rate)
    if s is None or d is None or s[0] != s[1] or (max(s) > 1 and max(d) > 1):
        return None
    dw = tf.reshape(kernel, (kernel.shape[0], kernel.shape[1], channels, filters // channels))
    return tf.nn.depthwise_conv2d(inputs, dw, strides=(1, s[0], s[1], 1), padding=str(padding).upper(), dilations=d)


@contextlib.contextmanager
def grouped_convs_as_depthwise() -> Iterator[None]:
    """While inside, Keras's TF backend computes one-channel-per-group convolutions with the depthwise kernel."""
    try:
        import tensorflow as tf
        from keras.src import backend
        from keras.src.backend.tensorflow import nn as keras_tf_nn
    except ImportError:  # another Keras layout or backend: nothing to swap
        yield
        return
    original = keras_tf_nn.conv

    def conv(inputs: Any, kernel: Any, strides: Any = 1, padding: str = "valid", data_format: str | None = None,
             dilation_rate: Any = 1) -> Any:
        fmt = backend.standardize_data_format(data_format)
        out = depthwise_or_none(tf, inputs, kernel, strides, padding, fmt, dilation_rate)
        return out if out is not None else original(inputs, kernel, strides, padding, data_format, dilation_rate)

    keras_tf_nn.conv = conv
    try:
        yield
    finally:
        keras_tf_nn.conv = original


__all__ = ["depthwise_or_none", "grouped_convs_as_depthwise"]
