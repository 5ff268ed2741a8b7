"""Three small models shaped like the zoo's families, through the real CLI for the zoo's whole matrix.

Issue 8 keeps the model zoo (bench/zoo.py, minutes per model) out of `make test` and asks for three small
representative models in the suite instead: a ResNet-style torch `.pt2` (residual Adds, BatchNorm), a
MobileNetV3-style Keras model (depthwise convs, hard-swish, squeeze-and-excite) and a Keras model with
EfficientNet's built-in Rescaling/Normalization (tests/zoo/zoo_families.py), each converted to
onnx,tflite,edgetpu x fp32,int8 on real digits, as the zoo converts. What the zoo's targets ask of every model:
- every fp32 artifact is published and passes validation;
- every int8 artifact is published and validated, or failed on its own with its step (and op where known)
  named in the manifest; the run is never aborted;
- the manifest records each step's seconds and the run's seconds and peak RSS.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zoo_families as families

from edgekit.cli import main
from edgekit.core.errors import EXIT_NOT_COMPILED, EXIT_OK, EXIT_PARTIAL

pytestmark = pytest.mark.slow

MATRIX = ["--target", "onnx,tflite,edgetpu", "--quantize", "fp32,int8", "--calib-size", "32", "--val-size", "32"]
ZERO_TO_255 = ["--mean", "0", "--std", repr(1 / 255)]  # the zoo's flags for a model that scales pixels itself


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """128 real MNIST test digits at 32x32x3, uint8, labelled, in either layout: edgekit holds out the last quarter
    (32) for validation and calibrates on 32 of the others (MATRIX)."""
    d = tmp_path_factory.mktemp("zoo-digits")
    return {layout: families.digits_npz(d / f"digits_{layout.lower()}.npz", layout) for layout in ("NCHW", "NHWC")}


def _build_resnet(d: Path, digits: dict[str, Path]) -> tuple[Path, Path, list[str]]:
    return families.resnet_pt2(d / "tiny_resnet.pt2"), digits["NCHW"], []


def _build_mobilenetv3(d: Path, digits: dict[str, Path]) -> tuple[Path, Path, list[str]]:
    return families.mobilenetv3_keras(d / "tiny_mobilenetv3.keras"), digits["NHWC"], []


def _build_efficientnet(d: Path, digits: dict[str, Path]) -> tuple[Path, Path, list[str]]:
    x = np.load(digits["NHWC"])["x"]
    return families.efficientnet_keras(d / "tiny_efficientnet.keras", x), digits["NHWC"], ZERO_TO_255


FAMILIES: dict[str, Callable[[Path, dict[str, Path]], tuple[Path, Path, list[str]]]] = {
    "resnet-pt2": _build_resnet, "mobilenetv3-keras": _build_mobilenetv3, "efficientnet-keras": _build_efficientnet}


def _column(a: dict[str, Any]) -> str:
    return "edgetpu int8" if "edgetpu" in a["extra"] else f"{a['format']} {a['precision']}"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_zoo_family_converts_to_the_whole_matrix(family: str, digits: dict[str, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    source, calib, extra = FAMILIES[family](tmp_path, digits)
    out = tmp_path / "out"
    rc = main(["convert", str(source), *MATRIX, "--calib", str(calib), "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert "Traceback" not in err and (out / "manifest.json").is_file(), (rc, err[-3000:])  # never an aborted run
    manifest = json.loads((out / "manifest.json").read_text())
    arts = {_column(a): a for a in manifest["artifacts"]}
    assert sorted(arts) == ["edgetpu int8", "onnx fp32", "onnx int8", "tflite fp32", "tflite int8"], err

    failed = [c for c, a in arts.items() if a["status"] == "failed"]
    assert rc == (EXIT_PARTIAL if failed else EXIT_OK if shutil.which("edgetpu_compiler") else EXIT_NOT_COMPILED), err
    for col, a in arts.items():
        if col.endswith("fp32"):  # every fp32 artifact published and passing
            assert a["status"] == "ok" and a["fidelity"]["passed"], (col, a.get("failure"), a.get("fidelity"))
        if a["status"] == "ok":  # published means on disk, as recorded, and validated
            assert (out / a["path"]).stat().st_size == a["size_bytes"] > 0
            assert a["fidelity"] is not None and a["fidelity"]["samples"] > 0, col
        else:  # failed on its own, where and why in the manifest
            f = a["failure"]
            assert f["step"] and f["message"] and not (out / a["path"]).exists(), (col, f)
        # each step's seconds, shared steps included
        assert a["extra"]["steps"] and all(s["seconds"] >= 0 for s in a["extra"]["steps"]), col
    run = manifest["run"]
    assert run["seconds"] > 0 and run["peak_rss_bytes"] > 50 * 2**20

    onnx_fp32 = arts["onnx fp32"]
    assert len(onnx_fp32["inputs"]) == 1, onnx_fp32["inputs"]  # no layer constants as extra graph inputs (issue 8)
    if arts["edgetpu int8"]["status"] == "ok":  # the Edge TPU pre-flight ran on the compiler-ready model
        assert arts["edgetpu int8"]["extra"]["edgetpu"]["ops_total"] > 0
