"""Detector budgets (min_detection_recall, min_detection_precision, max_map_drop) on manifests edgekit's own
writer made from real Fidelity records; classifiers and older manifests are not held to them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from edgekit.check import format_report, run_check, update_baseline
from edgekit.check.budgets import load_budgets
from edgekit.check.detection import DetectionFacts
from edgekit.check.records import CheckReport, CheckResult
from edgekit.cli import main
from edgekit.core.artifact import Artifact, Fidelity, Manifest, OutputFidelity, SourceInfo
from edgekit.core.errors import EXIT_CHECK, EXIT_USAGE

BUDGET = "min_detection_recall = 0.95\nmin_detection_precision = \"95%\"\nmax_map_drop = 0.03\n"


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")  # the placeholder files are read in-process: no child start-up


def detector(recall: float, precision: float, map50: float | None = None, ref: float | None = None,
             detections: int = 150, output: str = "output0", passed: bool | None = None) -> Fidelity:
    """A detector output's record as judge_detection makes it, with its one OutputFidelity as validate adds."""
    fid = Fidelity(samples=64, top1_agreement=None, cosine=0.998, max_abs_error=2.5, relative_error=0.03,
                   kind="detection", output=output, detection_recall=recall, detection_precision=precision,
                   box_iou=0.94, score_change=0.01, detections=detections, map50=map50, reference_map50=ref,
                   map50_95=None if map50 is None else map50 - 0.2,
                   reference_map50_95=None if ref is None else ref - 0.2,
                   head={"format": "yolov8", "classes": 3, "outputs": [output]},
                   thresholds={"detection_recall": 0.95, "detection_precision": 0.95})
    fid.passed = recall >= 0.95 and precision >= 0.95 if passed is None else passed
    per = OutputFidelity(name=output, shape=[1, 7, 8400], dtype="float32", kind="detection", artifact_name=output,
                         matched_by="name", fidelity=dataclasses.replace(fid), kind_reason="yolov8 head by shape")
    return dataclasses.replace(fid, outputs=[per])


def classifier(top1: float = 0.99) -> Fidelity:
    return Fidelity(samples=200, top1_agreement=top1, cosine=0.9999, max_abs_error=0.01, kind="classes",
                    output="logits", accuracy=0.98, reference_accuracy=0.985)


def run(tmp_path: Path, name: str, **fidelity: Fidelity | None) -> Path:
    """An output folder with one artifact per PRECISION=fidelity, written by Manifest.write."""
    out = tmp_path / name
    out.mkdir()
    arts = []
    for precision, fid in fidelity.items():
        path = out / f"yolo.{precision}.tflite"
        path.write_bytes(b"placeholder")
        arts.append(Artifact(path=path.name, format="tflite", precision=precision, inputs=[], outputs=[],
                             size_bytes=1000, sha256="s", fidelity=fid))
    Manifest(source=SourceInfo(path="yolo.onnx", kind="onnx"), artifacts=arts).write(out / "manifest.json")
    return out


def budget(tmp_path: Path, text: str = BUDGET) -> Path:
    p = tmp_path / "budget.toml"
    p.write_text(text)
    return p


def by_metric(report: CheckReport) -> dict[str, CheckResult]:
    return {f"{r.artifact} {r.metric}": r for r in report.checks}


def test_budget_keys_parse_like_the_other_fidelity_budgets(tmp_path: Path, capsys) -> None:
    v = load_budgets(budget(tmp_path, BUDGET + '["tflite int8"]\nmin_detection_recall = "90%"\n')).for_artifact(
        "tflite", "int8", "int8")
    assert v["min_detection_recall"].value == pytest.approx(0.90) and v["min_detection_recall"].origin.line == 5
    assert v["min_detection_precision"].value == pytest.approx(0.95) and v["max_map_drop"].value == 0.03
    run(tmp_path, "out", fp32=detector(1.0, 1.0))
    assert main(["check", str(tmp_path / "out"), "--budget",
                 str(budget(tmp_path, "min_detection_recal = 0.9\n"))]) == EXIT_USAGE
    assert "did you mean 'min_detection_recall'" in " ".join(capsys.readouterr().err.split())


