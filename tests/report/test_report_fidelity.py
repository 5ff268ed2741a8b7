"""edgekit.report.fidelity: one artifact's fidelity in the same short words in convert's and bench's tables."""

from __future__ import annotations

import dataclasses
import io

import pytest
from rich.console import Console

from edgekit.core.artifact import Artifact, ArtifactFailure, Fidelity, Manifest, SourceInfo
from edgekit.measure.bench_report import BenchRow
from edgekit.report.convert import convert_table
from edgekit.report.fidelity import FIGURES, agreement


def detector(map50: float | None = None, ref: float | None = None, detections: int = 150) -> Fidelity:
    return Fidelity(samples=64, top1_agreement=None, cosine=0.998, max_abs_error=2.5, relative_error=0.03,
                    kind="detection", output="output0", detection_recall=0.9712, detection_precision=0.96,
                    box_iou=0.94, score_change=0.01, detections=detections, map50=map50, reference_map50=ref)


def plain(**figures: float | str) -> Fidelity:
    return Fidelity(**{"samples": 10, "top1_agreement": None, "cosine": 0.99, "max_abs_error": 0.1, **figures})


@pytest.mark.parametrize(("fid", "words"), [
    (None, "-"),
    (plain(top1_agreement=0.992), "99.20%"),
    (plain(pixel_agreement=0.971, kind="dense"), "97.10% px"),
    (plain(step_agreement=0.95, kind="sequence"), "95.00% step"),
    (plain(relative_error=0.0123, kind="regression"), "rel.err 0.0123"),
    (detector(), "recall 97.1% prec 96.0% drift 0.010"),
    (detector(map50=0.612, ref=0.62), "recall 97.1% prec 96.0% drift 0.010 mAP50 61.2% (-0.8)"),
    (detector(map50=0.612), "recall 97.1% prec 96.0% drift 0.010 mAP50 61.2%"),
    (detector(detections=12), "recall 97.1% prec 96.0% drift 0.010 on 12 boxes"),
    (dataclasses.replace(detector(), detection_precision=None), "recall 97.1% prec - drift 0.010"),
    (dataclasses.replace(detector(), keypoint_error_px=2.65, keypoint_error_share=0.0207),
     "recall 97.1% prec 96.0% drift 0.010 kp 2.6 px"),
    (plain(kind="landmarks", relative_error=0.02, landmark_error_px=2.08, landmark_error_share=0.0108,
           landmark_p95_px=5.71, landmark_p95_share=0.0297), "2.08 px (1.08%) p95 5.7 px"),
    (plain(kind="score", relative_error=3.6, score_agreement=0.971, score_change=0.02), "97.10% decided"),
])
def test_agreement_words_by_kind(fid: Fidelity | None, words: str) -> None:
    assert agreement(fid) == words


def test_a_bench_row_reads_as_the_record_it_was_copied_from() -> None:
    fid = detector(map50=0.612, ref=0.62)
    row = BenchRow(label="onnx int8", **{k: getattr(fid, k) for k in FIGURES})
    assert agreement(row) == agreement(fid) == "recall 97.1% prec 96.0% drift 0.010 mAP50 61.2% (-0.8)"
    assert agreement(BenchRow(label="source (onnx)", map50=0.62)) == "mAP50 62.0%"  # the source's own row
    assert set(FIGURES) <= {f.name for f in dataclasses.fields(Fidelity)}
    assert set(FIGURES) <= {f.name for f in dataclasses.fields(BenchRow)}


def test_convert_table_shows_a_detectors_boxes() -> None:
    arts = [Artifact(path="yolo.fp32.onnx", format="onnx", precision="fp32", inputs=[], outputs=[], size_bytes=4000,
                     sha256="a", fidelity=detector(0.62, 0.62)),
            Artifact(path="yolo.int8.onnx", format="onnx", precision="int8", inputs=[], outputs=[], size_bytes=1000,
                     sha256="b", fidelity=detector(0.612, 0.62)),
            Artifact(path="cls.int8.onnx", format="onnx", precision="int8", inputs=[], outputs=[], size_bytes=1000,
                     sha256="c", fidelity=plain(top1_agreement=0.992)),
            Artifact(path="yolo.int8.tflite", format="tflite", precision="int8", inputs=[], outputs=[], size_bytes=0,
                     sha256="", status="failed", failure=ArtifactFailure(step="onnx_to_tflite", message="x"))]
    manifest = Manifest.from_dict(Manifest(source=SourceInfo(path="yolo.onnx"), artifacts=arts).to_dict())
    buf = io.StringIO()
    Console(file=buf, width=250, color_system=None).print(convert_table(manifest))
    lines = {line.split()[1]: line for line in buf.getvalue().splitlines() if ".onnx" in line or ".tflite" in line}
    assert "recall 97.1% prec 96.0% drift 0.010 mAP50 62.0% (+0.0)" in lines["yolo.fp32.onnx"]
    assert "recall 97.1% prec 96.0% drift 0.010 mAP50 61.2% (-0.8)" in lines["yolo.int8.onnx"]
    assert "99.20%" in lines["cls.int8.onnx"] and "FAILED at onnx_to_tflite" in lines["yolo.int8.tflite"]
