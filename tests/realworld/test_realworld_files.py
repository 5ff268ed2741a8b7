"""Issue 16: the model files users have, built here and converted for real (tiny models, small data).

- a Keras 2 model (tf_keras, DepthwiseConv2D: the layer Keras 3 cannot deserialize from a Keras 2
  config) saved as .h5 and as .keras;
- a channels-last ONNX as tf2onnx writes a Keras model (Transpose to NCHW before the first Conv);
- an int8 .tflite converted to the Edge TPU target;
- a real `edgekit convert` from a fresh, empty working folder: nothing written there, no vendor
  log line in its output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgekit.conversion.pipeline import convert
from edgekit.core.errors import UnsupportedModel

pytestmark = pytest.mark.slow
tf = pytest.importorskip("tensorflow")
HW = 24


def _keras2_model():
    tf_keras = pytest.importorskip("tf_keras")
    tf_keras.utils.set_random_seed(0)
    inp = tf_keras.Input((HW, HW, 3), name="image")
    x = tf_keras.layers.Conv2D(8, 3, strides=2, padding="same")(inp)
    x = tf_keras.layers.BatchNormalization()(x)
    x = tf_keras.layers.ReLU(6.0)(x)
    x = tf_keras.layers.DepthwiseConv2D(3, padding="same")(x)
    x = tf_keras.layers.Conv2D(16, 1, activation="relu")(x)
    x = tf_keras.layers.GlobalAveragePooling2D()(x)
    return tf_keras.Model(inp, tf_keras.layers.Dense(5)(x), name="mobilenetish")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import keras

    from edgekit.steps.keras_to_onnx import tf_function_to_onnx

    d = tmp_path_factory.mktemp("realworld")
    m2 = _keras2_model()
    m2.save(d / "keras2.h5")
    m2.save(d / "keras2.keras")
    m2.save(d / "keras2_savedmodel")  # tf_keras's SavedModel: read by the SavedModel loader, no Keras at all
    tf_keras = pytest.importorskip("tf_keras")
    inp = tf_keras.Input((4,))
    lam = tf_keras.Model(inp, tf_keras.layers.Lambda(lambda t: t * 2.0, name="twice")(inp))
    lam.save(d / "lambda2.h5")
    # a Keras 3 model as tf2onnx writes it: NHWC input, a Transpose to NCHW in front of the first Conv
    keras.utils.set_random_seed(1)
    k_in = keras.Input((HW, HW, 3), name="image")
    x = keras.layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")(k_in)
    x = keras.layers.DepthwiseConv2D(3, padding="same")(x)
    x = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(16, 1, activation="relu")(x))
    m3 = keras.Model(k_in, keras.layers.Dense(5)(x))
    spec = tf.TensorSpec([None, HW, HW, 3], tf.float32, name="image")
    tf_function_to_onnx(tf.function(lambda t: m3(t, training=False), input_signature=[spec]), spec, 13,
                        d / "nhwc.onnx", "test")
    rng = np.random.default_rng(0)
    np.save(d / "calib.npy", rng.random((24, HW, HW, 3), dtype=np.float32))
    return {"dir": d, "h5": d / "keras2.h5", "keras": d / "keras2.keras", "savedmodel": d / "keras2_savedmodel",
            "lambda": d / "lambda2.h5",
            "onnx": d / "nhwc.onnx", "calib": d / "calib.npy"}


def _ok(result, n: int) -> None:
    assert len(result.artifacts) == n and not result.failed
    for art in result.artifacts:
        assert art.fidelity is not None and art.fidelity.cosine > 0.999, art.path


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """These files are the test's own: load and validate them in this process (no child start-ups)."""
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")


@pytest.mark.parametrize("kind", ["h5", "keras", "savedmodel"])
def test_a_keras2_file_converts_through_tf_keras(files: dict[str, Path], tmp_path: Path, kind: str) -> None:
    # issue 16: the .h5 failed with "Error when deserializing class 'DepthwiseConv2D' ... truncated, corrupt";
    # the tf_keras .keras with "Could not locate class 'Functional'"
    targets = {"h5": "tflite,onnx", "keras": "onnx", "savedmodel": "tflite"}[kind]
    result = convert(files[kind], targets, "fp32", out=tmp_path / "out", val_size=16)
    _ok(result, len(targets.split(",")))
    assert result.manifest.source.kind == kind


