"""Picking a runtime and a device for an artifact: format detection, names, "auto"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgekit.core.errors import UsageError
from edgekit.runtimes import (
    detect_format,
    normalize_device,
    open_runtime,
    pick_runtime,
    resolve_device,
    runtimes_for_format,
)
from edgekit.runtimes.onnxruntime import OnnxRuntime


def test_detect_format(tiny_models: dict[str, Any], tmp_path: Path) -> None:
    m = tiny_models["models"]
    expected = {"onnx": "onnx", "tflite-fp32": "tflite", "tflite-int8": "tflite", "savedmodel": "savedmodel",
                "torch-pt2": "torch", "torchscript": "torch"}
    for key, fmt in expected.items():
        if key in m:
            assert detect_format(m[key]) == fmt, key
    compiled = tmp_path / "x_edgetpu.tflite"
    compiled.write_bytes(Path(m["tflite-int8"]).read_bytes() + b"edgetpu-custom-op")
    assert detect_format(compiled) == "edgetpu"
    with pytest.raises(UsageError, match="No such file"):
        detect_format(tmp_path / "missing.onnx")
    (tmp_path / "folder").mkdir()
    with pytest.raises(UsageError, match="not a SavedModel"):
        detect_format(tmp_path / "folder")


def test_pick_runtime_and_suggestions() -> None:
    assert pick_runtime("onnx").name == "onnxruntime"
    assert pick_runtime("edgetpu").name == "litert"
    assert runtimes_for_format("tflite") == ["litert"]
    with pytest.raises(UsageError, match="cannot load tflite") as err:
        pick_runtime("tflite", "onnxruntime")
    assert "litert" in err.value.hint
    with pytest.raises(UsageError) as err:
        pick_runtime("onnx", "onnxruntim")
    assert "did you mean 'onnxruntime'" in err.value.hint


def test_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    assert normalize_device(" CUDA ") == "gpu" and normalize_device("coral") == "edgetpu"
    assert resolve_device(OnnxRuntime, "onnx", "cpu") == "cpu"
    assert resolve_device(OnnxRuntime, "edgetpu", "auto") == "edgetpu"
    monkeypatch.setattr(OnnxRuntime, "available", classmethod(lambda cls, d="cpu": (d == "gpu", "")))
    assert resolve_device(OnnxRuntime, "onnx", "auto") == "gpu"
    monkeypatch.setattr(OnnxRuntime, "available", classmethod(lambda cls, d="cpu": (d == "cpu", "no")))
    assert resolve_device(OnnxRuntime, "onnx", "auto") == "cpu"
    with pytest.raises(UsageError, match="Unknown device"):
        resolve_device(OnnxRuntime, "onnx", "gpx")


def test_open_runtime(tiny_models: dict[str, Any]) -> None:
    rt = open_runtime(tiny_models["models"]["onnx"], device="cpu", threads=1)
    assert rt.name == "onnxruntime" and rt.inputs[0].name == "input"
    rt.close()
