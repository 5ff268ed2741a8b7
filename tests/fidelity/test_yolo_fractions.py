"""A YOLO head whose boxes are fractions of the input (Ultralytics' TFLite export of YOLOv5 divides them by the image
size: (1, 25200, 85) at 640x640, coordinates in [0, 1]) is a detector, not a 25,200-step sequence.

Before, edgekit told a YOLO head from other outputs by boxes in pixels (some coordinate above 1.5), so a trained
COCO YOLOv5n .tflite of the kind Pi users download was judged as a sequence ("96.26% step") and its int8 passed on
that count. The row count now tells it apart: a YOLO grid's count for the input (3 anchors per cell over the stride
8/16/32 grids: 25,200 at 640x640), and the boxes are decoded into the input's pixels.
"""

from __future__ import annotations

import numpy as np
import pytest

from edgekit.fidelity.decide import decide_kinds, head_from_shape, yolo_rows
from edgekit.fidelity.detection import Head, decode


def yolov5_fractions(rows: int = 25200, classes: int = 80, seed: int = 0) -> np.ndarray:
    """(2, ROWS, 5 + CLASSES): boxes as fractions of the input, objectness and class scores in [0, 1]; image 0 holds
    one confident box centred at (0.5, 0.5), 0.1 wide and 0.2 high, of class 3."""
    rng = np.random.default_rng(seed)
    y = np.empty((2, rows, 5 + classes), dtype=np.float32)
    y[..., :2] = rng.uniform(0.0, 1.0, (2, rows, 2))
    y[..., 2:4] = rng.uniform(0.01, 0.3, (2, rows, 2))
    y[..., 4:] = rng.uniform(0.0, 0.05, (2, rows, 1 + classes))
    y[0, 7, :4] = [0.5, 0.5, 0.1, 0.2]
    y[0, 7, 4], y[0, 7, 5 + 3] = 0.95, 0.9
    return y


def test_the_grid_counts_of_a_640_input() -> None:
    rows = yolo_rows((640, 640))
    assert 25200 in rows and 8400 in rows  # YOLOv5 (3 anchors per cell), YOLOv8 (one per cell)
    assert 3 * (80 * 80 + 40 * 40 + 20 * 20 + 10 * 10) in rows  # a P6 model's stride 64 grid
    assert yolo_rows(None) == set()


def test_a_yolov5_tflite_export_is_a_detector_with_its_boxes_in_pixels() -> None:
    y = yolov5_fractions()
    choice = decide_kinds({"out": y}, "NHWC", input_size=(640, 640))["out"]
    assert choice.kind == "detection" and choice.head is not None and choice.head.format == "yolov5"
    assert choice.head.fractions_of == [640, 640] and choice.head.classes == 80
    assert "fractions of the 640x640 input" in choice.reason and "25200 rows" in choice.reason
    found = decode([y], choice.head)[0]
    assert len(found.boxes) == 1 and int(found.classes[0]) == 3
    np.testing.assert_allclose(found.boxes[0], [288.0, 256.0, 352.0, 384.0], atol=1e-3)  # pixels of the input


def test_fractions_with_a_count_no_yolo_grid_has_are_not_taken_for_a_detector() -> None:
    y = yolov5_fractions(rows=25000)
    assert head_from_shape(y, input_size=(640, 640)) is None
    assert decide_kinds({"out": y}, "NHWC", input_size=(640, 640))["out"].kind != "detection"
    assert head_from_shape(yolov5_fractions(), input_size=None) is None  # without the input's size: not told apart


def test_a_yolov8_head_as_fractions_and_one_asked_for() -> None:
    y5 = yolov5_fractions(rows=8400)
    y8 = np.ascontiguousarray(np.concatenate([y5[..., :4], y5[..., 5:]], axis=2).transpose(0, 2, 1))  # (2, 84, 8400)
    head = head_from_shape(y8, input_size=(640, 640))
    assert head is not None and head.format == "yolov8" and head.fractions_of == [640, 640]
    # asked for by name, the format given: fractions are read as such whatever the row count
    asked = head_from_shape(yolov5_fractions(rows=1000), "yolov5", None, (320, 320))
    assert asked is not None and asked.fractions_of == [320, 320]
    pixels = yolov5_fractions(rows=1000)
    pixels[..., :4] *= 320
    assert head_from_shape(pixels, "yolov5", None, (320, 320)).fractions_of is None


def test_a_head_record_round_trips_and_a_hostile_size_is_refused() -> None:
    head = Head("yolov5", 80, ["out"], fractions_of=[640, 480])
    assert Head.from_dict(head.to_dict()) == head
    for bad in ([640], [0, 640], [640, 10**9], ["a", 1]):
        with pytest.raises(ValueError):
            Head.from_dict({**head.to_dict(), "fractions_of": bad})
    assert Head.from_dict({"format": "yolov5", "classes": 80}).fractions_of is None  # records written before it
