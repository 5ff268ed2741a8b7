"""A fidelity record in short words: the one place that decides how a table shows it.

`edgekit convert`'s table reads the manifest's `Fidelity`; `edgekit bench`'s table, bench.md and
bench.json read a `BenchRow`, which carries the same figures (FIGURES, copied from the manifest's
record). Both go through `agreement`, so one artifact reads the same in both tables: a classifier
"99.20%" (top-1 agreement), a segmenter "97.10% px", a recognizer "95.00% step", and a detector
"recall 97.1% prec 96.0% mAP50 61.2% (-0.8)", as Ultralytics' benchmark shows mAP per format (with "kp 2.6 px" for
an anchor head's keypoints), a probability map "mask 98.9% regions 96.0%" (pixels on the same side of the threshold,
regions kept), landmarks "2.08 px (1.08%) p95 5.7 px" (how far the points moved, in input pixels and as a share of
the input side, as a landmark model's user reads its error) and a presence score "97.1% decided" (samples on the
same side of 0.5). A
detector is shown by the boxes it keeps because its raw tensors' agreement says nothing a user reads
(edgekit.fidelity.detection).
"""

from __future__ import annotations

from typing import Protocol

from edgekit.fidelity.detection import MIN_DETECTIONS  # plain numpy: no runtime, no decoder library
from edgekit.report.text import pct

# The Fidelity fields a table row needs to say how an artifact fared: bench copies these into its rows.
FIGURES: tuple[str, ...] = (
    "kind", "top1_agreement", "pixel_agreement", "step_agreement", "relative_error", "detection_recall",
    "detection_precision", "box_iou", "score_change", "detections", "map50", "reference_map50", "map50_95",
    "reference_map50_95", "mask_agreement", "region_recall", "region_precision", "regions", "mask_threshold",
    "landmark_error_px", "landmark_p95_px", "landmark_error_share", "landmark_p95_share", "keypoint_error_px",
    "keypoint_error_share", "score_agreement",
)


class Figures(Protocol):
    """What `agreement` reads: a manifest's Fidelity, or a bench row that carries its FIGURES."""

    kind: str | None
    top1_agreement: float | None
    pixel_agreement: float | None
    step_agreement: float | None
    relative_error: float | None
    detection_recall: float | None
    detection_precision: float | None
    detections: int | None
    map50: float | None
    reference_map50: float | None
    mask_agreement: float | None
    region_recall: float | None
    regions: int | None
    landmark_error_px: float | None
    landmark_p95_px: float | None
    landmark_error_share: float | None
    keypoint_error_px: float | None
    score_agreement: float | None
    score_change: float | None


def map_words(f: Figures) -> str | None:
    """"mAP50 61.2% (-0.8)": the artifact's mAP50 on the labelled boxes, in points against the source's; None
    without labelled boxes."""
    if f.map50 is None:
        return None
    ref = f" ({100 * (f.map50 - f.reference_map50):+.1f})" if f.reference_map50 is not None else ""
    return f"mAP50 {f.map50:.1%}{ref}"


def detection_words(f: Figures) -> str | None:
    """"recall 97.1% prec 96.0% drift 0.010" (+ mAP50): the source's boxes the artifact keeps, its boxes that are
    the source's, and how far the kept boxes' scores moved on average (the int8 bar's third measure, shown passing or
    not); "on 12 boxes" where there were too few to judge by. None where the record has no box figures."""
    if f.detection_recall is None and f.detection_precision is None:
        return None
    words = " ".join(f"{name} {'-' if v is None else format(v, '.1%')}"
                     for name, v in (("recall", f.detection_recall), ("prec", f.detection_precision)))
    if f.score_change is not None:
        words += f" drift {f.score_change:.3f}"
    if f.detections is not None and f.detections < MIN_DETECTIONS:
        words += f" on {f.detections} boxes"
    if f.keypoint_error_px is not None:
        words += f" kp {f.keypoint_error_px:.1f} px"
    more = map_words(f)
    return f"{words} {more}" if more else words


def mask_words(f: Figures) -> str | None:
    """"mask 98.9% regions 96.0%": pixels on the same side of the mask threshold, and the source's regions kept ("on
    12 regions" where there were too few to judge by); None where the record has no mask figures."""
    if f.mask_agreement is None:
        return None
    from edgekit.fidelity.mask import MIN_REGIONS

    words = f"mask {f.mask_agreement:.1%}"
    if f.region_recall is not None:
        words += f" regions {f.region_recall:.1%}"
    if f.regions is not None and f.regions < MIN_REGIONS:
        words += f" on {f.regions} regions"
    return words


def landmark_words(f: Figures) -> str | None:
    """"2.08 px (1.08%) p95 5.7 px": how far the landmarks moved from the source's, mean in input pixels and as a
    share of the input side, and the 95th percentile; None where the record has no landmark figures."""
    if f.landmark_error_px is None:
        return None
    share = f" ({f.landmark_error_share:.2%})" if f.landmark_error_share is not None else ""
    tail = f" p95 {f.landmark_p95_px:.1f} px" if f.landmark_p95_px is not None else ""
    return f"{f.landmark_error_px:.2f} px{share}{tail}"


def agreement(f: Figures | None) -> str:
    """How the artifact agrees with its source, by the measure its (worst) output's kind is judged by:
    "99.20%" (top-1), "97.10% px", "95.00% step", "recall 97.1% prec 96.0%" (+ "mAP50 ...", "kp ... px"), "mask ...",
    "2.08 px (1.08%) p95 5.7 px" (landmarks), "97.1% decided" (a score), else the relative error; "-" for no record."""
    if f is None:
        return "-"
    boxes = detection_words(f) or mask_words(f) or landmark_words(f)
    if boxes is not None:
        return boxes
    for value, unit in ((f.top1_agreement, ""), (f.pixel_agreement, " px"), (f.step_agreement, " step"),
                        (f.score_agreement, " decided")):
        if value is not None:
            return pct(value) + unit
    more = map_words(f)  # the source model's own row in bench: its mAP50, no agreement with itself
    if more is not None:
        return more
    return "-" if f.relative_error is None else f"rel.err {f.relative_error:.3g}"


__all__ = ["FIGURES", "Figures", "agreement", "detection_words", "landmark_words", "map_words", "mask_words"]
