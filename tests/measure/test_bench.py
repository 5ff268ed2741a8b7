"""edgekit bench on a hand-written manifest of real artifacts (the tiny CNN in several formats)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from edgekit.core.artifact import Artifact, Fidelity, Manifest, SourceInfo, TensorSpec
from edgekit.core.fsutil import sha256_file, sha256_path
from edgekit.measure.bench import BenchReport, BenchSettings, bench, load_target
from edgekit.runtimes.openvino import OpenVINO

FAST = dict(runs=10, min_seconds=0.02, warmup=1)
HAVE_OPENVINO = OpenVINO.available("cpu")[0]  # then ONNX artifacts get an openvino row too, and IRs are benched


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGEKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "edgekit-cache"))


def _artifact(path: Path, fmt: str, precision: str, top1: float | None, acc: float | None, **extra: Any) -> Artifact:
    fid = Fidelity(samples=100, top1_agreement=top1, cosine=0.999, max_abs_error=0.01, accuracy=acc,
                   reference_accuracy=0.5) if top1 is not None else None
    return Artifact(path=path.name, format=fmt, precision=precision, size_bytes=path.stat().st_size if path.exists()
                    else 0, sha256=sha256_path(path) if path.exists() else "", fidelity=fid, extra=extra,
                    inputs=[TensorSpec("input", [-1, 1, 28, 28], "float32", "NCHW")] if fmt == "onnx" else [],
                    outputs=[])


@pytest.fixture()
def run_dir(tiny_models: dict[str, Any], tmp_path: Path) -> Path:
    """A conversion-run folder: three artifacts, an Edge TPU model that was not compiled, the .pt2 source."""
    m = tiny_models["models"]
    out = tmp_path / "run"
    out.mkdir()
    for key, name in (("onnx", "tiny.fp32.onnx"), ("tflite-fp32", "tiny.fp32.tflite"),
                      ("tflite-int8", "tiny.int8.tflite")):
        shutil.copy(m[key], out / name)
    arts = [_artifact(out / "tiny.fp32.onnx", "onnx", "fp32", 1.0, 0.5),
            _artifact(out / "tiny.fp32.tflite", "tflite", "fp32", 1.0, 0.5),
            _artifact(out / "tiny.int8.tflite", "tflite", "int8", 0.97, 0.48),
            _artifact(out / "tiny_edgetpu.tflite", "edgetpu", "int8", None, None,
                      edgetpu={"how_to_finish": "run edgetpu_compiler on tiny.int8.tflite"})]
    if HAVE_OPENVINO:  # an OpenVINO IR: model.xml and its model.bin
        xml = Path(m["openvino-fp32"])
        shutil.copy(xml, out / "tiny.fp32.xml")
        shutil.copy(xml.with_suffix(".bin"), out / "tiny.fp32.bin")
        arts.append(_artifact(out / "tiny.fp32.xml", "openvino", "fp32", 1.0, 0.5))
    src = Path(m["torch-pt2"])
    Manifest(source=SourceInfo(path=str(src), sha256=sha256_file(src), kind="torch-exported"),
             artifacts=arts).write(out / "manifest.json")
    return out


def test_bench_rows_reference_and_files(run_dir: Path) -> None:
    pytest.importorskip("torch")
    report = bench(run_dir, BenchSettings(isolate=False, **FAST)).to_dict()
    rows = {(r["label"], r["runtime"], r["device"]): r for r in report["rows"]}
    labels = [r["label"] for r in report["rows"]]
    ov = ["openvino"] if HAVE_OPENVINO else []
    assert labels == ["source (torch-exported)", "onnx fp32", *["onnx fp32" for _ in ov], "tflite fp32", "tflite int8",
                      "edgetpu int8", *["openvino fp32" for _ in ov]]
    assert [r["runtime"] for r in report["rows"] if r["label"] == "onnx fp32"] == ["onnxruntime", *ov]
    src = rows[("source (torch-exported)", "torch", "cpu")]
    assert src["status"] == "ok" and src["accuracy"] == 0.5 and src["speedup"] == pytest.approx(1.0)
    ref = report["reference"]
    assert ref["kind"] == "source model" and ref["p50_ms"] == src["p50_ms"]
    for r in [r for r in report["rows"][1:] if r["label"] != "edgetpu int8"]:
        assert r["status"] == "ok" and r["p50_ms"] > 0 and r["p90_ms"] >= r["p50_ms"]
        assert r["speedup"] == pytest.approx(ref["p50_ms"] / r["p50_ms"])
        assert r["joules_per_inference"] is None  # no sensor here: not measured, not 0
    int8 = rows[("tflite int8", "litert", "cpu")]
    assert int8["top1_agreement"] == 0.97 and int8["accuracy"] == 0.48
    tpu = rows[("edgetpu int8", "litert", "edgetpu")]
    assert tpu["status"] == "not available" and "edgetpu_compiler" in tpu["note"]
    assert len(report["results"]) == 4 + 2 * len(ov)
    assert report["energy_note"].startswith("Energy not measured: ")

    files = report["files"]
    data = json.loads(Path(files["json"]).read_text())
    assert data["rows"] == report["rows"] and data["schema_version"] == 1
    assert BenchReport.from_dict(data).to_dict() == data == report  # bench.json reads back to the same record
    md = Path(files["markdown"]).read_text()
    assert "| Model | Format | Precision |" in md and md.count("\n| ") == 1 + len(labels)
    assert "Speed-up: p50 of the source model" in md and "not available" in md
    assert Path(files["chart"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert Path(files["json"]).parent == run_dir / "bench"


def test_changed_source_falls_back_to_the_fp32_artifact(run_dir: Path, tmp_path: Path) -> None:
    m = Manifest.read(run_dir)
    m.source.sha256 = "0" * 64
    m.write(run_dir / "manifest.json")
    report = bench(run_dir / "manifest.json", BenchSettings(isolate=False, runtimes=["onnxruntime", "torch"], **FAST),
                   out_dir=tmp_path / "out").to_dict()
    src = report["rows"][0]
    assert src["status"] == "not available" and "changed since the conversion" in src["note"]
    assert report["reference"]["kind"].startswith("fp32 artifact")
    assert report["reference"]["label"] == "onnx fp32 on onnxruntime/cpu"
    assert [r["runtime"] for r in report["rows"]] == ["torch", "onnxruntime"]  # --runtime narrows the rows
    assert (tmp_path / "out" / "bench.md").is_file()


def test_each_row_in_its_own_process(run_dir: Path, tmp_path: Path) -> None:
    """The default: rows run as `edgekit profile --json` subprocesses (memory per row, crashes contained)."""
    report = bench(run_dir, BenchSettings(runtimes=["litert"], include_source=False, **FAST),
                   out_dir=tmp_path).to_dict()
    ok = [r for r in report["rows"] if r["status"] == "ok"]
    assert [r["label"] for r in ok] == ["tflite fp32", "tflite int8"]
    assert all(res["schema_version"] == 1 for res in report["results"])
    assert report["results"][0]["artifact"]["precision_source"] == "manifest"


def test_folder_without_manifest(tiny_models: dict[str, Any], tmp_path: Path) -> None:
    shutil.copy(tiny_models["models"]["tflite-int8"], tmp_path / "model_int8.tflite")
    (tmp_path / "notes.txt").write_text("not a model")
    manifest, _ = load_target(tmp_path)
    assert [(a.format, a.precision) for a in manifest.artifacts] == [("tflite", "int8")]
    from edgekit.core.errors import UsageError

    empty = tmp_path / "nothing-here"
    empty.mkdir()
    with pytest.raises(UsageError, match="no manifest.json"):
        load_target(empty)


def test_a_source_without_its_sha256_is_not_planned_for_a_device(run_dir: Path) -> None:
    """The source can sit anywhere; for a --remote device only the file the conversion read (by digest) travels."""
    from edgekit.measure.bench import plan_jobs

    m = Manifest.read(run_dir)
    s = BenchSettings(runtimes=["torch"])
    assert plan_jobs(m, run_dir / "manifest.json", s, here=False)[0].skip is None
    m.source.sha256 = ""
    src = plan_jobs(m, run_dir / "manifest.json", s, here=False)[0]
    assert src.label.startswith("source") and "no sha256 of the source" in (src.skip or "")
    assert plan_jobs(m, run_dir / "manifest.json", s)[0].skip is None  # here: the user's own file, as before


def test_cli_table(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from edgekit.cli import main

    code = main(["bench", str(run_dir), "--in-process", "--no-source", "--runtime", "onnxruntime", "--runs", "5",
                 "--min-seconds", "0", "--warmup", "0"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "onnx fp32" in out and "Speed-up" in out and "bench.png" in out
    assert "bench 1/1" in err
    code = main(["bench", str(run_dir), "--in-process", "--no-source", "--runtime", "onnxruntime", "--runs", "5",
                 "--min-seconds", "0", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0 and json.loads(out)["rows"][0]["label"] == "onnx fp32"


def test_row_command_line_and_the_factory_the_manifest_names(run_dir: Path) -> None:
    """A row's `edgekit profile` flags come from the one settings record; --model from manifest options.factory."""
    from edgekit.measure.bench import plan_jobs

    m = Manifest.read(run_dir)
    m.options = {"factory": "mypkg.models:build", "trust_model": True, "model": "ignored:never_written"}
    m.write(run_dir / "manifest.json")
    s = BenchSettings(runs=7, min_seconds=0.25, warmup=2, threads=3, batch=2, input="mnist", raw_io=True,
                      runtimes=["torch"])
    src = plan_jobs(m, run_dir / "manifest.json", s)[0]
    assert src.label == "source (torch-exported)" and src.options["factory"] == "mypkg.models:build"
    args = src.cli_args(s)
    assert args[:3] == ["profile", str(src.path), "--json"]
    flags = " ".join(args[3:])
    for part in ("--runtime torch", "--device cpu", "--runs 7", "--min-seconds 0.25", "--warmup 2", "--batch 2",
                 "--threads 3", "--input mnist", "--raw-io", "--model mypkg.models:build", "--trust-model"):
        assert part in flags
    assert "ignored" not in flags and "--idle-baseline" not in flags


