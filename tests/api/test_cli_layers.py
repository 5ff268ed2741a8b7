"""`edgekit profile`, `inspect` and `check` are thin layers over the Python API's functions: one behaviour.

Each command is run for real on a small ONNX file, with the API function it must call wrapped to record
the call; the command's JSON is the record the function returned.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from api_models import cnn_proto

import edgekit.api.measure
import edgekit.check
import edgekit.inspect
from edgekit.cli import main


@pytest.fixture()
def onnx_file(tmp_path: Path) -> Path:
    onnx = pytest.importorskip("onnx")
    path = tmp_path / "tiny.onnx"
    onnx.save(cnn_proto(), str(path))
    return path


def _recording(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    calls: list[Any] = []
    real = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append((args, kwargs, result := real(*args, **kwargs)))
        return result

    monkeypatch.setattr(module, name, wrapper)
    return calls


def test_profile_calls_the_api(onnx_file: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    calls = _recording(monkeypatch, edgekit.api.measure, "profile")
    rc = main(["profile", str(onnx_file), "--device", "cpu", "--runs", "3", "--min-seconds", "0", "--warmup", "1",
               "--threads", "1", "--json"])
    assert rc in (0, None)
    ((args, kwargs, result),) = calls
    assert args == (onnx_file, "cpu") and kwargs["runs"] == 3 and kwargs["warmup"] == 1 and kwargs["threads"] == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed["artifact"]["sha256"] == result.artifact.sha256 and printed["settings"]["runs"] == 3


def test_inspect_calls_the_api(onnx_file: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    calls = _recording(monkeypatch, edgekit.inspect, "inspect")
    assert main(["inspect", str(onnx_file), "--json"]) in (0, None)
    ((_, _, report),) = calls
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(report.to_dict()))


def test_check_calls_the_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    called: list[Any] = []

    def check(*args: Any) -> Any:
        called.append(args)
        raise edgekit.check.UsageError("stopped by the test")

    monkeypatch.setattr(edgekit.check, "check", check)
    assert main(["check", str(tmp_path), "--baseline", "git:origin/main:b.json"]) == 2
    assert called == [(tmp_path, "git:origin/main:b.json", None)]  # the baseline as typed
    assert "stopped by the test" in capsys.readouterr().err
