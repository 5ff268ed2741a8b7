"""A model with several inputs, int8 included: every input calibrated by its name (issue 15).

ONNX int8: onnxruntime's calibration reader feeds every graph input by name. TFLite int8: the
representative dataset yields {signature key: batch}, which the calibrator orders by the model's own
input tensors, so the converter's input order cannot pair an input with another's samples.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_OK, ConversionError
from edgekit.data.feeds import by_keys
from edgekit.quantize.records import plain_choice_of_inputs

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
import fidelity_models  # noqa: E402  (tests/validate/fidelity_models.py)


def test_samples_are_keyed_by_name_never_by_position() -> None:
    image, mask = np.zeros((4, 3, 8, 8), np.float32), np.ones((4, 1, 8, 8), np.float32)
    got = by_keys({"image": image, "mask": mask}, ["serving_default_mask:0", "image"], "the model")
    assert list(got) == ["serving_default_mask:0", "image"]
    assert got["serving_default_mask:0"] is mask and got["image"] is image
    with pytest.raises(ConversionError, match="'prompt' matches none"):
        by_keys({"image": image, "mask": mask}, ["image", "prompt"], "the model")


def test_a_several_input_int8_record_says_it_was_not_judged() -> None:
    """Not searched, so not judged before validation: met is None, as for any named recipe (not a miss)."""
    choice = plain_choice_of_inputs("auto", {"recipe": "plain"}, 100)
    assert choice.met is None and choice.to_dict()["met"] is None and "validation judges it" in choice.judged_on


def test_onnx_calibration_reader_feeds_every_input_by_name() -> None:
    from edgekit.quantize.onnx.recipes import Reader

    a, b = np.arange(10, dtype=np.float32)[:, None], -np.arange(10, dtype=np.float32)[:, None]
    reader = Reader("a", a, 4, {"a": a, "b": b})
    chunks = []
    while (c := reader.get_next()) is not None:
        chunks.append(c)
    assert [sorted(c) for c in chunks] == [["a", "b"]] * 3
    assert [len(c["b"]) for c in chunks] == [4, 4, 2] and chunks[1]["b"][0, 0] == -4
    reader.rewind()
    assert list(Reader("a", a, 4).get_next()) == ["a"] and reader.get_next()["a"][0, 0] == 0


@pytest.mark.slow  # ONNX and TFLite, fp32 and int8, of an 8x8 two-input model: ~25 s
def test_two_input_model_published_fp32_and_int8_for_onnx_and_tflite(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    model = fidelity_models.two_inputs(tmp_path / "two_in.onnx")
    rng = np.random.default_rng(0)
    # the two inputs have different ranges: calibrating one on the other's samples would clip it
    np.savez(tmp_path / "two.npz", image=rng.random((40, 3, 8, 8), dtype=np.float32),
             mask=(rng.random((40, 1, 8, 8)) > 0.5).astype(np.float32) * 3)
    out = tmp_path / "o"
    monkeypatch.chdir(tmp_path)  # a relative --out, as the default edgekit-out/<stem> is: onnx2tf runs elsewhere
    rc = main(["convert", str(model), "-t", "onnx,tflite", "-q", "fp32,int8", "--calib", str(tmp_path / "two.npz"),
               "--out", "o"])
    data = json.loads((out / "manifest.json").read_text())
    arts = {a["path"]: a for a in data["artifacts"]}
    assert rc == EXIT_OK, {p: a.get("failure") for p, a in arts.items()}
    assert sorted(arts) == ["two_in.fp32.onnx", "two_in.fp32.tflite", "two_in.int8.onnx", "two_in.int8.tflite"]
    for name, art in arts.items():
        f = art["fidelity"]
        assert f["passed"] and f["cosine"] > (0.999 if ".int8." in name else 0.9999), (name, f)
        assert sorted(i["name"].split(":")[0].removeprefix("serving_default_") for i in art["inputs"]) == \
            ["image", "mask"], art["inputs"]
        if ".int8." in name:
            recipe = art["extra"]["int8_recipe"]
            assert recipe["chosen"] == "plain" and "every input calibrated by name" in recipe["notes"][0]
