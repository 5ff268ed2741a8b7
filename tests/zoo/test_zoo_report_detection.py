"""bench/zoo_report.py renders a detector row by its boxes (issue 27): recall, precision and mAP50 where the
boxes were judged, the raw output's cosine (and why) where the source found too few boxes. Records only:
no model is built (milliseconds)."""

from __future__ import annotations

from types import ModuleType
from typing import Any


def _art(fid: dict[str, Any]) -> dict[str, Any]:
    return {"path": "d.int8.onnx", "format": "onnx", "precision": "int8", "status": "ok", "fidelity": fid,
            "extra": {}}


def test_a_judged_detector_shows_recall_precision_and_map(zoo_report: ModuleType) -> None:
    fid = {"kind": "detection", "output": "output0", "passed": True, "cosine": 0.998, "detections": 251,
           "detection_recall": 0.988, "detection_precision": 0.9841, "map50": 0.905, "reference_map50": 0.912,
           "thresholds": {"detection_recall": 0.95, "detection_precision": 0.95, "map50_drop": 0.03},
           "outputs": [{"name": "output0", "kind": "detection"}]}
    cell = zoo_report._task_cell(_art(fid))
    assert cell == ("ok: `output0` boxes: recall 98.8%, precision 98.4%, mAP50 0.905 (source 0.912) of 251 boxes")


def test_a_detector_with_too_few_boxes_shows_the_cosine_it_was_judged_by(zoo_report: ModuleType) -> None:
    fid = {"kind": "detection", "output": "output0", "passed": False, "cosine": 0.9712, "detections": 0,
           "detection_recall": None, "detection_precision": None,
           "thresholds": {"map50_drop": 0.03, "cosine": 0.98, "relative_error": 0.2},
           "notes": ["the source found 0 boxes ..."], "outputs": [{"name": "output0", "kind": "detection"}]}
    cell = zoo_report._task_cell(_art(fid))
    assert cell == "ok, **fidelity miss**: `output0` boxes: 0 source boxes, too few: raw output cos 0.9712"


def test_other_kinds_render_as_before(zoo_report: ModuleType) -> None:
    fid = {"kind": "regression", "output": "box", "passed": True, "cosine": 0.99995,
           "outputs": [{"name": "box"}, {"name": "prob"}]}
    assert zoo_report._task_cell(_art(fid)) == "ok: `box` cos 1.0000 (worst of 2)"
