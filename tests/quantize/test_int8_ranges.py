"""An int8 TFLite never carries an infinite range: rewritten where exact, a named failure elsewhere.

The pattern is a transformers ResNet-18's stem (ReLU, then a MaxPool padded with the float minimum: PADV2 from
ONNX): its int8 TFLite got the step 1.3e36, XNNPACK refused it and LiteRT's builtin kernels aborted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tf_models import build, images  # noqa: E402

tf = pytest.importorskip("tensorflow")


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")  # tiny float-compatible models: no child per stage


@pytest.fixture(scope="module")
def padv2_saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("tf") / "padv2", "padv2")


def _job(saved: Path, work: Path, xs: np.ndarray):
    from edgekit.quantize.tflite.recipes import TfliteJob

    work.mkdir(parents=True, exist_ok=True)
    return TfliteJob(tf, saved, "serving_default", xs, 1, "int8", work, lambda _m: None)


def test_plain_int8_gets_the_exact_rewrite_and_finite_ranges(padv2_saved: Path, tmp_path: Path) -> None:
    from edgekit.quantize.search import judge
    from edgekit.quantize.tflite.int8_ranges import absurd_ranges
    from edgekit.quantize.tflite.recipes import float_model
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.quantize.tflite.search import quantize_tflite

    xs = images(48)
    job = _job(padv2_saved, tmp_path / "w", xs)
    blob, choice = quantize_tflite(job, "plain")
    assert any("1 x PADV2(-inf) after ReLU -> PAD" in n for n in choice.notes)
    assert choice.edgetpu_fixes is None  # not the Edge TPU artifact
    paths = [tmp_path / "int8.tflite", tmp_path / "float.tflite"]
    paths[0].write_bytes(blob)
    paths[1].write_bytes(float_model(job))
    assert absurd_ranges(paths[0]) == []
    y_int8, y_float = run_tflite(paths, xs)
    assert judge(y_float, y_int8).passed


@pytest.mark.slow  # a second TFLite int8 conversion; the rewrite's own test above keeps the module in the fast suite
def test_without_the_rewrite_the_artifact_fails_naming_the_tensor(padv2_saved: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.core.errors import ConversionError
    from edgekit.quantize.tflite import int8_ranges
    from edgekit.quantize.tflite.search import quantize_tflite

    monkeypatch.setattr(int8_ranges, "RANGE_FIXES", ())  # as where the PADV2's input can be negative
    with pytest.raises(ConversionError) as err:
        quantize_tflite(_job(padv2_saved, tmp_path / "w", images(48)), "plain")
    assert err.value.step == "tflite_convert" and err.value.op
    assert "holds an infinity" in err.value.message and f"'{err.value.op}'" in err.value.message
    assert "MaxPool" in (err.value.hint or "")
