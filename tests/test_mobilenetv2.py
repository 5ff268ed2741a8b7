"""A real third-party architecture nobody here wrote: Keras's MobileNetV2 through `edgekit convert`.

MobileNetV2 (weights=None: no download) at 96x96x3 is converted to TFLite and ONNX at fp32 and
int8, calibrated on crops of real photos shipped with scikit-image, and its fidelity must be in
the manifest.

Why the BatchNorm statistics are set from the photos first: an untouched random initialisation
makes activations shrink layer after layer, and the logits come out around 1e-11 and almost
equal. Agreement figures on such outputs say nothing (measured: int8 TFLite cosine 1.00000 with
0% top-1 agreement). Setting each BatchNorm's moving mean/variance to the photos' statistics
(one forward pass in training mode with momentum 0: a data-dependent initialisation, no
training) gives the activation scales of a working network, so fidelity figures mean something.
Even so, random weights quantize worse than trained ones (measured here: int8 cosine ~0.88 for
TFLite, ~0.81 for ONNX): the test therefore checks that the figures are recorded and honest
(a miss is reported as a miss), not that random weights pass the int8 bars.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from edgekit.cli import main

keras = pytest.importorskip("keras")
skdata = pytest.importorskip("skimage.data")
pytest.importorskip("PIL")

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "hubble_deep_field", "colorwheel",
          "retina")  # RGB photos inside the scikit-image wheel (no pooch download)
CROPS_PER_PHOTO = 4
SIZE = 96


def write_crops(folder: Path) -> list[Path]:
    """CROPS_PER_PHOTO square crops of each photo (50-100% of the short side), as PNG, seed 0."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for name in PHOTOS:
        img = np.asarray(getattr(skdata, name)())[..., :3]
        h, w = img.shape[:2]
        for j in range(CROPS_PER_PHOTO):
            s = int(min(h, w) * rng.uniform(0.5, 1.0))
            y, x = int(rng.integers(0, h - s + 1)), int(rng.integers(0, w - s + 1))
            path = folder / f"{name}_{j}.png"
            Image.fromarray(img[y:y + s, x:x + s].astype(np.uint8)).save(path)
            paths.append(path)
    return paths


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the .keras file, the folder of photo crops)."""
    from edgekit.data.calibration import load_samples

    d = tmp_path_factory.mktemp("mobilenetv2")
    photos = d / "photos"
    write_crops(photos)
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(weights=None, input_shape=(SIZE, SIZE, 3), classifier_activation=None)
    x = load_samples(str(photos), [1, SIZE, SIZE, 3], "NHWC").x  # the preprocessing --calib uses: pixels/255
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.momentum = 0.0
    model(x, training=True)  # moving mean/variance := the photos' batch statistics
    path = d / "mobilenetv2_96.keras"
    model.save(path)
    return path, photos


@pytest.mark.slow
def test_mobilenetv2_converts_with_fidelity_recorded(mobilenet, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    model, photos = mobilenet
    out = tmp_path / "out"
    rc = main(["convert", str(model), "--target", "tflite,onnx", "--quantize", "fp32,int8", "--calib", str(photos),
               "--out", str(out), "--int8-recipe", "plain"])  # what plain int8 of random weights records, unsearched
    err = capsys.readouterr().err
    assert rc == 0, err  # a fidelity miss is reported, not an error, unless --strict
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"]["kind"] == "keras"
    assert manifest["source"]["input"]["shape"] == [-1, SIZE, SIZE, 3]
    arts = {(a["format"], a["precision"]): a for a in manifest["artifacts"]}
    assert sorted(arts) == [("onnx", "fp32"), ("onnx", "int8"), ("tflite", "fp32"), ("tflite", "int8")]
    n_photos = len(PHOTOS) * CROPS_PER_PHOTO
    for key, art in arts.items():
        fid = art["fidelity"]
        assert fid is not None, key
        assert fid["samples"] == round(n_photos / 4), key  # the held-out quarter of the crops
        assert "held-out" in fid["inputs"], fid["inputs"]
        assert all(math.isfinite(fid[k]) for k in ("top1_agreement", "cosine", "max_abs_error")), fid
        assert fid["passed"] == (not fid["failures"]), fid
        assert (out / art["path"]).is_file() and art["size_bytes"] > 1_000_000
        if art["precision"] == "fp32":  # the conversions themselves are exact
            assert fid["passed"] and fid["cosine"] > 0.9999 and fid["top1_agreement"] == 1.0, (key, fid)
        else:  # int8 of random weights: recorded, clearly not garbage (NaN, constant or sign-flipped outputs)
            assert fid["cosine"] > 0.5, (key, fid)
            if not fid["passed"]:
                assert any(art["path"] in w and "fidelity below threshold" in w for w in manifest["warnings"])
    tfl = arts[("tflite", "int8")]
    assert tfl["inputs"][0]["shape"] == [1, SIZE, SIZE, 3] and tfl["inputs"][0]["dtype"] == "int8"
    assert not tfl["extra"].get("dynamic_shape_ops")
