"""serve orders a folder's candidates by the bench report this machine measured (edgekit.serve.bench_rank), and a
real server serves the fastest row that passed validation and says why in its metadata."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest

from edgekit.core.artifact import Artifact, Fidelity, TensorSpec
from edgekit.core.errors import UsageError
from edgekit.measure.bench_report import BenchReport, BenchRow
from edgekit.measure.devices import host_info
from edgekit.measure.fastest import different_machine
from edgekit.serve.bench_rank import chosen, rank
from edgekit.serve.models import ModelChoice

HERE = {"cpu_model": "Cortex-A76", "machine": "aarch64", "board": "Raspberry Pi 5 Model B", "cpu_cores_logical": 4}


def _choice(name: str, runtime: str, sha: str = "s") -> ModelChoice:
    spec = TensorSpec("x", [1, 4], "float32")
    art = Artifact(path=name, format=name.rsplit(".", 1)[1], precision=name.split(".")[1], inputs=[spec],
                   outputs=[spec], size_bytes=1, sha256=sha, fidelity=Fidelity(1, 1.0, 1.0, 0.0, passed=True))
    return ModelChoice(name="m", aliases=(), path=Path("/out") / name, format=art.format, precision=art.precision,
                       runtime=runtime, device="cpu", artifact=art, preprocessing=None)


def _report(folder: Path, rows: list[tuple[str, str, float | None, str]], host: dict | None = None,
            sha: str = "s") -> Path:
    """FOLDER/bench/bench.json with ROWS (file, runtime, p50, status), measured on HOST."""
    report = BenchReport(host=dict(HERE if host is None else host), rows=[
        BenchRow(label=f"{f} {rt}", path=f"/out/{f}", sha256=sha, runtime=rt, device="cpu", p50_ms=p50,
                 status=status) for f, rt, p50, status in rows])
    (folder / "bench").mkdir(parents=True, exist_ok=True)
    path = folder / "bench" / "bench.json"
    path.write_text(json.dumps(report.to_dict()))
    return path


def test_without_a_report_the_table_order_stands(tmp_path: Path) -> None:
    cands = [_choice("m.int8.tflite", "litert"), _choice("m.fp32.onnx", "onnxruntime")]
    r = rank(cands, tmp_path, "auto", HERE)
    assert r.candidates == cands and "no bench report" in r.why
    assert "--bench off" in rank(cands, tmp_path, "off", HERE).why


def test_the_fastest_measured_row_goes_first_and_each_says_why(tmp_path: Path) -> None:
    cands = [_choice("m.int8.tflite", "litert"), _choice("m.int8.onnx", "onnxruntime"),
             _choice("m.fp32.onnx", "onnxruntime"), _choice("m.int8.onnx", "openvino")]
    _report(tmp_path, [("m.int8.tflite", "litert", 3.5, "ok"), ("m.int8.onnx", "onnxruntime", 2.1, "ok"),
                       ("m.fp32.onnx", "onnxruntime", 0.9, "failed"),  # did not run: no figure to trust
                       ("m.int8.onnx", "openvino", 1.9, "ok")])
    r = rank(cands, tmp_path, "auto", HERE)
    assert [(c.path.name, c.runtime) for c in r.candidates] == [
        ("m.int8.onnx", "openvino"), ("m.int8.onnx", "onnxruntime"), ("m.int8.tflite", "litert"),
        ("m.fp32.onnx", "onnxruntime")]
    assert "p50 1.900 ms" in r.why and "3 of 4 candidates measured" in r.why
    notes = [c.chosen_by for c in chosen(r)]
    assert notes[0].startswith("bench: p50 1.900 ms") and "1 of 3 measured here" in notes[0]
    assert notes[-1].startswith("the format table's ranks: not measured")


def test_rows_of_another_file_or_device_do_not_count(tmp_path: Path) -> None:
    cands = [_choice("m.int8.tflite", "litert"), _choice("m.fp32.onnx", "onnxruntime")]
    # the same name but converted again since (another sha256): the old timing says nothing of the new file
    _report(tmp_path, [("m.fp32.onnx", "onnxruntime", 0.5, "ok")], sha="old")
    assert rank(cands, tmp_path, "auto", HERE).candidates == cands
    report = BenchReport.read(_report(tmp_path, [("m.fp32.onnx", "onnxruntime", 0.5, "ok")]))
    report.rows[0].host = "pi@10.0.0.7:22"  # a --remote device's row is that device's speed
    (tmp_path / "bench" / "bench.json").write_text(json.dumps(report.to_dict()))
    assert rank(cands, tmp_path, "auto", HERE).candidates == cands


def test_a_report_from_another_machine_is_ignored_or_refused_when_named(tmp_path: Path) -> None:
    cands = [_choice("m.int8.tflite", "litert"), _choice("m.fp32.onnx", "onnxruntime")]
    path = _report(tmp_path, [("m.fp32.onnx", "onnxruntime", 0.5, "ok")], host={**HERE, "cpu_model": "Cortex-A72"})
    r = rank(cands, tmp_path, "auto", HERE)
    assert r.candidates == cands and "another machine" in r.why and "Cortex-A72" in r.why
    with pytest.raises(UsageError, match="cannot rank what is served here"):
        rank(cands, tmp_path, str(path), HERE)
    assert "emulation" in (different_machine({**HERE, "emulated": {"core": "cortex-a76"}}, HERE) or "")


def test_a_hostile_report_is_bad_input_when_named_and_passed_over_when_found(tmp_path: Path) -> None:
    cands = [_choice("m.int8.tflite", "litert")]
    (tmp_path / "bench").mkdir()
    bad = tmp_path / "bench" / "bench.json"
    bad.write_text('{"schema_version": 1, "rows": "all of them"')
    assert "not a bench report" in rank(cands, tmp_path, "auto", HERE).why
    with pytest.raises(UsageError):
        rank(cands, tmp_path, str(bad), HERE)
    with pytest.raises(UsageError):
        rank(cands, tmp_path, str(tmp_path / "missing.json"), HERE)


@pytest.mark.slow  # a real server on 127.0.0.1 serving the bundled conversion
def test_serve_serves_the_fastest_measured_row_and_says_why(bundled_conversion, tmp_path: Path) -> None:
    from edgekit.testing.server import ServerProcess

    src = bundled_conversion.manifest_path.parent
    out = tmp_path / "mnist_cnn"
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("bench"))
    arts = {a.path: a for a in bundled_conversion.manifest.artifacts}
    fp32 = arts["mnist_cnn.fp32.onnx"]
    # as `edgekit bench` would have measured it on this machine: the fp32 ONNX the fastest row here
    int8 = arts["mnist_cnn.int8.tflite"]
    report = BenchReport(host=host_info(), rows=[
        BenchRow(label="onnx fp32", path=str(out / fp32.path), sha256=fp32.sha256, runtime="onnxruntime",
                 device="cpu", p50_ms=0.05, status="ok"),
        BenchRow(label="tflite int8", path=str(out / int8.path), sha256=int8.sha256, runtime="litert", device="cpu",
                 p50_ms=0.2, status="ok")])
    (out / "bench").mkdir(exist_ok=True)
    (out / "bench" / "bench.json").write_text(json.dumps(report.to_dict()))
    server = ServerProcess([str(out)], tmp_path / "server.log")
    try:
        meta = httpx.get(f"{server.base}/v2/models/mnist_cnn").json()
        assert meta["parameters"]["path"] == "mnist_cnn.fp32.onnx"  # the table alone serves the int8 TFLite
        assert meta["parameters"]["chosen_by"].startswith("bench: p50 0.050 ms")
        assert "fastest measured in" in server.text()
    finally:
        server.stop()
