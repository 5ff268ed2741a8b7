"""bench/zoo_report.py renders the MediaPipe rows (issue 37): a .tflite source's ONNX columns are n/a and not
counted as requested, its fp16 file fills the float column, and each output shows its kind's own figure (landmarks
in px, a score's decisions, a mask's agreement, an anchors head's boxes and keypoints). Records only (milliseconds)."""

from __future__ import annotations

from types import ModuleType
from typing import Any


def _art(path: str, precision: str, outputs: list[dict[str, Any]], passed: bool = True) -> dict[str, Any]:
    return {"path": path, "format": "tflite", "precision": precision, "status": "ok", "extra": {},
            "fidelity": {"passed": passed, "samples": 23, "outputs": outputs}}


LANDMARKS = {"name": "Identity", "kind": "landmarks", "shape": [1, 63],
             "fidelity": {"passed": False, "landmark_error_px": 7.83, "landmark_error_share": 0.035,
                          "landmark_p95_px": 27.19, "landmark_p95_share": 0.1214}}
SCORE = {"name": "Identity_1", "kind": "score", "shape": [1, 1],
         "fidelity": {"passed": True, "score_agreement": 1.0, "score_change": 0.02}}


def test_landmarks_and_scores_each_show_their_figure(zoo_report: ModuleType) -> None:
    cell = zoo_report._task_cell(_art("h.int8.tflite", "int8", [LANDMARKS, SCORE], passed=False))
    assert cell == ("ok, **fidelity miss**: `Identity` landmarks: 7.83 px (3.50%) mean, p95 27.19 px (12.14%) MISS; "
                    "`Identity_1` score: decisions 100.0% the same, change 0.020")


def test_a_tflite_row_has_no_onnx_columns_and_its_fp16_file_fills_the_float_one(zoo_report: ModuleType) -> None:
    mask = {"name": "activation_10", "kind": "mask", "shape": [1, 256, 256, 1],
            "fidelity": {"passed": True, "mask_agreement": 1.0, "mask_iou": 1.0, "region_recall": 1.0, "regions": 9}}
    rec = {"name": "mp_x", "class": "MediaPipe fp16 .tflite", "note": "n", "status": "ok",
           "source": {"file": "bench/results/zoo/src/mp_x.tflite", "targets": "tflite,edgetpu",
                      "precisions": "fp16,int8", "calib_size": 60},
           "manifest": {"artifacts": [_art("mp_x.fp16.tflite", "fp16", [mask])]}}
    row, _ = zoo_report._task_row(rec)
    cols = dict(zip(zoo_report.TASK_HEADER, row, strict=True))
    assert cols["onnx fp32"] == cols["onnx int8"] == "n/a (a .tflite source)"
    assert cols["tflite fp32"] == ("ok: fp16 (the file itself), `activation_10` mask: agreement 100.0%, IoU 1.000, "
                                   "regions kept 100.0% of 9")
    assert cols["outputs"] == "`activation_10` 256x256x1 mask"
    rec |= {"name": "mp_selfie_segmentation", "date": "2026-11-27T22:50:00+00:00", "machine": "m"}
    lines = zoo_report.task_section({"mp_selfie_segmentation": rec})
    assert any(ln.startswith("\n**1 of 3 artifacts requested (1 task models x 5, less 2 n/a: no ONNX of a .tflite "
                             "source) made and passing") for ln in lines)
