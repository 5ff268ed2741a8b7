"""Keras and SavedModel sources give validation every output, by name (issue 15).

Before, both loaders handed validation their first output only: a detector's box head was never
compared. The conversion is marked slow (TensorFlow: ~15 s).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_OK
from edgekit.sources import LoadOptions

pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")


@pytest.fixture(scope="module")
def two_heads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A functional model with a class-score head (N, 5) and a box map (N, 8, 8, 4), saved as .keras and as a
    SavedModel beside it."""
    d = tmp_path_factory.mktemp("keras2out")
    keras.utils.set_random_seed(0)
    inp = keras.Input((16, 16, 3), name="image")
    x = keras.layers.MaxPooling2D()(keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inp))
    scores = keras.layers.Dense(5, name="scores")(keras.layers.GlobalAveragePooling2D()(x))
    boxes = keras.layers.Conv2D(4, 1, name="boxes")(x)
    model = keras.Model(inp, [scores, boxes])
    model.save(d / "two_out.keras")
    model.export(str(d / "two_out_sm"), verbose=False)
    np.save(d / "cal.npy", np.random.default_rng(0).random((24, 16, 16, 3), dtype=np.float32))
    return d


def test_savedmodel_source_gives_every_output(two_heads: Path) -> None:
    from edgekit.sources.savedmodel import load

    src = load(two_heads / "two_out_sm", LoadOptions(), "savedmodel")
    x = np.random.default_rng(1).random((3, 16, 16, 3), dtype=np.float32)
    outs = src.run_outputs({src.input_name: x})
    assert list(outs) == src.output_names and len(outs) == 2
    assert sorted(a.shape for a in outs.values()) == [(3, 5), (3, 8, 8, 4)]
    np.testing.assert_allclose(src.predict(x), outs[src.output_names[0]])


@pytest.mark.slow  # one Keras model to TFLite fp32: ~10 s
def test_two_output_keras_model_validated_on_both_outputs_by_name(two_heads: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    rc = main(["convert", str(two_heads / "two_out.keras"), "-t", "tflite", "-q", "fp32",
               "--calib", str(two_heads / "cal.npy"), "--out", str(out)])
    assert rc == EXIT_OK
    data = json.loads((out / "manifest.json").read_text())
    assert data["source"]["outputs"] == ["scores", "boxes"]
    for art in data["artifacts"]:
        outs = {o["name"]: o for o in art["fidelity"]["outputs"]}
        assert set(outs) == {"scores", "boxes"}, art["path"]
        # a box map is not judged by per-pixel argmax (issue 27): its name says what it holds, and the record says so
        assert outs["scores"]["kind"] == "classes" and outs["boxes"]["kind"] == "regression"
        assert "name 'boxes'" in outs["boxes"]["kind_reason"] and "(N, C)" in outs["scores"]["kind_reason"]
        assert all(o["fidelity"]["passed"] and o["fidelity"]["cosine"] > 0.9999 for o in outs.values())
        # the .tflite tensors are renamed (StatefulPartitionedCall:<i>); its signature keys say which is which
        assert all(o["matched_by"] == "signature" for o in outs.values())
        assert outs["boxes"]["shape"] == [1, 8, 8, 4] and outs["scores"]["shape"] == [1, 5]
