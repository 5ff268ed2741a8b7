"""How an artifact fared against its source (Fidelity), and each of its outputs (OutputFidelity): the records
validation (edgekit.validation.artifact, edgekit.fidelity) fills and the manifest, bench and check read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgekit.core.records import Record


@dataclass
class Fidelity(Record):
    """How closely an artifact reproduces its source model on held-out inputs.

    Read back tolerantly (edgekit.core.records): a record without `samples` (hand-made, or from another tool)
    is read with 0 ("not recorded") and a missing cosine / max_abs_error as NaN ("not measured", as a
    failed validation writes them), rather than refusing the whole manifest: `check`, `bench` and `serve`
    read the same files the same way, and a missing count is no reason to drop the figures that are there.
    """

    samples: int = 0
    top1_agreement: float | None = None
    cosine: float = float("nan")
    max_abs_error: float = float("nan")
    accuracy: float | None = None
    reference_accuracy: float | None = None
    passed: bool | None = True  # None: read from a record that does not say (no verdict is made up)
    thresholds: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    inputs: str = "held-out"  # where the inputs came from: "mnist-test", "held-out", "random"
    # Per-output judgement (issue 15): the figures above are the worst output's, named by `output`;
    # `kind` says how it was judged (edgekit.fidelity.kinds). `outputs` holds every output's own record.
    output: str | None = None
    kind: str | None = None  # classes | dense | sequence | regression
    relative_error: float | None = None  # ||y - y_ref|| / ||y_ref||, mean over samples
    pixel_agreement: float | None = None  # dense maps: per-pixel argmax agreement
    step_agreement: float | None = None  # sequences: per-step argmax agreement
    miou: float | None = None  # dense maps with label masks: the artifact's mean IoU
    reference_miou: float | None = None  # ... and the source's
    # detectors (kind "detection", edgekit.fidelity.detection): the artifact's boxes against the source's after
    # decode + NMS; `detections` is how many source boxes that was judged on; mAP with labelled boxes
    detection_recall: float | None = None  # source boxes the artifact keeps (same class, IoU >= match_iou)
    detection_precision: float | None = None  # artifact boxes that match a source box
    box_iou: float | None = None  # mean IoU of the matched pairs
    score_change: float | None = None  # mean |score change| of the matched pairs
    detections: int | None = None  # source detections on the held-out inputs
    map50: float | None = None
    reference_map50: float | None = None
    map50_95: float | None = None
    reference_map50_95: float | None = None
    head: dict[str, Any] | None = None  # how the head was decoded: format, classes, cuts (Head.to_dict())
    # single-channel probability maps (kind "mask", edgekit.fidelity.mask): both maps thresholded at mask_threshold
    mask_threshold: float | None = None
    mask_agreement: float | None = None  # pixels on the same side of the threshold
    mask_iou: float | None = None  # IoU of the two foregrounds
    region_recall: float | None = None  # the source's connected regions matched by the artifact's at IoU >= 0.5
    region_precision: float | None = None  # the artifact's regions matched by the source's
    regions: int | None = None  # the source's regions on the held-out inputs
    # landmarks (kind "landmarks", edgekit.fidelity.landmarks): each point's 2-D distance from the source's point
    landmark_error_px: float | None = None  # mean, in input pixels
    landmark_p95_px: float | None = None  # 95th percentile, in input pixels
    landmark_error_share: float | None = None  # the mean as a share of the input's longer side
    landmark_p95_share: float | None = None  # the 95th percentile as a share of it
    landmarks: dict[str, Any] | None = None  # how the points were read (Landmarks.to_dict(): values per point, size)
    # a detector's keypoints (anchors heads), on the source boxes the artifact matched
    keypoint_error_px: float | None = None  # mean distance, in input pixels
    keypoint_error_share: float | None = None  # ... as a share of the input's longer side
    # scores beside landmarks (kind "score": presence, handedness): samples decided the same at 0.5 (a sigmoid first
    # for logits); `score_change` holds the mean |probability change|
    score_agreement: float | None = None
    notes: list[str] = field(default_factory=list)  # what the verdict rests on where it is not the usual measure
    outputs: list[OutputFidelity] = field(default_factory=list)
    # int8: the layers that lose the most, ranked, with their fix (edgekit.quantize.records.Diagnosis.to_dict())
    diagnosis: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Fidelity:
        """The tolerant typed read (edgekit.core.records); a record without a boolean `passed` has no verdict (None)."""
        fid = super().from_dict(d)
        if not isinstance(d.get("passed"), bool):
            fid.passed = None
        return fid


@dataclass
class OutputFidelity(Record):
    """One source output, the artifact output matched to it, and how that output fared.

    NAME is the source's output name; ARTIFACT_NAME the tensor the artifact's runtime returns for it
    (a converter may rename and reorder: "PartitionedCall:1" in a .tflite), MATCHED_BY how the pair
    was found: "name", "signature" (the .tflite signature key), "shape" (the only output of that
    shape) or "values" (several outputs share the shape: the closest one). Never by position.
    """

    name: str = ""
    shape: list[int] = field(default_factory=list)
    dtype: str = ""
    kind: str = ""
    artifact_name: str | None = None
    matched_by: str | None = None
    fidelity: Fidelity | None = None
    kind_reason: str | None = None  # why it is judged as KIND (edgekit.fidelity.decide)
