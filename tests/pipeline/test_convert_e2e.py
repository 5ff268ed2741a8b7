"""Real conversions of the bundled model through real converters and real runtimes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from edgekit.cli import main
from edgekit.conversion.pipeline import convert
from edgekit.core.errors import EXIT_FIDELITY, EXIT_USAGE

MODELS = Path(__file__).resolve().parents[2] / "models"


def test_bundled_model_every_target_and_precision(bundled_conversion) -> None:
    arts = {a.path: a for a in bundled_conversion.artifacts}
    expected = [f"mnist_cnn.{p}.{ext}" for ext in ("onnx", "tflite") for p in ("fp32", "fp16", "dynamic", "int8")]
    assert sorted(arts) == sorted(expected)
    for a in arts.values():
        f = a.fidelity
        assert f is not None and f.passed, (a.path, f)
        assert f.samples == 1000 and f.inputs == "mnist-test"
        assert f.reference_accuracy is not None and f.reference_accuracy >= 0.97
        assert (bundled_conversion.manifest_path.parent / a.path).stat().st_size == a.size_bytes
    for ext in ("onnx", "tflite"):  # the bars for int8
        int8, fp32 = arts[f"mnist_cnn.int8.{ext}"], arts[f"mnist_cnn.fp32.{ext}"]
        assert int8.fidelity.top1_agreement >= 0.99
        assert abs(int8.fidelity.accuracy - fp32.fidelity.accuracy) <= 0.005
        assert int8.size_bytes <= 0.30 * fp32.size_bytes
    tfl = arts["mnist_cnn.int8.tflite"]
    assert tfl.inputs[0].dtype == "int8" and tfl.inputs[0].shape == [1, 28, 28, 1]
    assert tfl.inputs[0].layout == "NHWC" and tfl.inputs[0].quantization.scale > 0
    assert arts["mnist_cnn.fp32.onnx"].inputs[0].layout == "NCHW"
    assert not any("dynamic_shape_ops" in a.extra for a in arts.values())


def test_manifest_is_complete_json(bundled_conversion) -> None:
    data = json.loads(bundled_conversion.manifest_path.read_text())
    assert data["source"]["kind"] == "torch-exported" and len(data["source"]["sha256"]) == 64
    assert data["tool_versions"]["torch"] and data["tool_versions"]["onnxruntime"]
    assert data["options"]["calib"] == "mnist"
    onnx_int8 = next(a for a in data["artifacts"] if a["path"] == "mnist_cnn.int8.onnx")
    assert onnx_int8["fidelity"]["passed"] is True and onnx_int8["seconds"] > 0


def test_rerun_refuses_then_force_replaces(bundled_conversion, capsys: pytest.CaptureFixture[str]) -> None:
    out = bundled_conversion.manifest_path.parent
    before = (out / "manifest.json").read_bytes()
    rc = main(["convert", str(MODELS / "mnist_cnn.pt2"), "--out", str(out)])
    assert rc == EXIT_USAGE and "--force" in capsys.readouterr().err
    assert (out / "manifest.json").read_bytes() == before


@pytest.mark.slow  # a real conversion
def test_failed_run_leaves_previous_outputs_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    convert(MODELS / "mnist_cnn.pt2", "onnx", "fp32", out=out)
    snapshot = {p.name: p.read_bytes() for p in out.iterdir()}
    from edgekit.steps.onnx_quantize import OnnxQuantize

    def interrupted(self, inp, ctx):  # the run dies half-way through, after writing a partial file
        (ctx.work / f"{ctx.stem}.fp32.onnx").write_bytes(b"half a model")
        raise KeyboardInterrupt

    monkeypatch.setattr(OnnxQuantize, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        convert(MODELS / "mnist_cnn.pt2", "onnx", "fp32", out=out, force=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == snapshot
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left


@pytest.mark.parametrize(
    ("source", "extra"),
    [
        ("mnist_cnn.torchscript.pt", ["--input-shape", "1,1,28,28"]),
        ("mnist_cnn.state_dict.pt", ["--model", "models.mnist_cnn:build", "--input-shape", "1,1,28,28"]),
    ],
)
@pytest.mark.slow  # a real conversion
def test_other_torch_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, extra: list[str]) -> None:
    monkeypatch.chdir(MODELS.parent)
    out = tmp_path / "o"
    rc = main(["convert", str(MODELS / source), *extra, "-t", "onnx", "-q", "fp32,int8", "--calib", "mnist",
               "--calib-size", "100", "--val-size", "300", "--out", str(out), "--json"])
    assert rc == 0
    data = json.loads((out / "manifest.json").read_text())
    assert all(a["fidelity"]["passed"] for a in data["artifacts"])
    assert data["source"]["kind"] in ("torchscript", "torch-state-dict")


def test_onnx_source_with_external_data_to_tflite(bundled_conversion, tmp_path: Path) -> None:
    import onnx

    model = onnx.load(str(bundled_conversion.manifest_path.parent / "mnist_cnn.fp32.onnx"))
    src = tmp_path / "src" / "ext.onnx"
    src.parent.mkdir()
    onnx.save(model, str(src), save_as_external_data=True, location="ext.onnx.data", size_threshold=0)
    assert (src.parent / "ext.onnx.data").is_file()
    before = {p.name: p.read_bytes() for p in src.parent.iterdir()}
    result = convert(src, "onnx,tflite", "fp32", out=tmp_path / "o", calib="mnist", val_size=200)
    assert {p.name: p.read_bytes() for p in src.parent.iterdir()} == before  # the user's model is untouched
    assert sorted(a.path for a in result.artifacts) == ["ext.fp32.onnx", "ext.fp32.tflite"]
    assert all(a.fidelity.passed for a in result.artifacts)
    assert not (tmp_path / "o" / "ext.onnx.data").exists()  # the ONNX artifact is one self-contained file


def test_onnx_external_data_outside_folder_is_refused(bundled_conversion, tmp_path: Path) -> None:
    import onnx
    from onnx.external_data_helper import set_external_data

    from edgekit.core.errors import UnsupportedModel

    model = onnx.load(str(bundled_conversion.manifest_path.parent / "mnist_cnn.fp32.onnx"))
    init = model.graph.initializer[0]
    set_external_data(init, location="../secret.bin")
    init.data_location = onnx.TensorProto.EXTERNAL
    init.ClearField("raw_data")
    (tmp_path / "m").mkdir()
    onnx.save(model, str(tmp_path / "m" / "evil.onnx"))
    with pytest.raises(UnsupportedModel, match="outside its own folder"):
        convert(tmp_path / "m" / "evil.onnx", "onnx", "fp32", out=tmp_path / "o")


@pytest.mark.slow  # a real conversion
def test_pickled_module_refused_unless_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    monkeypatch.chdir(MODELS.parent)
    monkeypatch.syspath_prepend(str(MODELS.parent))
    from models.mnist_cnn import build

    torch.save(build().eval(), tmp_path / "whole.pt")
    rc = main(["convert", str(tmp_path / "whole.pt"), "--input-shape", "1,1,28,28", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE and "pickle" in err and "--trust-model" in err
    assert not (tmp_path / "o").exists()
    rc = main(["convert", str(tmp_path / "whole.pt"), "--input-shape", "1,1,28,28", "--trust-model",
               "--val-size", "50", "--out", str(tmp_path / "o")])
    assert rc == 0
    data = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert data["source"]["kind"] == "torch-pickle"


@pytest.mark.slow  # a real conversion
def test_strict_fidelity_miss_exits_5(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # An absurd threshold forces a miss on a real artifact: --strict must turn it into exit 5.
    import dataclasses

    import edgekit.core.precisions as precisions

    absurd = dataclasses.replace(precisions.PRECISIONS["fp32"], thresholds={"top1_agreement": 1.01, "cosine": 0.0})
    monkeypatch.setitem(precisions.PRECISIONS, "fp32", absurd)
    rc = main(["convert", str(MODELS / "mnist_cnn.pt2"), "--strict", "--val-size", "20", "--out",
               str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == EXIT_FIDELITY and "missed the fidelity thresholds" in err
    data = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert data["artifacts"][0]["fidelity"]["passed"] is False
    assert data["warnings"]


def test_validation_catches_nan_outputs() -> None:
    from edgekit.validation.artifact import Reference, compare

    x = np.zeros((4, 1, 2, 2), np.float32)
    ref = Reference(x=x, y_ref=np.eye(4, 10, dtype=np.float32), labels=None, layout="NCHW", inputs_name="t")
    bad = np.full((4, 10), np.nan, np.float32)
    f = compare(ref, bad, "fp32")
    assert not f.passed and "NaN" in f.failures[0]
    assert compare(ref, np.eye(4, 10, dtype=np.float32), "fp32").passed


@pytest.mark.slow  # a real conversion
def test_json_output_is_the_manifest_alone(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    shutil.copy(MODELS / "mnist_cnn.pt2", tmp_path / "m.pt2")
    rc = main(["convert", str(tmp_path / "m.pt2"), "--val-size", "20", "--out", str(tmp_path / "o"), "--json"])
    out = capfd.readouterr().out
    assert rc == 0
    assert json.loads(out)["artifacts"][0]["path"] == "m.fp32.onnx"


@pytest.mark.parametrize(("factory", "shape", "family"), [("models.mnist_cnn:build", "1,1,28,28", "torch"),
                                                          ("models.mnist_keras:build", "1,28,28,1", "keras")])
@pytest.mark.slow  # a real conversion
def test_model_built_from_code_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, factory: str, shape: str,
                                     family: str) -> None:
    monkeypatch.chdir(MODELS.parent)
    rc = main(["convert", "--model", factory, "--input-shape", shape, "--val-size", "30", "--out", str(tmp_path / "o")])
    assert rc == 0
    data = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert data["source"]["kind"] == f"{family}-factory"
    assert [a["path"] for a in data["artifacts"]] == [f"{factory.split(':')[0].split('.')[-1]}.fp32.onnx"]
    assert data["artifacts"][0]["fidelity"]["passed"]


def test_no_model_at_all_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert"]) == EXIT_USAGE
    assert "No model given" in capsys.readouterr().err


@pytest.mark.slow  # a real conversion
def test_python_api_returns_artifacts(tmp_path: Path) -> None:
    import edgekit

    arts = edgekit.convert(str(MODELS / "mnist_cnn.pt2"), targets="onnx", quantize="fp32", out=tmp_path / "o",
                           val_size=20)
    assert [a.path for a in arts] == ["mnist_cnn.fp32.onnx"] and arts[0].fidelity.passed


@pytest.mark.slow  # a real conversion
def test_tflite_int8_with_float_io(tmp_path: Path) -> None:
    result = convert(MODELS / "mnist_cnn.pt2", "tflite", "int8", calib="mnist", io_dtype="float32",
                     calib_size=100, val_size=300, out=tmp_path / "o")
    (art,) = result.artifacts
    assert art.path == "mnist_cnn.int8-float32io.tflite"
    assert art.inputs[0].dtype == "float32" and art.outputs[0].dtype == "float32"
    assert art.extra["io_dtype"] == "float32"
    assert art.fidelity.passed and art.fidelity.top1_agreement >= 0.99