def _detector(map50: float, ref: float) -> Fidelity:
    """A detector artifact's record as validation writes it (edgekit.fidelity.metrics.judge_detection)."""
    return Fidelity(samples=64, top1_agreement=None, cosine=0.998, max_abs_error=2.5, kind="detection",
                    output="output0", detection_recall=0.9712, detection_precision=0.96, box_iou=0.94,
                    score_change=0.01, detections=150, map50=map50, reference_map50=ref, map50_95=map50 - 0.2,
                    reference_map50_95=ref - 0.2)


def test_detector_rows_carry_the_box_figures_and_the_table_shows_them(tmp_path: Path) -> None:
    """No file is measured (none was written): the rows' fidelity comes from the manifest alone."""
    run = tmp_path / "run"
    run.mkdir()
    arts = [Artifact(path="yolo.fp32.onnx", format="onnx", precision="fp32", inputs=[], outputs=[], size_bytes=4000,
                     sha256="a", fidelity=_detector(0.62, 0.62)),
            Artifact(path="yolo.int8.onnx", format="onnx", precision="int8", inputs=[], outputs=[], size_bytes=1000,
                     sha256="b", fidelity=_detector(0.612, 0.62))]
    Manifest(source=SourceInfo(path="yolo.pt2", kind="torch-exported"), artifacts=arts).write(run / "manifest.json")
    report = bench(run, BenchSettings(isolate=False, **FAST), out_dir=tmp_path / "out")
    data = json.loads(Path(report.files["json"]).read_text())
    rows = {r["label"]: r for r in data["rows"]}
    int8 = rows["onnx int8"]
    assert int8["kind"] == "detection" and int8["top1_agreement"] is None
    assert (int8["detection_recall"], int8["detection_precision"], int8["box_iou"], int8["detections"]) == (
        0.9712, 0.96, 0.94, 150)
    assert (int8["map50"], int8["reference_map50"]) == (0.612, 0.62)
    assert int8["map50_95"] == pytest.approx(0.412) and int8["reference_map50_95"] == pytest.approx(0.42)
    src = rows["source (torch-exported)"]  # not found here, but its figures are the source's own
    assert src["status"] == "not available" and src["map50"] == 0.62 and src["detection_recall"] is None

    from edgekit.report.bench import markdown, table_rows

    again = BenchReport.from_dict(data)  # bench.json read back, as check and CI read it
    cells = {row[0]: row for row in table_rows(again)}
    assert cells["onnx int8"][6] == "recall 97.1% prec 96.0% drift 0.010 mAP50 61.2% (-0.8)"
    assert cells["onnx fp32"][6] == "recall 97.1% prec 96.0% drift 0.010 mAP50 62.0% (+0.0)"
    assert cells["source (torch-exported)"][6] == "mAP50 62.0%"
    md = Path(report.files["markdown"]).read_text()
    assert md == markdown(again)
    assert "| Size | Agreement | Accuracy |" in md
    assert "| recall 97.1% prec 96.0% drift 0.010 mAP50 61.2% (-0.8) |" in md
    assert "Detectors: recall is the share of the source's boxes" in md


