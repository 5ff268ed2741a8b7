"""How each output is judged, and why (edgekit.fidelity.decide): metadata, detector shapes, names, siblings."""

from __future__ import annotations

import numpy as np
import pytest

from edgekit.core.errors import UsageError
from edgekit.fidelity.decide import decide_kinds, ultralytics_names
from edgekit.fidelity.kinds import check_kind, parse_output_kinds

RNG = np.random.default_rng(0)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _yolov8(n: int = 4, classes: int = 80, anchors: int = 2100) -> np.ndarray:
    y = np.empty((n, 4 + classes, anchors), dtype=np.float32)
    y[:, :4] = RNG.uniform(0, 320, (n, 4, anchors))
    y[:, 4:] = RNG.uniform(0, 1, (n, classes, anchors)) ** 8
    return y


def test_an_ultralytics_export_is_a_detector_by_its_metadata() -> None:
    meta = {"task": "detect", "names": "{0: 'person', 1: 'bicycle', 2: 'car'}", "imgsz": "[320, 320]"}
    got = decide_kinds({"output0": _yolov8(classes=3)}, "NCHW", None, meta)["output0"]
    assert got.kind == "detection" and got.head.format == "yolov8" and got.head.classes == 3
    assert got.head.names == {0: "person", 1: "bicycle", 2: "car"} and "metadata" in got.reason
    # a segmenter's head carries 32 mask coefficients after the classes: the names say how many classes
    got = decide_kinds({"output0": _yolov8(classes=3 + 32)}, "NCHW", None, meta)["output0"]
    assert got.kind == "detection" and got.head.classes == 3


def test_names_are_parsed_without_evaluating_code() -> None:
    assert ultralytics_names({"names": "__import__('os').system('true')"}) is None
    assert ultralytics_names({"names": "['a', 'b']"}) == {0: "a", 1: "b"}
    assert ultralytics_names(None) is None


def test_detector_heads_recognised_from_shapes_and_values() -> None:
    y8 = _yolov8()
    assert decide_kinds({"out": y8}, "NCHW")["out"].head.format == "yolov8"
    y5 = np.concatenate([RNG.uniform(0, 640, (2, 6300, 4)), RNG.uniform(0, 1, (2, 6300, 1 + 20))], axis=2)
    got = decide_kinds({"out": y5.astype(np.float32)}, "NCHW")["out"]
    assert got.kind == "detection" and got.head.format == "yolov5" and got.head.classes == 20
    # a CTC recognizer's (N, T, C) is not a detector: T is small against C, and its values are not pixel boxes
    ctc = _softmax(RNG.normal(size=(2, 40, 6625)), -1)
    assert decide_kinds({"logits": ctc}, "NCHW")["logits"].kind == "sequence"
    # SSD: decoded corner boxes beside [0, 1] scores of the same anchors, judged as one group
    xy = RNG.uniform(0, 0.8, (2, 1917, 2))
    boxes = np.concatenate([xy, xy + RNG.uniform(0.05, 0.2, (2, 1917, 2))], axis=2)
    scores = RNG.uniform(0, 1, (2, 1917, 91))
    got = decide_kinds({"boxes": boxes, "scores": scores}, "NCHW")
    assert got["boxes"].kind == got["scores"].kind == "detection"
    assert got["boxes"].head is got["scores"].head and got["boxes"].head.outputs == ["boxes", "scores"]
    # box deltas against anchors the model does not output: not decodable, a regression, never a sequence
    got = decide_kinds({"raw_boxes": RNG.normal(size=(2, 896, 4)), "raw_scores": RNG.normal(size=(2, 896, 1))}, "NHWC")
    assert got["raw_boxes"].kind == "regression" and "anchors" in got["raw_boxes"].reason