def test_a_detector_that_loses_boxes_and_map_fails_naming_the_figures(tmp_path: Path) -> None:
    base = run(tmp_path, "base", int8=detector(0.98, 0.97, map50=0.62, ref=0.63))
    now = run(tmp_path, "now", int8=detector(0.90, 0.97, map50=0.55, ref=0.63))
    report = run_check(now, str(base), budget(tmp_path))
    assert report.exit_code == EXIT_CHECK and report.verdict == "fail"
    got = by_metric(report)
    recall = got["tflite int8 detection recall"]
    assert recall.verdict == "fail" and recall.budget_key == "min_detection_recall" and recall.budget == ">= 95.00%"
    assert recall.now == pytest.approx(0.90) and recall.baseline == pytest.approx(0.98)
    assert recall.message == "tflite int8: detection recall of output0 90.00% (baseline 98.00%), budget 95.00%"
    assert got["tflite int8 detection precision"].verdict == "pass"
    vs_source, vs_base = got["tflite int8 mAP50 drop vs source"], got["tflite int8 mAP50 drop vs baseline"]
    assert vs_source.verdict == vs_base.verdict == "fail" and vs_source.budget == "drop <= 3.00 pt"
    assert vs_source.baseline == pytest.approx(0.63) and vs_base.baseline == pytest.approx(0.62)
    assert "mAP50 62.00% -> 55.00% vs baseline (-7.00 points)" in vs_base.message
    text = format_report(report, "text")  # the table shows the figures in %, the change in points
    assert "detection recall" in text and "98.00%" in text and "-8.00 pt" in text
    assert "| tflite int8 | detection recall | 98.00% | 90.00% | -8.00 pt | >= 95.00% | ❌ fail |" in \
        format_report(report, "markdown")


def test_a_detector_within_its_budgets_passes(tmp_path: Path) -> None:
    base = run(tmp_path, "base", fp32=detector(1.0, 1.0, 0.63, 0.63), int8=detector(0.97, 0.96, 0.61, 0.63))
    now = run(tmp_path, "now", fp32=detector(1.0, 1.0, 0.63, 0.63), int8=detector(0.96, 0.96, 0.615, 0.63))
    report = run_check(now, str(base), budget(tmp_path))
    assert report.exit_code == 0 and report.verdict == "pass", [r.message for r in report.failed]
    keys = {(r.artifact, r.budget_key) for r in report.checks}
    assert {("tflite int8", k) for k in ("min_detection_recall", "min_detection_precision", "max_map_drop")} <= keys
    assert not [n for n in report.notes if "not checked" in n]


def test_classifiers_are_not_held_to_detector_budgets_and_the_report_says_so_once(tmp_path: Path) -> None:
    now = run(tmp_path, "now", fp32=classifier(), int8=classifier(0.97))
    report = run_check(now, None, budget(tmp_path))
    assert report.exit_code == 0
    assert not [r for r in report.checks if "detection" in r.budget_key or r.budget_key == "max_map_drop"]
    said = [n for n in report.notes if "min_detection_recall" in n]
    assert len(said) == 1
    assert said[0].startswith("min_detection_recall, min_detection_precision, max_map_drop not checked for "
                              "tflite fp32, tflite int8: their manifest records no detection figures")


