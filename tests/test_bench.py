"""edgekit bench on a hand-written manifest of real artifacts (the tiny CNN in several formats)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from edgekit.artifact import Artifact, Fidelity, Manifest, SourceInfo, TensorSpec
from edgekit.bench import BenchReport, BenchSettings, bench, load_target
from edgekit.fsutil import sha256_file

FAST = dict(runs=10, min_seconds=0.02, warmup=1)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGEKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "edgekit-cache"))


def _artifact(path: Path, fmt: str, precision: str, top1: float | None, acc: float | None, **extra: Any) -> Artifact:
    fid = Fidelity(samples=100, top1_agreement=top1, cosine=0.999, max_abs_error=0.01, accuracy=acc,
                   reference_accuracy=0.5) if top1 is not None else None
    return Artifact(path=path.name, format=fmt, precision=precision, size_bytes=path.stat().st_size if path.exists()
                    else 0, sha256=sha256_file(path) if path.exists() else "", fidelity=fid, extra=extra,
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
    src = Path(m["torch-pt2"])
    Manifest(source=SourceInfo(path=str(src), sha256=sha256_file(src), kind="torch-exported"),
             artifacts=arts).write(out / "manifest.json")
    return out


def test_bench_rows_reference_and_files(run_dir: Path) -> None:
    pytest.importorskip("torch")
    report = bench(run_dir, BenchSettings(isolate=False, **FAST)).to_dict()
    rows = {(r["label"], r["runtime"], r["device"]): r for r in report["rows"]}
    labels = [r["label"] for r in report["rows"]]
    assert labels == ["source (torch-exported)", "onnx fp32", "tflite fp32", "tflite int8", "edgetpu int8"]
    src = rows[("source (torch-exported)", "torch", "cpu")]
    assert src["status"] == "ok" and src["accuracy"] == 0.5 and src["speedup"] == pytest.approx(1.0)
    ref = report["reference"]
    assert ref["kind"] == "source model" and ref["p50_ms"] == src["p50_ms"]
    for r in report["rows"][1:4]:
        assert r["status"] == "ok" and r["p50_ms"] > 0 and r["p90_ms"] >= r["p50_ms"]
        assert r["speedup"] == pytest.approx(ref["p50_ms"] / r["p50_ms"])
        assert r["joules_per_inference"] is None  # no sensor here: not measured, not 0
    int8 = rows[("tflite int8", "litert", "cpu")]
    assert int8["top1_agreement"] == 0.97 and int8["accuracy"] == 0.48
    tpu = rows[("edgetpu int8", "litert", "edgetpu")]
    assert tpu["status"] == "not available" and "edgetpu_compiler" in tpu["note"]
    assert len(report["results"]) == 4
    assert report["energy_note"].startswith("Energy not measured: ")

    files = report["files"]
    data = json.loads(Path(files["json"]).read_text())
    assert data["rows"] == report["rows"] and data["schema_version"] == 1
    assert BenchReport.from_dict(data).to_dict() == data == report  # bench.json reads back to the same record
    md = Path(files["markdown"]).read_text()
    assert "| Model | Format | Precision |" in md and md.count("\n| ") == 1 + 5
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
    from edgekit.errors import UsageError

    empty = tmp_path / "nothing-here"
    empty.mkdir()
    with pytest.raises(UsageError, match="no manifest.json"):
        load_target(empty)


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
    from edgekit.bench import plan_jobs

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
