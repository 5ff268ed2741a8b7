"""A detector's score drift (issue 37): measured at the score its user reads, and judged at int8.

Synthetic YOLOv8-layout heads (plain numpy): fast.
"""

from __future__ import annotations

import numpy as np

from edgekit.fidelity.detection import Detections, Head, compare_detections
from edgekit.fidelity.metrics import judge_detection

RNG = np.random.default_rng(37)


def test_score_change_reads_the_box_nms_kept_not_the_best_overlapping_candidate() -> None:
    ref = [Detections(np.array([[0, 0, 10, 10.0]]), np.array([0.8]), np.array([0]))]
    # int8 moved the boxes: a neighbouring anchor's candidate (score 0.6) now overlaps the source box best, while the
    # box NMS kept at that object (score 0.79) overlaps it a little less
    candidates = [Detections(np.array([[0, 0, 10, 10.0], [1, 0, 11, 10.0]]), np.array([0.6, 0.79]),
                             np.array([0, 0]))]
    final = [Detections(np.array([[1, 0, 11, 10.0]]), np.array([0.79]), np.array([0]))]
    cmp = compare_detections(ref, final, artifact_candidates=candidates)
    assert cmp.matched == 1 and abs(cmp.score_change - 0.01) < 1e-9


def test_a_detector_compared_with_itself_has_no_score_change() -> None:
    # two kept boxes of one class overlapping at IoU 0.6 (under NMS's 0.7): each reads its own score, not the other's
    same = [Detections(np.array([[0, 0, 10, 10.0], [0, 0, 10, 16.0]]), np.array([0.9, 0.5]), np.array([0, 0]))]
    assert compare_detections(same, same, source_candidates=same, artifact_candidates=same).score_change == 0.0


def _head(images: int = 12, per: int = 4, classes: int = 3, anchors: int = 64) -> np.ndarray:
    """(N, 4 + C, A): PER separated boxes an image, scores 0.5-0.9, every other anchor empty."""
    y = np.zeros((images, 4 + classes, anchors), dtype=np.float32)
    for i in range(images):
        for j in range(per):
            y[i, :4, j] = 40 + 80 * j, 40 + 80 * (i % 3), 30, 30
            y[i, 4 + int(RNG.integers(classes)), j] = RNG.uniform(0.5, 0.9)
    return y


def test_int8_is_judged_by_the_score_drift_of_the_boxes_it_keeps() -> None:
    ref = _head()
    head = Head("yolov8", 3, ["output0"])
    for drift, passes in ((0.01, True), (0.06, False)):
        moved = ref.copy()
        scores = moved[:, 4:]
        scores[scores > 0] += np.float32(drift) * np.where(RNG.random(scores[scores > 0].shape) < 0.5, -1, 1)
        fid = judge_detection([ref], [moved], head, precision="int8")
        assert fid.detection_recall == 1.0 and fid.detection_precision == 1.0  # every box kept, none added
        assert abs(fid.score_change - drift) < 1e-4
        assert fid.passed is passes
        assert any("class scores of the kept boxes moved" in f for f in fid.failures) is not passes
