"""The Conversion result: look-ups, the CLI's table in print and as HTML, the Edge TPU state, reading a run back.

Built from a hand-made manifest (the records a run writes), so no conversion runs here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import edgekit
from edgekit.api.result import ArtifactNotFound, Conversion
from edgekit.core.artifact import Artifact, ArtifactFailure, Manifest, SourceInfo
from edgekit.core.errors import UsageError
from edgekit.core.fidelity import Fidelity
from edgekit.core.tensors import TensorSpec
from edgekit.edgetpu.records import EdgeTpuReport, PreflightReport


def _art(path: str, fmt: str, precision: str, size: int, **kw) -> Artifact:
    return Artifact(path=path, format=fmt, precision=precision, size_bytes=size, sha256="0" * 64,
                    inputs=[TensorSpec("input", [1, 3, 8, 8], "float32")], outputs=[TensorSpec("output", [1, 4],
                                                                                                "float32")], **kw)


@pytest.fixture()
def run(tmp_path: Path) -> Conversion:
    fid = Fidelity(samples=100, top1_agreement=0.99, cosine=0.9995, max_abs_error=0.01, accuracy=0.97,
                   reference_accuracy=0.98)
    preflight = PreflightReport(predicted=True, compiled=False, ops_total=5, ops_on_tpu=5, summary="all ops map")
    tpu = EdgeTpuReport(preflight=preflight, compiled=False, how_to_finish="edgetpu_compiler model.int8.tflite")
    arts = [
        _art("model.fp32.onnx", "onnx", "fp32", 4000, fidelity=fid),
        _art("model.int8.onnx", "onnx", "int8", 1500, fidelity=Fidelity(samples=100, top1_agreement=0.5,
                                                                         cosine=0.9, passed=False,
                                                                         failures=["top-1 agreement 50% < 97%"])),
        _art("model.int8.tflite", "tflite", "int8", 1200, fidelity=fid, extra={"edgetpu": tpu.to_dict()}),
        _art("model.int8-uint8io.tflite", "tflite", "int8", 1200, fidelity=fid, extra={"io_dtype": "uint8"}),
        Artifact(path="model.fp16.tflite", format="tflite", precision="fp16", inputs=[], outputs=[], size_bytes=0,
                 sha256="", status="failed", failure=ArtifactFailure(step="tflite_convert", message="boom",
                                                                     hint="try fp32")),
    ]
    manifest = Manifest(source=SourceInfo(path="out/source/model.pt2", kind="torch-exported", layout="NCHW"),
                        artifacts=arts, warnings=["model.int8.onnx: fidelity below threshold"])
    (tmp_path / "out").mkdir()
    path = manifest.write(tmp_path / "out" / "manifest.json")
    return Conversion(manifest, path, not_compiled=True, how_to_finish=tpu.how_to_finish)


def test_look_up_by_target_and_precision(run: Conversion) -> None:
    assert run["onnx", "int8"].path == "model.int8.onnx"
    assert run["tflite", "int8"].path == "model.int8.tflite"  # the variant named exactly wins over its I/O twin
    assert run["tflite", "int8-uint8io"].path == "model.int8-uint8io.tflite"
    assert run["model.fp32.onnx"].precision == "fp32" and run[0].path == "model.fp32.onnx"
    assert [a.path for a in run][:2] == ["model.fp32.onnx", "model.int8.onnx"] and len(run) == 5
    assert ("onnx", "fp32") in run and ("openvino", "int8") not in run


@pytest.mark.parametrize(("key", "message"), [
    (("openvino", "int8"), r'no artifact \("openvino", "int8"\)'),
    ("onnx", '2 artifacts match "onnx"'),
    (3.5, "Cannot look an artifact up"),
])
def test_a_miss_names_what_the_run_made(run: Conversion, key: object, message: str) -> None:
    with pytest.raises(ArtifactNotFound, match=message) as err:
        run[key]  # type: ignore[index]
    assert isinstance(err.value, KeyError) and isinstance(err.value, UsageError)
    if not isinstance(key, float):
        assert '("tflite", "int8-uint8io")' in str(err.value)


def test_an_artifact_reads_like_its_record(run: Conversion) -> None:
    a = run["onnx", "fp32"]
    assert a.format == "onnx" and a.fidelity.top1_agreement == 0.99 and a.size_bytes == 4000 and a.ok
    assert a.file == run.out_dir.resolve() / "model.fp32.onnx" and a.record is run.manifest.artifacts[0]
    assert "model.fp32.onnx (onnx fp32), 3.9 KB, agreement 99.00%, fidelity pass" in repr(a)
    with pytest.raises(AttributeError):
        a.no_such_field  # noqa: B018


def test_an_artifact_that_was_not_made_says_so(run: Conversion) -> None:
    failed = run["tflite", "fp16"]
    assert not failed.ok and run.failed == [failed] and "FAILED at tflite_convert" in repr(failed)
    for call in (failed.load, failed.inspect, failed.profile):
        with pytest.raises(UsageError, match="was not made: boom") as err:
            call()
        assert err.value.hint == "try fp32"


def test_a_missing_file_is_a_usage_error(run: Conversion) -> None:
    with pytest.raises(UsageError, match="is missing"):
        run["onnx", "fp32"].load()


def test_print_shows_the_cli_table_and_the_lines_under_it(run: Conversion) -> None:
    text = str(run)
    header = next(line for line in text.splitlines() if "artifact" in line)
    for column in ("artifact", "size", "vs fp32", "agreement", "accuracy", "cosine", "time", "fidelity"):
        assert column in header
    assert "model.int8.onnx" in text and "MISS" in text and "FAILED at tflite_convert" in text
    assert "97.00% (-1.00)" in text  # accuracy and its change against the source
    assert f"manifest: {run.manifest_path}" in text and "warning: model.int8.onnx: fidelity below" in text
    assert "1 of 5 artifacts failed" in text and "not compiled" in text and "edgetpu_compiler model.int8" in text
    assert repr(run) == text and "\x1b[" not in text  # no colour codes in a log


def test_jupyter_gets_the_same_table_as_html(run: Conversion) -> None:
    html = run._repr_html_()
    assert html.count("<th ") == 8 and html.count("<tr>") == 6  # the header and one row per artifact
    for column in ("artifact", "vs fp32", "agreement", "fidelity"):
        assert f">{column}</th>" in html
    assert "<caption" in html and "out/source/model.pt2" in html
    assert "model.int8-uint8io.tflite" in html and "color:" in html  # MISS / pass keep their colours
    assert "[bold red]" not in html and "[green]" not in html  # markup rendered, not shown
    assert "edgetpu_compiler model.int8.tflite" in html


def test_the_edgetpu_state(run: Conversion) -> None:
    assert run.not_compiled and run.edgetpu is not None and run.edgetpu.preflight.ops_on_tpu == 5
    assert not run.edgetpu.compiled


def test_a_run_read_back_from_its_folder(run: Conversion) -> None:
    again = edgekit.open_run(run.out_dir)
    assert [a.path for a in again] == [a.path for a in run] and again.manifest_path == run.manifest_path
    assert again.not_compiled and again.how_to_finish == "edgetpu_compiler model.int8.tflite"
    assert again.warnings == run.warnings and str(again) == str(run)
    assert Conversion.open(run.manifest_path)["onnx", "int8"].fidelity.passed is False


def test_a_folder_without_a_run_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="No manifest.json"):
        edgekit.open_run(tmp_path)


def test_to_pandas(run: Conversion, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas")
    frame = run.to_pandas()
    assert list(frame["path"])[:2] == ["model.fp32.onnx", "model.int8.onnx"] and frame["size_bytes"][0] == 4000
    assert list(frame["variant"])[3] == "int8-uint8io" and frame["status"][4] == "failed"
    monkeypatch.setitem(sys.modules, "pandas", None)  # not installed: the pip line, not an ImportError
    with pytest.raises(edgekit.MissingDependency, match="pandas"):
        run.to_pandas()
