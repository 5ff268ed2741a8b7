"""onnx2tf runs in a child process: a native abort there fails the TFLite artifacts only, and the CLI survives."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the child finds onnx2tf_models through the parent's sys.path
from onnx2tf_models import ModuleRequest, paddle_like  # noqa: E402

from edgekit.core.errors import EXIT_PARTIAL, ConversionError

ABORT = "onnx2tf_models:abort_child"


def test_a_native_abort_in_the_child_is_this_steps_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.steps.onnx_to_savedmodel as step

    monkeypatch.delenv("EDGEKIT_NO_ISOLATION", raising=False)
    monkeypatch.setattr(step, "CHILD", ABORT)
    with pytest.raises(ConversionError) as caught:
        step.run_onnx2tf(step.Onnx2TfRequest(src="m.onnx", out="m_savedmodel", batch=1),
                         np.zeros((1, 4, 4, 3), np.float32), "m.onnx")
    exc = caught.value
    assert exc.step == "onnx_to_savedmodel" and "onnx2tf crashed (SIGABRT)" in exc.message
    assert "converting m.onnx" in exc.message and "separate process" in (exc.hint or "")


def test_the_child_imports_no_framework_before_onnx2tf() -> None:
    from edgekit.core.isolate import run_isolated

    answer, _ = run_isolated("onnx2tf_models:modules_child", ModuleRequest("edgekit.steps.onnx_to_savedmodel"),
                             who="t", doing="d")
    assert answer["heavy"] == []  # onnx2tf (and TensorFlow with it) is imported by the conversion itself


@pytest.mark.slow
def test_the_cli_survives_and_publishes_the_other_artifacts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # issue 8: an .onnx ConvNeXt-V2 made TensorFlow abort inside onnx2tf, and edgekit with it (exit 134)
    import edgekit.steps.onnx_to_savedmodel as step
    from edgekit.cli import main

    monkeypatch.delenv("EDGEKIT_NO_ISOLATION", raising=False)
    monkeypatch.setattr(step, "CHILD", ABORT)
    src = paddle_like(tmp_path / "cls.onnx")
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(1).random((24, 3, 16, 16), dtype=np.float32))
    out = tmp_path / "out"
    rc = main(["convert", str(src), "--target", "onnx,tflite", "--quantize", "fp32", "--calib", str(calib),
               "--calib-size", "8", "--val-size", "16", "--input-shape", "1,3,16,16", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == EXIT_PARTIAL, err
    arts = {a["path"]: a for a in json.loads((out / "manifest.json").read_text())["artifacts"]}
    assert arts["cls.fp32.onnx"]["status"] == "ok" and (out / "cls.fp32.onnx").is_file()
    failure = arts["cls.fp32.tflite"]["failure"]
    assert arts["cls.fp32.tflite"]["status"] == "failed" and failure["step"] == "onnx_to_savedmodel"
    assert "SIGABRT" in failure["message"] and "Traceback" not in err
