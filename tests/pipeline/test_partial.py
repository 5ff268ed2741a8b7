"""One artifact's failure is that artifact's: the others are validated and published, the run says so.

The failures are made by a step raising the error the border gives for a vendor failure (the steps'
own failure paths are tested in tests/steps/test_step_errors.py); everything else is real: the
export, the ONNX artifacts, validation, publishing, the manifest, the table and bench.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_CONVERSION, EXIT_PARTIAL, ConversionError, RuntimeFailure

pytestmark = pytest.mark.slow

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture()
def onnx2tf_fails(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """onnx_to_savedmodel (shared by every TFLite artifact) fails as onnx2tf does on an op it cannot convert."""
    from edgekit.steps.onnx_to_savedmodel import OnnxToSavedModel

    calls: list[int] = []

    def run(self: object, inp: object, ctx: object) -> object:
        calls.append(1)
        raise ConversionError("ONNX -> TensorFlow conversion failed: onnx_op_type: Einsum is not supported",
                              hint="replace the op", step="onnx_to_savedmodel", op="Einsum")

    monkeypatch.setattr(OnnxToSavedModel, "run", run)
    return calls


def _convert(out: Path, *extra: str) -> int:
    return main(["convert", str(MODELS / "mnist_cnn.pt2"), "--target", "onnx,tflite", "--quantize", "fp32,int8",
                 "--calib", "mnist", "--val-size", "100", "--out", str(out), *extra])


def test_a_shared_step_that_fails_fails_its_artifacts_only(onnx2tf_fails: list[int], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    rc = _convert(out)
    err = capsys.readouterr().err
    assert rc == EXIT_PARTIAL and "2 of 4 artifacts failed" in err and "Traceback" not in err
    assert onnx2tf_fails == [1]  # run once, its failure shared by both TFLite chains
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "mnist_cnn.fp32.onnx", "mnist_cnn.int8.onnx"]
    manifest = json.loads((out / "manifest.json").read_text())
    by_path = {a["path"]: a for a in manifest["artifacts"]}
    for name in ("mnist_cnn.fp32.onnx", "mnist_cnn.int8.onnx"):
        assert by_path[name]["status"] == "ok" and by_path[name]["failure"] is None
        assert by_path[name]["fidelity"]["passed"]
    for name in ("mnist_cnn.fp32.tflite", "mnist_cnn.int8.tflite"):
        a = by_path[name]
        assert a["status"] == "failed" and a["size_bytes"] == 0 and a["fidelity"] is None
        assert a["failure"]["step"] == "onnx_to_savedmodel" and a["failure"]["op"] == "Einsum"
        assert a["failure"]["hint"] == "replace the op" and a["failure"]["exit_code"] == EXIT_CONVERSION
    assert any("mnist_cnn.int8.tflite: not made: onnx_to_savedmodel failed" in w for w in manifest["warnings"])
    run = manifest["run"]  # what the run cost, failures included
    assert run["seconds"] > 0 and run["peak_rss_bytes"] > 100 * 2**20
    assert not list(tmp_path.glob(".edgekit-staging*"))

    capsys.readouterr()
    rc = main(["bench", str(out), "--json", "--in-process", "--no-source", "--runs", "3", "--min-seconds", "0",
               "--warmup", "1"])
    rows = {r["path"].rsplit("/", 1)[-1]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rc == 0 and rows["mnist_cnn.fp32.onnx"]["status"] == "ok"
    assert rows["mnist_cnn.int8.tflite"]["status"] == "failed"
    assert "conversion failed at onnx_to_savedmodel" in rows["mnist_cnn.int8.tflite"]["note"]


def test_strict_stops_at_the_first_failure_and_publishes_nothing(onnx2tf_fails: list[int], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rc = _convert(tmp_path / "o", "--strict")
    assert rc == EXIT_CONVERSION and "Einsum" in capsys.readouterr().err
    assert not (tmp_path / "o").exists() and not list(tmp_path.glob(".edgekit-staging*"))


def test_when_every_artifact_fails_the_run_fails_as_before(onnx2tf_fails: list[int], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["convert", str(MODELS / "mnist_cnn.pt2"), "--target", "tflite", "--out", str(tmp_path / "o")])
    assert rc == EXIT_CONVERSION and "onnx_to_savedmodel" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_an_artifact_that_fails_validation_is_that_artifacts_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import edgekit.conversion.execute as execute

    real = execute._artifact

    def crashing(path: Path, fmt: str, *args: object, **kw: object) -> object:
        if path.name.endswith(".int8.onnx"):  # as the isolated validation reports a runtime that died
            raise RuntimeFailure("onnxruntime crashed (SIGABRT) while validating it", hint="try fp32")
        return real(path, fmt, *args, **kw)

    monkeypatch.setattr(execute, "_artifact", crashing)
    out = tmp_path / "o"
    rc = main(["convert", str(MODELS / "mnist_cnn.pt2"), "--quantize", "fp32,int8", "--calib", "mnist",
               "--val-size", "100", "--out", str(out)])
    assert rc == EXIT_PARTIAL
    manifest = json.loads((out / "manifest.json").read_text())
    failed = {a["path"]: a for a in manifest["artifacts"]}["mnist_cnn.int8.onnx"]
    assert failed["status"] == "failed" and failed["failure"]["step"] == "validate"
    assert failed["failure"]["error"] == "RuntimeFailure" and "SIGABRT" in failed["failure"]["message"]
    assert not (out / "mnist_cnn.int8.onnx").exists() and (out / "mnist_cnn.fp32.onnx").is_file()


def test_an_artifact_that_kills_its_runtime_fails_alone_and_the_cli_survives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The int8 .tflite is replaced by one XNNPACK refuses and LiteRT's builtin kernels abort on (SIGABRT),
    the pattern of the ResNet-18 in issue 8: validation runs in a child, so only that artifact fails."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bad_tflite", MODELS.parent / "tests" / "runtimes" / "bad_tflite.py")
    assert spec is not None and spec.loader is not None
    bad = importlib.util.module_from_spec(spec)
    # its dataclasses resolve their annotations through sys.modules: registered first, or the test passed only
    # where another test on the same worker had imported the module
    monkeypatch.setitem(sys.modules, "bad_tflite", bad)
    spec.loader.exec_module(bad)
    from edgekit.steps.tflite_convert import TfliteConvert

    real_run = TfliteConvert.run

    def run(self: TfliteConvert, inp: object, ctx: object) -> object:
        out = real_run(self, inp, ctx)  # type: ignore[arg-type]
        if self.params.precision == "int8":
            bad.xnnpack_refuses_builtin_aborts(out.path)
        return out

    monkeypatch.setattr(TfliteConvert, "run", run)
    out = tmp_path / "o"
    rc = _convert(out)
    assert rc == EXIT_PARTIAL, capsys.readouterr().err
    by_path = {a["path"]: a for a in json.loads((out / "manifest.json").read_text())["artifacts"]}
    failed = by_path["mnist_cnn.int8.tflite"]
    assert failed["status"] == "failed" and failed["failure"]["step"] == "validate"
    # a runtime killed by a signal: RuntimeCrash, the RuntimeFailure that serve and profile fall past
    assert "SIGABRT" in failed["failure"]["message"] and failed["failure"]["error"] == "RuntimeCrash"
    assert [a["status"] for n, a in sorted(by_path.items()) if n != "mnist_cnn.int8.tflite"] == ["ok"] * 3
    assert not (out / "mnist_cnn.int8.tflite").exists() and (out / "mnist_cnn.fp32.tflite").is_file()
