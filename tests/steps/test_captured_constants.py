"""A Keras model whose layers keep constants outside their variables converts to a one-input ONNX model.

An adapted Normalization layer (as in keras.applications' EfficientNet) holds its mean and variance
as eager tensors that a tf.function captures. tf2onnx's from_function turned those captures into
extra graph inputs, and validation then failed with "Missing input(s)" (issue 8). Both routes that
go through tf2onnx are covered: Keras -> ONNX and SavedModel -> ONNX.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.conversion.options import ConvertOptions
from edgekit.sources.base import LoadOptions
from edgekit.steps.base import Intermediate, StepContext

keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")
pytest.importorskip("tf2onnx")
ort = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.slow  # TensorFlow traces and tf2onnx conversions: a few seconds each


@pytest.fixture(scope="module")
def normalized(tmp_path_factory: pytest.TempPathFactory):
    """(folder, Keras source, SavedModel source, samples) of a small CNN with an adapted Normalization layer."""
    from edgekit.sources.keras import load
    from edgekit.sources.savedmodel import load as load_sm

    d = tmp_path_factory.mktemp("captured")
    keras.utils.set_random_seed(0)
    samples = np.random.default_rng(0).random((16, 12, 12, 3), dtype=np.float32) * 255
    norm = keras.layers.Normalization(axis=-1, name="norm")
    norm.adapt(samples)
    inp = keras.Input((12, 12, 3), name="image")
    x = keras.layers.Conv2D(4, 3, activation="relu", name="conv")(norm(inp))
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    model = keras.Model(inp, keras.layers.Dense(3, name="scores")(x), name="normalized")
    model.save(d / "normalized.keras")
    model.export(str(d / "normalized_sm"), format="tf_saved_model", verbose=False)
    np.savez(d / "calib.npz", x=samples)
    return d, load(d / "normalized.keras", LoadOptions(), "keras"), load_sm(d / "normalized_sm", LoadOptions()), samples


def _ctx(work: Path, source, stem: str) -> StepContext:
    work.mkdir(parents=True, exist_ok=True)
    opts = ConvertOptions(targets=["onnx"], precisions=["fp32"], out_dir=work / "out")
    return StepContext(work=work, stem=stem, source=source, options=opts, calibration=lambda: None,
                       log=lambda _m: None)


def _start(source) -> Intermediate:
    return Intermediate(kind=source.family, path=source.path, obj=source.model, layout=source.layout,
                        signature=source.signature)


def _one_input_and_same_outputs(path: Path, source, x: np.ndarray) -> None:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["image"]
    np.testing.assert_allclose(sess.run(None, {"image": x})[0], source.predict(x), rtol=0, atol=1e-4)


def test_keras_to_onnx_keeps_normalization_constants_inside(normalized) -> None:
    from edgekit.steps.keras_to_onnx import KerasToOnnx

    d, src, _, samples = normalized
    out = KerasToOnnx().run(_start(src), _ctx(d / "w_keras", src, "normalized"))
    _one_input_and_same_outputs(out.path, src, samples[:4])
    sess = ort.InferenceSession(str(out.path), providers=["CPUExecutionProvider"])
    assert [o.name for o in sess.get_outputs()] == ["scores"]  # the frozen function keeps the output names


def test_savedmodel_to_onnx_keeps_captured_constants_inside(normalized) -> None:
    from edgekit.steps.savedmodel_to_onnx import SavedModelToOnnx

    d, _, sm, samples = normalized
    out = SavedModelToOnnx().run(_start(sm), _ctx(d / "w_sm", sm, "normalized_sm"))
    _one_input_and_same_outputs(out.path, sm, samples[:4])


def test_convert_validates_the_keras_model_with_normalization(normalized) -> None:
    from edgekit.conversion.pipeline import convert

    d, _, _, _ = normalized
    result = convert(d / "normalized.keras", "onnx", "fp32,int8", calib=str(d / "calib.npz"), out=d / "e2e")
    assert not result.failed, [a.failure for a in result.failed]
    assert all(a.fidelity is not None and a.fidelity.passed for a in result.artifacts)
