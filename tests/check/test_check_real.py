"""edgekit check on real conversions: the bundled model against itself, a wider layer, a sabotaged
calibration, an op the Edge TPU cannot map, and an artifact that went missing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_CHECK

pytestmark = pytest.mark.slow


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def rows(report: dict[str, Any], artifact: str, metric: str | None = None) -> list[dict[str, Any]]:
    return [r for r in report["checks"] if r["artifact"] == artifact and (metric is None or r["metric"] == metric)]


def manifest(folder: Path) -> dict[str, Any]:
    return {a["path"].split(".", 1)[1]: a for a in json.loads((folder / "manifest.json").read_text())["artifacts"]}


def test_bundled_model_against_itself_passes(ci_run, capsys) -> None:
    code, report = check(capsys, str(ci_run.out), "--baseline", str(ci_run.out))
    assert code == 0 and report["verdict"] == "pass" and report["counts"]["fail"] == 0
    assert report["schema_version"] == 1
    metrics = {r["metric"] for r in report["checks"]}
    assert {"present", "size growth", "fidelity", "new operators", "p50 latency onnxruntime/cpu"} <= metrics
    lat = rows(report, "onnx int8", "p50 latency onnxruntime/cpu")[0]
    assert lat["change"] == pytest.approx(0.0) and lat["verdict"] == "pass"
    assert report["latency_compared"] == [lat["compared"]]


def _source_row_spread(folder: Path, dest: Path, p90_over_p50: float) -> Path:
    """A copy of FOLDER whose bench run measured the source model with p90 = P90_OVER_P50 x p50: a steady or a
    stalled yardstick chosen by the test, not by how busy the machine was while ci_run benched."""
    shutil.copytree(folder, dest)
    bench = dest / "bench" / "bench.json"
    data = json.loads(bench.read_text())
    (row,) = [r for r in data["rows"] if r["label"].startswith("source") and r["status"] == "ok"]
    row["p90_ms"] = row["p50_ms"] * p90_over_p50
    bench.write_text(json.dumps(data))
    return dest


def test_latency_is_relative_to_a_steady_source_row_and_absolute_past_a_stalled_one(ci_run, capsys,
                                                                                    tmp_path) -> None:
    """The bundled model against itself, its PyTorch row made steady, then stalled (p90 100 x p50, as PyTorch's
    threads did on a busy machine here): relative to the source model in the first case, absolute ms in the
    second, which says why in a note."""
    steady = _source_row_spread(ci_run.out, tmp_path / "steady", 1.0)
    code, report = check(capsys, str(steady), "--baseline", str(steady))
    lat = rows(report, "onnx int8", "p50 latency onnxruntime/cpu")[0]
    relative = "p50 relative to the source model measured in the same bench run"
    assert code == 0 and lat["verdict"] == "pass" and lat["change"] == pytest.approx(0.0)
    assert lat["compared"] == relative and report["latency_compared"] == [relative] and lat["unit"] == "ratio"
    assert not any("unsteady" in n for n in report["notes"])
    stalled = _source_row_spread(ci_run.out, tmp_path / "stalled", 100.0)
    code, report = check(capsys, str(stalled), "--baseline", str(stalled))
    lat = rows(report, "onnx int8", "p50 latency onnxruntime/cpu")[0]
    assert code == 0 and lat["verdict"] == "pass" and lat["change"] == pytest.approx(0.0)
    assert lat["compared"] == "absolute p50 in ms" and report["latency_compared"] == ["absolute p50 in ms"]
    (why,) = [n for n in report["notes"] if "unsteady" in n]
    assert why.startswith("latency compared in absolute ms: the source model's own row was unsteady")


def test_wider_layer_fails_the_size_budget_with_the_right_numbers(ci_run, wide_run, capsys) -> None:
    code, report = check(capsys, str(wide_run), "--baseline", str(ci_run.out))
    assert code == EXIT_CHECK and report["verdict"] == "fail"
    base, wide = manifest(ci_run.out), manifest(wide_run)
    for variant in ("fp32.onnx", "int8.onnx"):
        key = "onnx " + variant.split(".")[0]
        (r,) = rows(report, key, "size growth")
        assert r["verdict"] == "fail" and r["budget"] == "<= +5.0%" and r["budget_from"] == "default"
        assert r["baseline"] == base[variant]["size_bytes"] and r["now"] == wide[variant]["size_bytes"]
        assert r["change"] == pytest.approx(wide[variant]["size_bytes"] / base[variant]["size_bytes"] - 1)
        assert f"{base[variant]['size_bytes']:,} -> {wide[variant]['size_bytes']:,} bytes" in r["message"]
    # 64 more units: 64 x 1600 weights + 64 biases in, 64 x 10 weights out, 4 bytes each in fp32
    grown = wide["fp32.onnx"]["size_bytes"] - base["fp32.onnx"]["size_bytes"]
    assert grown == pytest.approx((64 * 1600 + 64 + 64 * 10) * 4, rel=0.02)
    # the function is the bundled model's: nothing but size broke
    assert {(r["artifact"], r["metric"]) for r in report["checks"] if r["verdict"] == "fail"} == {
        ("onnx fp32", "size growth"), ("onnx int8", "size growth")}
    ops = rows(report, "onnx fp32", "new operators")[0]
    assert ops["verdict"] == "pass"


def test_sabotaged_calibration_fails_the_accuracy_budget(ci_run, sabotaged_run, capsys, tmp_path) -> None:
    budget = tmp_path / "budget.toml"
    budget.write_text('missing = "off"  # this run made only the int8 artifact\nmax_accuracy_drop = 0.01\n')
    code, report = check(capsys, str(sabotaged_run), "--baseline", str(ci_run.out), "--budget", str(budget))
    assert code == EXIT_CHECK
    now, base = manifest(sabotaged_run)["int8.onnx"], manifest(ci_run.out)["int8.onnx"]
    assert now["fidelity"]["inputs"].endswith("[held-out: 200 of 800]")  # the same 200 test digits as the baseline
    src = rows(report, "onnx int8", "accuracy drop vs source")[0]
    assert src["verdict"] == "fail" and src["now"] == now["fidelity"]["accuracy"]
    assert src["baseline"] == now["fidelity"]["reference_accuracy"] == base["fidelity"]["reference_accuracy"]
    vs_base = rows(report, "onnx int8", "accuracy drop vs baseline")[0]
    assert vs_base["verdict"] == "fail" and vs_base["baseline"] == base["fidelity"]["accuracy"]
    assert vs_base["change"] == pytest.approx(now["fidelity"]["accuracy"] - base["fidelity"]["accuracy"])
    assert vs_base["change"] < -0.01 and vs_base["budget_from"] == f"{budget}:2" and vs_base["line"] == 2
    failed = {r["metric"] for r in report["checks"] if r["verdict"] == "fail"}
    assert failed == {"accuracy drop vs source", "accuracy drop vs baseline", "fidelity"}


def test_op_the_edgetpu_cannot_map_fails_the_coverage_budget(leaky_run, capsys, tmp_path) -> None:
    code, report = check(capsys, str(leaky_run))  # defaults, no baseline: nothing to compare coverage with
    assert code == 0
    budget = tmp_path / "budget.toml"
    budget.write_text("min_ops_on_tpu_fraction = 1.0\n")
    code, report = check(capsys, str(leaky_run), "--budget", str(budget))
    assert code == EXIT_CHECK
    (r,) = [r for r in report["checks"] if r["metric"] == "ops on Edge TPU"]
    pre = manifest(leaky_run)["int8-uint8io.tflite"]["extra"]["edgetpu"]
    assert r["verdict"] == "fail" and r["now"] == pre["ops_on_tpu_fraction"] < 1.0
    assert "LEAKY_RELU" in r["message"] and r["artifact"] == "tflite int8-uint8io"
    # against a baseline in which every op mapped: the coverage drop and the new partition point fail by default
    baseline = tmp_path / "baseline.json"
    assert main(["check", str(leaky_run), "--baseline", str(baseline), "--update-baseline"]) == 0
    data = json.loads(baseline.read_text())
    data["artifacts"][0]["edgetpu"] = {"ops_on_tpu_fraction": 1.0, "macs_on_tpu_fraction": 1.0}
    baseline.write_text(json.dumps(data))
    code, report = check(capsys, str(leaky_run), "--baseline", str(baseline))
    assert code == EXIT_CHECK
    failed = {r["metric"]: r for r in report["checks"] if r["verdict"] == "fail"}
    assert set(failed) == {"ops on Edge TPU vs baseline", "MACs on Edge TPU vs baseline", "partition point"}
    assert failed["partition point"]["now"] == f"op {pre['first_unsupported']['index']} (LEAKY_RELU)"


def test_missing_artifact_fails(ci_run, capsys, tmp_path) -> None:
    gone = tmp_path / "gone"
    shutil.copytree(ci_run.out, gone)
    (gone / "mnist_cnn.int8.onnx").unlink()  # listed in the manifest, not on disk
    code, report = check(capsys, str(gone), "--baseline", str(ci_run.out))
    assert code == EXIT_CHECK
    (r,) = [r for r in report["checks"] if r["verdict"] == "fail"]
    assert (r["artifact"], r["metric"], r["now"]) == ("onnx int8", "present", "missing")
    m = json.loads((gone / "manifest.json").read_text())
    m["artifacts"] = [a for a in m["artifacts"] if a["precision"] != "int8"]  # not made at all
    (gone / "manifest.json").write_text(json.dumps(m))
    code, report = check(capsys, str(gone), "--baseline", str(ci_run.out))
    (r,) = [r for r in report["checks"] if r["verdict"] == "fail"]
    assert code == EXIT_CHECK and (r["artifact"], r["now"]) == ("onnx int8", "gone")


def test_baseline_file_round_trips_with_stable_order(ci_run, capsys, tmp_path) -> None:
    from edgekit.check.snapshot import from_baseline_data, from_folder

    path = tmp_path / "edgekit-baseline.json"
    assert main(["check", str(ci_run.out), "--baseline", str(path), "--update-baseline"]) == 0
    text = path.read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n" and "created" not in text
    assert from_baseline_data(data, "b").to_json() == text
    again = tmp_path / "again.json"
    assert main(["check", str(ci_run.out), "--baseline", str(again), "--update-baseline"]) == 0
    assert again.read_text() == text  # same run, same file: a baseline diff shows only real changes
    facts = from_folder(ci_run.out).snapshot.by_key()["onnx int8"]
    assert facts.macs and facts.params and "Conv" in " ".join(facts.ops or [])
    code, report = check(capsys, str(ci_run.out), "--baseline", str(path))
    assert code == 0 and report["counts"]["fail"] == 0
