"""`--target edgetpu` through the whole pipeline on the bundled model: without and with a compiler."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_NOT_COMPILED

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "edgetpu"
ARGS = ["convert", str(REPO / "models" / "mnist_cnn.pt2"), "--target", "edgetpu", "--calib", "mnist",
        "--calib-size", "100", "--val-size", "300"]
pytestmark = pytest.mark.slow  # a real int8 conversion per test


def _standin():
    spec = importlib.util.spec_from_file_location("edgetpu_standin", REPO / "tests" / "edgetpu" / "edgetpu_standin.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bundled_model_is_edgetpu_ready_but_not_compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # make sure no edgetpu_compiler is found
    rc = main([*ARGS, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == EXIT_NOT_COMPILED
    assert "not compiled" in err and "docker build --target edgetpu" in err
    data = json.loads((tmp_path / "o" / "manifest.json").read_text())
    (art,) = data["artifacts"]
    assert art["path"] == "mnist_cnn.int8-uint8io.tflite" and art["format"] == "tflite"
    assert art["inputs"][0]["dtype"] == "uint8" and art["inputs"][0]["shape"] == [1, 28, 28, 1]
    assert art["fidelity"]["passed"] and art["fidelity"]["top1_agreement"] >= 0.99
    e = art["extra"]["edgetpu"]
    assert e["ops_on_tpu"] == e["ops_total"] and e["macs_on_tpu_fraction"] == 1.0
    assert e["first_unsupported"] is None and e["compiled"] is False
    assert "mnist_cnn.int8-uint8io.tflite" in e["how_to_finish"]


def test_bundled_model_compiled_by_a_compiler_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = _standin().write_standin(tmp_path / "bin" / "edgetpu_compiler")
    monkeypatch.setenv("PATH", f"{exe.parent}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_STDOUT", str(FIX / "reconstructed_v16_mnist_all_mapped_stdout.txt"))
    monkeypatch.setenv("FAKE_LOG", str(FIX / "nrf20_mnist7_edgetpu.log"))
    rc = main([*ARGS, "--out", str(tmp_path / "o")])
    assert rc == 0
    data = json.loads((tmp_path / "o" / "manifest.json").read_text())
    ready, compiled = data["artifacts"]
    assert compiled["path"] == "mnist_cnn_edgetpu.tflite" and compiled["format"] == "edgetpu"
    assert compiled["parent"] == ready["path"] and compiled["inputs"] == ready["inputs"]
    assert compiled["fidelity"] is None and "needs an Edge TPU" in compiled["extra"]["validation"]
    e = compiled["extra"]["edgetpu"]
    assert e["compiled"] is True and e["compiler"]["ops_on_tpu"] == 8
    # the recorded log is of a smaller MNIST CNN (8 ops): the mismatch with ours is shown, not hidden
    assert e["compiler"]["ops_total"] == 8 and e["ops_total"] != 8
    assert f"op count: pre-flight saw {e['ops_total']} ops, the compiler counted 8" in e["disagreements"]
    assert (tmp_path / "o" / "mnist_cnn_edgetpu.tflite").is_file()
    assert (tmp_path / "o" / compiled["extra"]["compiler_log"]).is_file()