def test_a_bench_json_from_before_the_detection_figures_still_reads(tmp_path: Path) -> None:
    """Rows written before kind / detection_* / map* existed: they read, and the table shows their top-1."""
    from edgekit.report.bench import markdown, table_rows

    run = tmp_path / "run"
    run.mkdir()
    arts = [Artifact(path="m.int8.onnx", format="onnx", precision="int8", inputs=[], outputs=[], size_bytes=10,
                     sha256="a", fidelity=Fidelity(samples=10, top1_agreement=0.97, cosine=0.99, max_abs_error=0.1))]
    Manifest(source=SourceInfo(), artifacts=arts).write(run / "manifest.json")
    data = bench(run, BenchSettings(isolate=False, **FAST), out_dir=tmp_path / "out").to_dict()
    old = {"top1_agreement", "accuracy", "label", "format", "precision", "runtime", "device", "path", "size_bytes",
           "status", "note", "p50_ms", "p90_ms", "throughput_per_s", "joules_per_inference", "energy_estimated",
           "speedup"}
    data["rows"] = [{k: v for k, v in r.items() if k in old} for r in data["rows"]]
    report = BenchReport.from_dict(data)
    assert report.rows[0].detection_recall is None and report.rows[0].kind is None
    assert table_rows(report)[0][6] == "97.00%" and "Detectors:" not in markdown(report)


def test_a_keras_source_has_no_source_row(tmp_path: Path) -> None:
    """No runtime runs a .keras file (FORMATS' keras has none): its conversion is benched without a source row,
    not with a crash looking up a runtime named None."""
    from edgekit.measure.bench import plan_jobs

    (tmp_path / "m.keras").write_bytes(b"PK")
    Manifest(source=SourceInfo(path=str(tmp_path / "m.keras"), kind="keras"), artifacts=[]).write(
        tmp_path / "manifest.json")
    manifest = Manifest.read(tmp_path / "manifest.json")
    assert plan_jobs(manifest, tmp_path / "manifest.json", BenchSettings(include_source=True)) == []