def test_a_manifest_from_before_detection_figures_still_reads(tmp_path: Path) -> None:
    """A manifest written before the fields existed (no kind, outputs, detection_*, map*) and an older baseline."""
    now = run(tmp_path, "now", int8=detector(0.97, 0.96, 0.61, 0.63))
    old = run(tmp_path, "old", int8=classifier())
    data = json.loads((old / "manifest.json").read_text())
    new_fields = {f.name for f in dataclasses.fields(Fidelity)} - {
        "samples", "top1_agreement", "cosine", "max_abs_error", "accuracy", "reference_accuracy", "passed",
        "thresholds", "failures", "inputs"}
    for art in data["artifacts"]:
        art["fidelity"] = {k: v for k, v in art["fidelity"].items() if k not in new_fields}
    (old / "manifest.json").write_text(json.dumps(data))
    assert Manifest.read(old).artifacts[0].fidelity.detection_recall is None
    report = run_check(old, None, budget(tmp_path))  # the old run as the current one: nothing to hold it to
    assert report.exit_code == 0 and any("their manifest records no detection figures" in n for n in report.notes)
    report = run_check(now, str(old / "manifest.json"), budget(tmp_path))  # the old run as the baseline
    assert report.exit_code == 0
    got = by_metric(report)
    assert got["tflite int8 detection recall"].baseline is None and "baseline -)" in \
        got["tflite int8 detection recall"].message
    assert "tflite int8 mAP50 drop vs baseline" not in got and "tflite int8 mAP50 drop vs source" in got
    assert any(n.startswith("max_map_drop vs baseline not checked for tflite int8: the baseline has no mAP50")
               for n in report.notes)


def test_the_baseline_file_carries_the_detection_figures(tmp_path: Path) -> None:
    base = run(tmp_path, "base", int8=detector(0.98, 0.97, 0.62, 0.63))
    path, n = update_baseline(base, str(tmp_path / "baseline.json"))
    saved = json.loads(path.read_text())["artifacts"][0]["detection"]
    assert n == 1 and saved == {"detections": 150, "map50": 0.62, "output": "output0", "precision": 0.97,
                                "recall": 0.98, "reference_map50": 0.63}
    now = run(tmp_path, "now", int8=detector(0.98, 0.91, 0.62, 0.63))
    report = run_check(now, str(path), budget(tmp_path))
    precision = by_metric(report)["tflite int8 detection precision"]
    assert report.exit_code == EXIT_CHECK and precision.verdict == "fail"
    assert precision.baseline == pytest.approx(0.97) and precision.change == pytest.approx(-0.06)


def test_too_few_boxes_to_show_a_share_are_not_judged(tmp_path: Path) -> None:
    now = run(tmp_path, "now", int8=detector(11 / 12, 1.0, detections=12, passed=True))
    report = run_check(now, None, budget(tmp_path))
    assert report.exit_code == 0 and not [r for r in report.checks if r.budget_key.startswith("min_detection")]
    assert any("not checked for tflite int8 (12 boxes): judged on fewer than 20" in n for n in report.notes)
    assert any(n.startswith("max_map_drop not checked for tflite int8: no mAP50") for n in report.notes)


def test_an_artifact_is_held_to_its_worst_detector_output() -> None:
    good, bad = detector(0.99, 0.98, 0.70, 0.70, output="head_a"), detector(0.91, 0.99, 0.50, 0.60, output="head_b")
    top = dataclasses.replace(bad, outputs=[*good.outputs, *bad.outputs])
    top.outputs[0].fidelity.detections = 90
    art: dict[str, Any] = Artifact(path="m.onnx", format="onnx", precision="int8", inputs=[], outputs=[],
                                   size_bytes=1, sha256="", fidelity=top).to_dict()
    facts = DetectionFacts.of_fidelity(Fidelity.from_dict(art["fidelity"]))
    assert facts == DetectionFacts(recall=0.91, precision=0.98, map50=0.50, reference_map50=0.60, detections=90,
                                   output="head_b")
    assert DetectionFacts.of_fidelity(Fidelity.from_dict(Artifact(
        path="c.onnx", format="onnx", precision="int8", inputs=[], outputs=[], size_bytes=1, sha256="",
        fidelity=classifier()).to_dict()["fidelity"])) is None
    hostile = Fidelity.from_dict({"detection_recall": "0.9", "outputs": "x"})  # the one reader: no figure
    assert DetectionFacts.of_fidelity(hostile) is None
    assert DetectionFacts.read({"recall": True, "map50": 0.5}) == DetectionFacts(map50=0.5)
