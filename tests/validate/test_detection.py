"""Detector heads decoded and judged by their boxes (edgekit.fidelity.detection, metrics.judge_detection, coco)."""

from __future__ import annotations

import numpy as np
import pytest

from edgekit.fidelity.detection import (
    Detections,
    Head,
    box_iou,
    compare_detections,
    decode,
    labelled_boxes,
    nms,
)
from edgekit.fidelity.metrics import judge_detection

RNG = np.random.default_rng(0)


def _scene(images: int = 8, per: int = 4, classes: int = 3, size: float = 320.0) -> list[Detections]:
    """Well-separated ground-truth boxes: one per grid cell, random classes and scores above the cut."""
    out = []
    for _ in range(images):
        cells = RNG.choice(16, per, replace=False)
        x1 = (cells % 4) * size / 4 + RNG.uniform(2, 10, per)
        y1 = (cells // 4) * size / 4 + RNG.uniform(2, 10, per)
        w, h = RNG.uniform(30, 60, per), RNG.uniform(30, 60, per)
        out.append(Detections(np.stack([x1, y1, x1 + w, y1 + h], 1), RNG.uniform(0.5, 0.95, per),
                              RNG.integers(0, classes, per)))
    return out


def _yolov8(scene: list[Detections], classes: int = 3, anchors: int = 400, dup: bool = True) -> np.ndarray:
    """(N, 4 + C, A) with each box at one anchor (and a slightly shifted, lower-scored duplicate NMS must drop)."""
    y = np.zeros((len(scene), 4 + classes, anchors), dtype=np.float32)
    y[:, 4:] = 0.01
    for i, d in enumerate(scene):
        for j, (b, s, c) in enumerate(zip(d.boxes, d.scores, d.classes, strict=True)):
            cx, cy, w, h = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2, b[2] - b[0], b[3] - b[1]
            y[i, :4, 2 * j] = cx, cy, w, h
            y[i, 4 + c, 2 * j] = s
            if dup:
                y[i, :4, 2 * j + 1] = cx + 1, cy, w, h
                y[i, 4 + c, 2 * j + 1] = s - 0.1
    return y


def test_box_iou_and_class_aware_nms() -> None:
    a = np.array([[0, 0, 10, 10]], dtype=float)
    b = np.array([[0, 0, 10, 10], [5, 0, 15, 10], [20, 20, 30, 30], [0, 0, 0, 0]], dtype=float)
    np.testing.assert_allclose(box_iou(a, b)[0], [1.0, 50 / 150, 0.0, 0.0])
    boxes = np.array([[0, 0, 10, 10], [1, 0, 11, 10], [1, 0, 11, 10]], dtype=float)
    keep = nms(boxes, np.array([0.9, 0.8, 0.7]), np.array([0, 0, 1]), iou=0.5)
    assert keep.tolist() == [0, 2]  # the same-class overlap goes, the other class's box stays


def test_yolov8_head_decodes_to_the_boxes_it_holds() -> None:
    scene = _scene()
    got = decode([_yolov8(scene)], Head("yolov8", 3))
    cmp = compare_detections(scene, got)
    assert cmp.recall == 1.0 and cmp.precision == 1.0 and cmp.mean_iou == pytest.approx(1.0)


def test_yolov5_nms_and_ssd_heads_decode() -> None:
    scene = _scene(images=3)
    y8 = _yolov8(scene, dup=False)
    # yolov5: (N, A, 5 + C), objectness * class probability is the score
    y5 = np.zeros((3, 400, 8), dtype=np.float32)
    y5[..., :4] = y8[:, :4].transpose(0, 2, 1)
    y5[..., 4] = (y8[:, 4:].max(1) > 0.1).astype(np.float32)
    y5[..., 5:] = y8[:, 4:].transpose(0, 2, 1)
    assert compare_detections(scene, decode([y5], Head("yolov5", 3))).recall == 1.0
    # nms: (N, K, 6) rows x1, y1, x2, y2, score, class; padding rows have score 0
    yn = np.zeros((3, 10, 6), dtype=np.float32)
    for i, d in enumerate(scene):
        yn[i, :len(d), :4], yn[i, :len(d), 4], yn[i, :len(d), 5] = d.boxes, d.scores, d.classes
    assert compare_detections(scene, decode([yn], Head("nms", 3))).precision == 1.0
    # ssd: decoded corner boxes (N, A, 4) + scores (N, A, C)
    boxes = np.zeros((3, 400, 4), dtype=np.float32)
    boxes[..., 2:] = 1
    scores = np.full((3, 400, 3), 0.01, dtype=np.float32)
    for i, d in enumerate(scene):
        boxes[i, :len(d)] = d.boxes
        scores[i, np.arange(len(d)), d.classes] = d.scores
    assert compare_detections(scene, decode([boxes, scores], Head("ssd", 3))).recall == 1.0
    # TFLite_Detection_PostProcess: boxes y-first, classes, scores, count (padding past count ignored)
    tb, tc, ts = np.zeros((3, 10, 4)), np.zeros((3, 10)), np.zeros((3, 10))
    for i, d in enumerate(scene):
        tb[i, :len(d)] = d.boxes[:, [1, 0, 3, 2]]
        tc[i, :len(d)], ts[i, :len(d)] = d.classes, d.scores
        ts[i, len(d):] = 0.9  # garbage past the count
    count = np.array([len(d) for d in scene], dtype=np.float32)
    got = decode([tb, tc, ts, count], Head("tflite-postprocess", 3))
    assert [len(g) for g in got] == [len(d) for d in scene]


def test_matching_needs_the_same_class_and_iou_half() -> None:
    ref = [Detections(np.array([[0, 0, 10, 10], [20, 20, 30, 30.0]]), np.array([0.9, 0.8]), np.array([0, 1]))]
    art = [Detections(np.array([[0, 0, 10, 10], [24, 20, 34, 30.0], [50, 50, 60, 60.0]]),
                      np.array([0.7, 0.8, 0.5]), np.array([1, 1, 1]))]
    cmp = compare_detections(ref, art)
    # box 0 has the wrong class; box 1 overlaps at IoU 6/14 < 0.5; nothing matches
    assert cmp.matched == 0 and cmp.recall == 0.0 and cmp.precision == 0.0
    art[0].boxes[1] = [21, 20, 31, 30]  # IoU 9/11
    art[0].classes[0] = 0
    cmp = compare_detections(ref, art)
    assert cmp.matched == 2 and cmp.recall == 1.0 and cmp.precision == pytest.approx(2 / 3)
    assert cmp.score_change == pytest.approx((0.2 + 0.0) / 2)


def test_judge_detection_passes_a_faithful_head_and_fails_one_whose_scores_collapse() -> None:
    scene = _scene(images=10)
    ref = _yolov8(scene)
    fid = judge_detection([ref], [ref + np.float32(1e-4)], Head("yolov8", 3, ["output0"]), precision="int8")
    assert fid.passed and fid.kind == "detection" and fid.detection_recall == 1.0 and fid.detections == 40
    assert fid.head["format"] == "yolov8" and fid.cosine > 0.9999
    # a shared int8 scale for pixels (0-320) and scores (0-1): step 320/127 ~ 2.5 rounds every score to 0 or 2.5
    step = float(np.abs(ref).max()) / 127
    crushed = np.round(ref / step) * step
    bad = judge_detection([ref], [crushed], Head("yolov8", 3, ["output0"]), precision="int8")
    assert bad.cosine > 0.99  # the raw tensor's cosine does not see it ...
    assert not bad.passed and bad.detection_recall < 0.5  # ... the boxes do
    assert any("detection recall" in f for f in bad.failures)


def test_too_few_source_boxes_fall_back_to_the_raw_tensor_and_say_so() -> None:
    scene = _scene(images=2, per=2)
    ref = _yolov8(scene)
    fid = judge_detection([ref], [ref], Head("yolov8", 3), precision="fp32")
    assert fid.passed and fid.detections == 4 and "too few" in fid.notes[0]
    assert "detection_recall" not in fid.thresholds and "cosine" in fid.thresholds


def test_map_against_labelled_boxes_by_pycocotools() -> None:
    pytest.importorskip("pycocotools")
    from edgekit.fidelity.coco import mean_ap

    scene = _scene(images=6)
    rows = np.array([[i, c, *b] for i, d in enumerate(scene) for b, c in zip(d.boxes, d.classes, strict=True)])
    truth = labelled_boxes(rows, len(scene))
    m50, m5095 = mean_ap(scene, truth)
    assert m50 == pytest.approx(1.0) and m5095 == pytest.approx(1.0)
    half = [Detections(d.boxes[:2], d.scores[:2], d.classes[:2]) for d in scene]  # every other box missed
    assert mean_ap(half, truth)[0] < 0.75
    ref = _yolov8(scene)
    fid = judge_detection([ref], [ref], Head("yolov8", 3), precision="int8", boxes=rows)
    assert fid.map50 == pytest.approx(1.0) and fid.reference_map50 == pytest.approx(1.0)


def test_labelled_boxes_of_the_held_out_images_follow_the_split(tmp_path) -> None:
    from edgekit.core.errors import UsageError
    from edgekit.data.calibration import split_indices
    from edgekit.data.feeds import held_out_boxes

    x = np.zeros((40, 3, 32, 32), dtype=np.float32)
    rows = np.array([[i, i % 3, i, i, i + 5, i + 5] for i in range(40)], dtype=np.float32)
    np.savez(tmp_path / "d.npz", x=x, boxes=rows)
    got = held_out_boxes(str(tmp_path / "d.npz"), calib_size=20, val_size=10)
    _, val_idx = split_indices(40, 20, 10)
    assert got[:, 0].tolist() == list(range(len(val_idx)))  # renumbered to the held-out order
    assert got[:, 2].tolist() == val_idx.tolist()  # ... and each is the box of the image it was
    np.savez(tmp_path / "bad.npz", x=x, boxes=rows[:, :5])
    with pytest.raises(UsageError, match=r"must be \(M, 6\)"):
        held_out_boxes(str(tmp_path / "bad.npz"), 20, 10)
    rows[0, 0] = 99
    np.savez(tmp_path / "out.npz", x=x, boxes=rows)
    with pytest.raises(UsageError, match="outside the 40 samples"):
        held_out_boxes(str(tmp_path / "out.npz"), 20, 10)
    assert held_out_boxes("mnist", 20, 10) is None


def test_near_tie_scores_do_not_fail_a_faithful_artifact_through_nms_tie_breaking() -> None:
    # a random-weight head: every anchor scores about 0.5, overlapping boxes everywhere. fp16's rounding of a score
    # near 0.5 (a step of 0.0005) changes which of the overlapping boxes NMS keeps; the boxes are still there.
    rng = np.random.default_rng(3)
    a = 400
    y = np.empty((4, 7, a), dtype=np.float32)
    y[:, 0:2] = rng.uniform(20, 300, (4, 2, a))
    y[:, 2:4] = rng.uniform(40, 80, (4, 2, a))
    y[:, 4:] = rng.uniform(0.47, 0.53, (4, 3, a))
    wobble = y + rng.normal(0, 5e-4, y.shape).astype(np.float32) * (np.arange(7) >= 4)[None, :, None]
    head = Head("yolov8", 3)
    strict = compare_detections(decode([y], head), decode([wobble], head))
    assert strict.recall < 1.0 and strict.precision < 1.0  # the final boxes alone differ ...
    fid = judge_detection([y], [wobble], head, precision="fp32")
    # ... the candidates do not (what is left is the class argmax flipping between near-tied class scores)
    assert fid.passed and fid.detection_recall > strict.recall and fid.detection_precision > strict.precision
