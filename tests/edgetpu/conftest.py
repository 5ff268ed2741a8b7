"""Real int8 TFLite models for the Edge TPU tests, built once per session with TensorFlow.

Each is a small MNIST-shaped Keras CNN converted with TFLiteConverter and a representative
dataset, in the variants the issue names: integer I/O (maps fully), float I/O (QUANTIZE and
DEQUANTIZE left on the CPU), a dynamic batch, an unsupported op in the middle (LeakyReLU), and a
layout TRANSPOSE. The CNN has the op mix of the MNIST model whose real compiler logs are in
tests/fixtures/edgetpu (nrf20_mnist*), so prediction and compiler verdict can be compared.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "edgetpu"


def _cnn(keras, batch: int | None = 1, middle: Callable | None = None, permute: bool = False):
    inp = keras.Input((28, 28, 1), batch_size=batch)
    x = keras.layers.Conv2D(8, 3, activation="relu")(inp)
    x = keras.layers.MaxPooling2D()(x)
    if middle is not None:
        x = middle(x)
    x = keras.layers.Conv2D(16, 3, activation="relu")(x)
    x = keras.layers.MaxPooling2D()(x)
    if permute:
        x = keras.layers.Permute((3, 1, 2))(x)  # NHWC -> NCHW, as a layout conversion leaves it
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(32, activation="relu")(x)
    x = keras.layers.Dense(10, activation="softmax")(x)
    return keras.Model(inp, x)


def _convert(tf, model, path: Path, io: str) -> Path:
    rng = np.random.default_rng(0)

    def representative():
        for _ in range(16):
            yield [rng.random((1, 28, 28, 1), dtype=np.float32)]

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if io != "float32":
        conv.inference_input_type = getattr(tf, io)
        conv.inference_output_type = getattr(tf, io)
    with warnings.catch_warnings():  # "Statistics for quantized inputs were expected": int I/O, no stats given
        warnings.simplefilter("ignore", UserWarning)
        path.write_bytes(conv.convert())
    return path


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def tf_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> .tflite: int8io, uint8io, float_io, dynamic, leaky_middle, transpose."""
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    keras.utils.set_random_seed(0)
    d = tmp_path_factory.mktemp("edgetpu_models")
    leaky = keras.layers.LeakyReLU(negative_slope=0.1)
    return {
        "int8io": _convert(tf, _cnn(keras), d / "cnn_int8io.tflite", "int8"),
        "uint8io": _convert(tf, _cnn(keras), d / "cnn_uint8io.tflite", "uint8"),
        "float_io": _convert(tf, _cnn(keras), d / "cnn_float_io.tflite", "float32"),
        "dynamic": _convert(tf, _cnn(keras, batch=None), d / "cnn_dynamic.tflite", "int8"),
        "leaky_middle": _convert(tf, _cnn(keras, middle=leaky), d / "cnn_leaky.tflite", "int8"),
        "transpose": _convert(tf, _cnn(keras, permute=True), d / "cnn_transpose.tflite", "int8"),
    }
