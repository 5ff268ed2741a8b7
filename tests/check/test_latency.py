"""Latency checks on recorded bench reports: relative to the source model, the spread guard, the fallbacks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_CHECK

SEED = json.loads((Path(__file__).resolve().parents[1] / "fuzz" / "seeds" / "bench.json").read_text())
ART = {"path": "m.int8.onnx", "format": "onnx", "precision": "int8", "size_bytes": 100, "sha256": "s"}


def run(tmp_path: Path, name: str, source: tuple[float, float], row: tuple[float, float]) -> Path:
    """An output folder whose bench.json measured the source at SOURCE (p50, p90 ms) and the artifact at ROW."""
    out = tmp_path / name
    (out / "bench").mkdir(parents=True)
    (out / "manifest.json").write_text(json.dumps({"source": {"path": "m.pt2"}, "artifacts": [ART]}))
    (out / "m.int8.onnx").write_bytes(b"not a model")
    rows = [{"label": "source (torch-exported)", "format": "torch", "runtime": "torch", "device": "cpu",
             "path": "m.pt2", "status": "ok", "p50_ms": source[0], "p90_ms": source[1]},
            {"label": "onnx int8", "format": "onnx", "precision": "int8", "runtime": "onnxruntime", "device": "cpu",
             "path": str(out / "m.int8.onnx"), "status": "ok", "p50_ms": row[0], "p90_ms": row[1]}]
    bench = {"schema_version": 1, "rows": rows, "reference": {"kind": "source model", "p50_ms": source[0],
                                                                "label": "source (torch-exported) on torch/cpu"},
             "results": [{**SEED["results"][0], "artifact": {"path": str(out / "m.int8.onnx"), "sha256": "s"}}]}
    (out / "bench" / "bench.json").write_text(json.dumps(bench))
    return out


def latency(capsys, *args: str) -> tuple[int, dict[str, Any], dict[str, Any]]:
    code = main(["check", *args, "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    (row,) = [r for r in report["checks"] if r["budget_key"] == "max_p50_growth"]
    return code, row, report


def test_relative_to_the_source_cancels_a_slower_machine(tmp_path: Path, capsys) -> None:
    base = run(tmp_path, "base", (1.0, 1.1), (0.10, 0.11))
    slower_machine = run(tmp_path, "now", (3.0, 3.3), (0.30, 0.33))  # everything 3x: the machine, not the model
    code, row, report = latency(capsys, str(slower_machine), "--baseline", str(base))
    assert code == 0 and row["verdict"] == "pass" and row["change"] == pytest.approx(0.0)
    assert row["baseline"] == pytest.approx(0.1) and row["unit"] == "ratio"
    assert report["latency_compared"] == ["p50 relative to the source model measured in the same bench run"]


def test_a_real_slowdown_warns_by_default_and_fails_a_set_budget(tmp_path: Path, capsys) -> None:
    base = run(tmp_path, "base", (1.0, 1.1), (0.10, 0.11))
    slower = run(tmp_path, "now", (1.0, 1.1), (0.25, 0.27))  # the artifact 2.5x slower, the source as it was
    code, row, _ = latency(capsys, str(slower), "--baseline", str(base))
    assert code == 0 and row["verdict"] == "warn" and row["change"] == pytest.approx(1.5)
    budget = tmp_path / "budget.toml"
    budget.write_text('max_p50_growth = "20%"\n')
    code, row, _ = latency(capsys, str(slower), "--baseline", str(base), "--budget", str(budget))
    assert code == EXIT_CHECK and row["verdict"] == "fail" and row["budget"] == "<= +20.0%"


def test_growth_within_the_baselines_spread_is_not_counted(tmp_path: Path, capsys) -> None:
    base = run(tmp_path, "base", (1.0, 1.1), (0.10, 0.40))  # a noisy baseline row: p90 4x its p50
    now = run(tmp_path, "now", (1.0, 1.1), (0.30, 0.33))
    budget = tmp_path / "budget.toml"
    budget.write_text('max_p50_growth = "20%"\n')
    code, row, _ = latency(capsys, str(now), "--baseline", str(base), "--budget", str(budget))
    assert code == 0 and row["verdict"] == "pass" and row["change"] == pytest.approx(2.0)
    assert "not counted: within the baseline run's spread" in row["message"]


@pytest.mark.parametrize(("base_source", "now_source", "why"), [
    ((0.6, 96.0), (0.6, 0.7), "unsteady"),  # PyTorch stalled in the baseline's bench run
    ((0.6, 0.7), (88.0, 97.0), "its p50 0.600 ms in the baseline, 88.000 ms now"),
])
def test_an_unsteady_source_row_falls_back_to_absolute_ms(tmp_path: Path, capsys, base_source, now_source,
                                                          why) -> None:
    base = run(tmp_path, "base", base_source, (0.10, 0.11))
    now = run(tmp_path, "now", now_source, (0.10, 0.11))
    code, row, report = latency(capsys, str(now), "--baseline", str(base))
    assert code == 0 and row["unit"] == "ms" and row["compared"] == "absolute p50 in ms"
    assert any(why in n and "latency compared in absolute ms" in n for n in report["notes"])


def test_a_bench_of_other_files_is_not_compared(tmp_path: Path, capsys) -> None:
    base = run(tmp_path, "base", (1.0, 1.1), (0.10, 0.11))
    now = run(tmp_path, "now", (1.0, 1.1), (0.50, 0.55))
    bench = json.loads((now / "bench" / "bench.json").read_text())
    bench["results"][0]["artifact"]["sha256"] = "another file"
    (now / "bench" / "bench.json").write_text(json.dumps(bench))
    assert main(["check", str(now), "--baseline", str(base), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not [r for r in report["checks"] if r["budget_key"] == "max_p50_growth"]
    assert any("sha256 differs" in n for n in report["notes"])