def test_a_keras2_lambda_is_refused_as_a_keras3_one_is(files: dict[str, Path]) -> None:
    from edgekit.sources.base import LoadOptions
    from edgekit.sources.keras import load

    with pytest.raises(UnsupportedModel, match="Lambda layer 'twice'") as info:
        load(files["lambda"], LoadOptions(), "h5")
    assert "--trust-model" in (info.value.hint or "")


def test_a_keras2_file_that_tf_keras_cannot_read_says_who_wrote_it(files: dict[str, Path], tmp_path: Path) -> None:
    import h5py

    broken = tmp_path / "broken2.h5"
    broken.write_bytes(files["h5"].read_bytes())
    with h5py.File(broken, "r+") as f:  # weights of another shape: tf_keras fails while loading them
        del f["model_weights"]
    from edgekit.sources.base import LoadOptions
    from edgekit.sources.keras import load

    with pytest.raises(UnsupportedModel, match=r"written by Keras 2\.\d+") as info:
        load(broken, LoadOptions(), "h5")
    assert "SavedModel" in (info.value.hint or "") and "model.save('model.keras')" not in (info.value.hint or "")


def test_a_channels_last_onnx_from_tf2onnx_converts_to_every_target(files: dict[str, Path], tmp_path: Path) -> None:
    result = convert(files["onnx"], "onnx,tflite,edgetpu", "fp32", out=tmp_path / "out", calib=str(files["calib"]),
                     calib_size=16, val_size=8)
    assert result.manifest.source.layout == "NHWC"
    assert {a.path for a in result.artifacts} == {"nhwc.fp32.onnx", "nhwc.fp32.tflite", "nhwc.int8-uint8io.tflite"}
    assert not result.failed
    fp32 = [a for a in result.artifacts if a.precision == "fp32"]
    assert all(a.fidelity.cosine > 0.9999 for a in fp32)
    tflite = next(a for a in fp32 if a.format == "tflite")
    assert tflite.inputs[0].shape == [1, HW, HW, 3]  # the NHWC input kept as it is
    int8 = next(a for a in result.artifacts if a.precision == "int8")
    assert int8.extra["edgetpu"]["ops"]  # the Edge TPU pre-flight ran on it


def test_an_int8_tflite_converts_to_the_edge_tpu_target(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "edgetpu"))
    from tflite_builder import conv_chain

    source = conv_chain(tmp_path / "made_elsewhere.tflite")  # int8 CONV_2D x2, as a converter writes them
    result = convert(source, "edgetpu", "int8", out=tmp_path / "out", val_size=8)
    (art,) = [a for a in result.artifacts if a.format == "tflite"]
    assert art.precision == "int8" and art.ok and art.fidelity.cosine > 0.9999
    assert art.extra["edgetpu"]["ops"] and result.manifest.source.kind == "tflite"
    assert result.not_compiled or any(a.format == "edgetpu" for a in result.artifacts)


def test_a_default_run_writes_nothing_outside_out_and_shows_no_vendor_log(files: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    from edgekit.core.vendorlog import is_vendor_log

    cwd = tmp_path / "fresh"
    cwd.mkdir()
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items()
           if k not in ("EDGEKIT_DEBUG", "EDGEKIT_VERBOSE", "TF_CPP_MIN_LOG_LEVEL", "EDGEKIT_NO_ISOLATION")}
    # the Keras 2 .h5 (no onnx2tf: the quicker route to both int8 quantizers, ONNX's writes scratch files)
    cmd = [str(Path(sys.executable).parent / "edgekit"), "convert", str(files["h5"]), "--target", "onnx,tflite",
           "-q", "int8", "--calib", str(files["calib"]), "--calib-size", "16", "--val-size", "8", "--out", str(out)]
    run = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == ["keras2.int8.onnx", "keras2.int8.tflite", "manifest.json"]
    assert list(cwd.iterdir()) == []  # no sym_shape_infer_temp.onnx, no onnx2tf leftovers
    noise = [ln for ln in (run.stdout + run.stderr).splitlines() if is_vendor_log(ln)]
    assert noise == []