def test_tflite_detection_postprocess_outputs_are_one_group() -> None:
    outs = {"TFLite_Detection_PostProcess": RNG.uniform(0, 1, (2, 10, 4)),
            "TFLite_Detection_PostProcess:1": RNG.integers(0, 90, (2, 10)).astype(np.float32),
            "TFLite_Detection_PostProcess:2": RNG.uniform(0, 1, (2, 10)),
            "TFLite_Detection_PostProcess:3": np.array([10.0, 7.0])}
    got = decide_kinds(outs, "NHWC")
    head = got["TFLite_Detection_PostProcess"].head
    assert head.format == "tflite-postprocess" and all(c.head is head for c in got.values())
    assert head.outputs[1] == "TFLite_Detection_PostProcess:1" and head.outputs[2] == "TFLite_Detection_PostProcess:2"


def test_mtcnn_box_and_landmark_heads_are_regressions() -> None:
    # O-Net: face probability (N, 2) softmax, box regression (N, 4), landmarks (N, 10)
    # (the landmarks are box-relative, in [0, 1] like sigmoid scores: the softmax sibling still rules them out)
    onet = {"prob": _softmax(RNG.normal(size=(16, 2)), 1), "out_1": RNG.normal(0, 0.1, (16, 4)),
            "out_2": RNG.uniform(0.12, 0.97, (16, 10))}
    got = decide_kinds(onet, "NCHW")
    assert got["prob"].kind == "classes"
    assert got["out_1"].kind == got["out_2"].kind == "regression" and "sibling output 'prob'" in got["out_1"].reason
    # P-Net: (N, 2, H, W) probability map, (N, 4, H, W) box map: the box map is not judged by per-pixel argmax
    pnet = {"prob": _softmax(RNG.normal(size=(4, 2, 19, 19)), 1), "out": RNG.normal(0, 0.1, (4, 4, 19, 19))}
    got = decide_kinds(pnet, "NCHW")
    assert got["prob"].kind == "dense" and got["out"].kind == "regression"
    # beside a sigmoid (multi-label) head, another [0, 1] head is not ruled out: both stay class scores
    multi = {"attrs": RNG.uniform(0, 1, (16, 6)), "tags": RNG.uniform(0, 1, (16, 12))}
    assert {c.kind for c in decide_kinds(multi, "NCHW").values()} == {"classes"}


def test_names_embeddings_and_plain_classifiers() -> None:
    assert decide_kinds({"bbox_pred": RNG.normal(size=(8, 4))}, "NCHW")["bbox_pred"].kind == "regression"
    assert decide_kinds({"landmarks": RNG.normal(size=(8, 10))}, "NCHW")["landmarks"].kind == "regression"
    emb = RNG.normal(size=(8, 128))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    got = decide_kinds({"output": emb}, "NCHW")["output"]
    assert got.kind == "regression" and "unit vectors" in got.reason
    logits = RNG.normal(size=(8, 10))  # one output of logits stays a classifier
    assert decide_kinds({"output": logits}, "NCHW")["output"].kind == "classes"
    # logits beside their own softmax (the same shape) are both class scores
    got = decide_kinds({"logits": logits, "probs": _softmax(logits, 1)}, "NCHW")
    assert got["logits"].kind == got["probs"].kind == "classes"


def test_asked_kinds_win_and_detection_takes_a_head_format() -> None:
    got = decide_kinds({"out": RNG.normal(size=(2, 7, 300))}, "NCHW", {"out": "detection:yolov8"})["out"]
    assert got.kind == "detection" and got.head.classes == 3 and got.reason.startswith("asked")
    assert parse_output_kinds("a=detection:yolov5,b=regression") == {"a": "detection:yolov5", "b": "regression"}
    assert check_kind("detection") == "detection"
    with pytest.raises(UsageError, match="Unknown detection head format"):
        check_kind("detection:yolo8")
    with pytest.raises(UsageError, match="Unknown output kind .classes:yolov8"):
        check_kind("classes:yolov8")
    with pytest.raises(UsageError, match="Name the head"):
        decide_kinds({"out": RNG.normal(size=(2, 10))}, "NCHW", {"out": "detection"})
