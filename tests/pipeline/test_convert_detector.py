"""The trained in-repo detector converted to every target, judged by its boxes (issue 27).

It is converted as Ultralytics exports a YOLOv8: the legacy TorchScript exporter, opset 17, dynamic batch, height
and width (the anchors then come from Shape ops), the metadata keys in metadata_props, and `--input-shape` on the
command line; the weights are models/digits_yolo's, the file is written by the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_NOT_COMPILED, EXIT_OK

MODELS = Path(__file__).resolve().parents[2] / "models"
MODEL = MODELS / "digits_yolo.onnx"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not MODEL.is_file(), reason="models/digits_yolo.onnx missing")]


def _as_ultralytics_exports(path: Path) -> Path:
    """models/digits_yolo's weights exported as Ultralytics' exporter writes a YOLOv8 ONNX."""
    onnx = pytest.importorskip("onnx")
    torch = pytest.importorskip("torch")
    from models.yolo import yolov8_tiny

    model = yolov8_tiny().eval()
    model.load_state_dict(torch.export.load(str(MODELS / "digits_yolo.pt2")).state_dict)
    torch.onnx.export(model, (torch.zeros(1, 3, 128, 128),), str(path), dynamo=False, opset_version=17,
                      input_names=["images"], output_names=["output0"],
                      dynamic_axes={"images": {0: "batch", 2: "height", 3: "width"},
                                    "output0": {0: "batch", 2: "anchors"}})
    exported = onnx.load(str(path))
    for prop in onnx.load(str(MODEL)).metadata_props:  # task, names, imgsz, stride ...
        exported.metadata_props.add(key=prop.key, value=prop.value)
    onnx.save(exported, str(path))
    return path


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    pytest.importorskip("onnx2tf")
    from models.detection_data import write_npz

    d = tmp_path_factory.mktemp("det")
    source = _as_ultralytics_exports(d / "yolo.onnx")
    data = write_npz(d / "canvases.npz", n=240)  # real MNIST test digits on canvases, with labelled boxes
    rc = main(["convert", str(source), "-t", "onnx,tflite,edgetpu", "-q", "fp32,int8", "--calib", str(data),
               "--calib-size", "160", "--val-size", "80", "--input-shape", "1,3,128,128", "--out", str(d / "out"),
               "--int8-recipe", "plain"])  # the boxes judged per artifact, not the recipe search (auto: +5 s here)
    # no edgetpu_compiler here: the Edge TPU model is written and pre-flighted, not compiled (exit 10)
    assert rc in (EXIT_OK, EXIT_NOT_COMPILED)
    manifest = json.loads((d / "out" / "manifest.json").read_text())
    assert manifest["source"]["input"]["shape"][1:] == [3, 128, 128] and manifest["source"]["changes"]  # H, W pinned
    return manifest


def test_every_artifact_is_judged_by_its_boxes(converted: dict) -> None:
    arts = {a["path"]: a for a in converted["artifacts"]}
    assert len(arts) == 5, sorted(arts)  # onnx fp32/int8, tflite fp32/int8, the uint8-I/O Edge TPU model
    for a in arts.values():
        f = a["fidelity"]
        out = f["outputs"][0]
        assert f["kind"] == out["kind"] == "detection" and "metadata says task 'detect'" in out["kind_reason"]
        assert f["head"]["format"] == "yolov8" and f["head"]["classes"] == 10 and f["head"]["names"]["3"] == "3"
        assert f["detections"] >= 150  # real digits: enough boxes to judge 95% on
        assert f["reference_map50"] > 0.8 and f["map50"] is not None  # labelled boxes: mAP by pycocotools
        assert f["passed"], (a["path"], f["failures"])
        floor = 0.99 if a["precision"] == "fp32" else 0.95
        assert f["detection_recall"] >= floor and f["detection_precision"] >= floor, a["path"]


def test_int8_keeps_the_decode_in_float_and_the_edgetpu_model_maps_every_layer(converted: dict) -> None:
    for a in converted["artifacts"]:
        if a["precision"] != "int8":
            continue
        decode = a["extra"]["int8_recipe"]["detection_decode"]
        assert decode["nodes"] > 0 and decode["macs_float_fraction"] < 0.01
        if a["format"] == "tflite" and "edgetpu" in a["extra"]:
            pf = a["extra"]["edgetpu"]
            assert pf["predicted"] and pf["macs_on_tpu_fraction"] > 0.99  # only the decode after it on the CPU
            assert pf["first_unsupported"]["op"] == "DEQUANTIZE" and decode["ops_moved"] > 0
