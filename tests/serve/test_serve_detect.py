"""/detect's arithmetic without a server: the letterbox as Ultralytics does it, and its undoing; heads decoded into
boxes in the picture's own pixels; the head found through the manifest record; the query's cuts; no heavy import."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from edgekit.core.artifact import Artifact, Fidelity, OutputFidelity, TensorSpec
from edgekit.fidelity.detection import Head
from edgekit.serve.detect import Detector, class_name, detections, detector_of, fit, letterbox, parse_cuts
from edgekit.serve.errors import RequestError


@pytest.mark.parametrize(("size", "resized", "pad"), [
    ((200, 150), (128, 96), (0, 16, 0, 16)),  # landscape: bars above and below
    ((150, 200), (96, 128), (16, 0, 16, 0)),  # portrait: bars left and right
    ((100, 61), (128, 78), (0, 25, 0, 25)),  # scaled up
    ((200, 121), (128, 77), (0, 25, 0, 26)),  # odd padding: the extra row at the bottom, as Ultralytics
    ((64, 64), (128, 128), (0, 0, 0, 0)),
    ((1, 5000), (1, 128), (63, 0, 64, 0)),  # a hostile aspect ratio still leaves a pixel to resize to
    ((5000, 1), (128, 1), (0, 63, 0, 64)),
])
def test_fit_is_ultralytics_letterbox(size, resized, pad) -> None:
    box = fit(*size, 128, 128)
    assert box.resized == resized and box.pad == pad
    assert box.resized[0] + pad[0] + pad[2] == 128 and box.resized[1] + pad[1] + pad[3] == 128


def test_letterbox_pads_gray_114_centred_and_undo_maps_back() -> None:
    from PIL import Image

    im = Image.new("RGB", (200, 150), (255, 0, 0))
    arr, box = letterbox(im, 128, 128)
    assert arr.shape == (128, 128, 3) and arr.dtype == np.float32
    assert (arr[:16] == 114).all() and (arr[-16:] == 114).all()
    assert (arr[16:112, :, 0] == 255).all() and (arr[16:112, :, 1] == 0).all()
    grey, _ = letterbox(im.convert("L"), 64, 32)  # one channel, a wide input: bars left and right
    assert grey.shape == (32, 64) and (grey[:, :10] == 114).all()
    # the whole picture's box in input pixels maps back to the picture; a box in the padding is clipped away
    back = box.undo(np.array([[0, 16, 128, 112], [0, 0, 128, 10]]))
    np.testing.assert_allclose(back[0], [0, 0, 200, 150])
    assert back[1][3] == back[1][1] == 0


def _yolov8(boxes_scores: list[tuple[list[float], int, float]], classes: int = 3, anchors: int = 64) -> np.ndarray:
    """A (1, 4 + C, A) head: the given (xywh in input pixels, class, score) in the first anchors, the rest empty."""
    y = np.zeros((1, 4 + classes, anchors), np.float32)
    y[0, :4] = 4.0
    for a, (xywh, c, s) in enumerate(boxes_scores):
        y[0, :4, a] = xywh
        y[0, 4 + c, a] = s
    return y


def test_detections_are_in_the_pictures_pixels_best_first_with_names() -> None:
    head = Head("yolov8", 3, ["output0"], names={0: "zero", 1: "one", 2: "two"})
    det = Detector(head, ["output0"])
    box = fit(200, 150, 128, 128)  # scale 0.64, 16 px bars above and below
    y = _yolov8([([64, 64, 32, 32], 1, 0.6), ([32, 32, 16, 16], 2, 0.9), ([64, 64, 30, 30], 1, 0.5),
                 ([10, 5, 8, 6], 0, 0.95), ([100, 100, 8, 8], 0, 0.2), ([64, 12, 40, 12], 0, 0.8)])
    out = detections({"output0": y}, det, parse_cuts({}, head), box, 128, 128, None)
    # the 0.5 box is NMS'd by the 0.6 one; the 0.2 one is under the cut; the one in the top bar is clipped away, and
    # so is the one centred on the bar that reaches 2 px into the picture
    assert [(d["index"], d["label"], d["score"]) for d in out] == [(2, "two", 0.9), (1, "one", 0.6)]
    np.testing.assert_allclose(out[0]["box"], [(24 - 0) / 0.64, (24 - 16) / 0.64, 40 / 0.64, (40 - 16) / 0.64],
                               atol=0.01)
    # a converter's transposed (1, A, 4 + C) is read the same; --labels win over the model's names; max_det
    again = detections({"output0": np.swapaxes(y, 1, 2)}, det, parse_cuts({"max_det": "1"}, head), box, 128, 128,
                       ["a", "b", "c"])
    assert [(d["label"], d["box"]) for d in again] == [("c", out[0]["box"])]
    assert detections({"output0": y}, det, parse_cuts({"conf": "0.95"}, head), box, 128, 128, None) == []


def test_tflite_postprocess_boxes_are_fractions_y_first() -> None:
    head = Head("tflite-postprocess", 2, ["b", "c", "s", "n"])
    det = Detector(head, ["boxes", "classes", "scores", "count"])
    results = {"boxes": np.array([[[0.25, 0.5, 0.75, 1.0], [0, 0, 0.1, 0.1]]], np.float32),
               "classes": np.array([[1, 0]], np.float32), "scores": np.array([[0.8, 0.9]], np.float32),
               "count": np.array([1], np.float32)}
    out = detections(results, det, parse_cuts({}, head), fit(100, 100, 100, 100), 100, 100, None)
    assert out == [{"box": [50.0, 25.0, 100.0, 75.0], "index": 1, "label": "1", "score": 0.8}]


def test_a_yolov5_head_of_fractions_is_served_in_the_pictures_pixels() -> None:
    """Ultralytics' YOLOv5 TFLite export writes boxes as fractions of the input; validation recorded the head with
    `fractions_of`, so decode gives input pixels, and a small box near the corner is not scaled a second time."""
    head = Head("yolov5", 2, ["out"], fractions_of=[100, 100])
    det = Detector(head, ["out"])
    y = np.zeros((1, 20, 7), np.float32)  # more rows than columns, as a YOLO head's anchors outnumber them
    y[0, 0] = [0.5, 0.25, 0.5, 0.5, 0.9, 0.1, 0.9]  # class 1, centred at (50, 25) px, 50 x 50 px
    y[0, 1] = [0.01, 0.01, 0.01, 0.01, 0.9, 0.9, 0.1]  # class 0, a 1 px box at (1, 1) px: all its pixels are <= 1.5
    out = detections({"out": y}, det, parse_cuts({}, head), fit(100, 100, 100, 100), 100, 100, None)
    assert [(d["index"], d["box"]) for d in out] == [(1, [25.0, 0.0, 75.0, 50.0]), (0, [0.5, 0.5, 1.5, 1.5])]


def test_class_name_prefers_labels_then_the_models_names_then_the_index() -> None:
    head = Head("yolov8", 3, names={0: "cat"})
    assert class_name(0, head, ["dog", "x", "y"]) == "dog"
    assert class_name(0, head, None) == "cat"
    assert class_name(2, head, None) == "2"


def _artifact(outputs: list[OutputFidelity], kind: str = "detection", head: dict | None = None) -> Artifact:
    fid = Fidelity(samples=4, top1_agreement=None, cosine=1.0, max_abs_error=0.0, kind=kind, head=head,
                   outputs=outputs)
    return Artifact(path="m.tflite", format="tflite", precision="int8", inputs=[], outputs=[TensorSpec(
        "PartitionedCall:0", [1, 14, 336], "float32")], size_bytes=1, sha256="", fidelity=fid)


def test_the_head_is_found_through_the_fidelity_record_under_the_artifacts_names() -> None:
    head = Head("yolov8", 10, ["output0"], names={i: str(i) for i in range(10)}).to_dict()
    rec = OutputFidelity("output0", [1, 14, 336], "float32", "detection", artifact_name="PartitionedCall:0",
                         fidelity=Fidelity(samples=4, top1_agreement=None, cosine=1.0, max_abs_error=0.0, head=head))
    found = detector_of(_artifact([rec], head=head), ["PartitionedCall:0"])
    assert found is not None and found.outputs == ["PartitionedCall:0"] and found.classes == 10
    assert found.head.names == {i: str(i) for i in range(10)}
    classifier = OutputFidelity("y", [1, 10], "float32", "classes", artifact_name="y",
                                fidelity=Fidelity(samples=4, top1_agreement=1.0, cosine=1.0, max_abs_error=0.0))
    assert detector_of(_artifact([classifier], kind="classes"), ["y"]) is None
    assert detector_of(None, ["y"]) is None


@pytest.mark.parametrize(("query", "field"), [({"conf": "abc"}, "conf"), ({"conf": "1.5"}, "conf"),
                                              ({"iou": "nan"}, "iou"), ({"max_det": "0"}, "max_det"),
                                              ({"max_det": "-3"}, "max_det"), ({"max_det": "301"}, "max_det")])
def test_bad_cuts_are_400_naming_the_parameter(query, field) -> None:
    with pytest.raises(RequestError) as err:
        parse_cuts(query, Head("yolov8", 2))
    assert err.value.status == 400 and err.value.field == field


def test_cuts_default_to_the_heads_own() -> None:
    cuts = parse_cuts({}, Head("yolov8", 2, confidence=0.4, nms_iou=0.6))
    assert (cuts.conf, cuts.iou, cuts.max_det) == (0.4, 0.6, 300)
    assert parse_cuts({"conf": "0.1", "iou": "0.5", "max_det": "7"}, Head("yolov8", 2)).to_dict() == {
        "conf": 0.1, "iou": 0.5, "max_det": 7}


def test_the_serve_path_imports_nothing_heavy() -> None:
    """The device install has numpy, Pillow and a runtime: /detect must not reach for torch, TF or onnx."""
    code = ("import sys, numpy as np\n"
            "import edgekit.serve.app, edgekit.serve.server\n"
            "from edgekit.fidelity.detection import Head\n"
            "from edgekit.serve.detect import Detector, detections, fit, parse_cuts\n"
            "h = Head('yolov8', 2)\n"
            "y = np.zeros((1, 6, 64), np.float32); y[0, :4, 0] = [8, 8, 4, 4]; y[0, 4, 0] = 0.9\n"
            "assert detections({'o': y}, Detector(h, ['o']), parse_cuts({}, h), fit(64, 64, 64, 64), 64, 64, None)\n"
            "heavy = ('torch', 'tensorflow', 'onnx', 'keras', 'scipy', 'pycocotools', 'edgekit.fidelity.metrics',\n"
            "         'edgekit.validation.artifact', 'edgekit.quantize')\n"
            "print([m for m in heavy if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("record", [{"classes": 3}, {"format": "yolo9000", "classes": 3}, {"format": "yolov8"},
                                    {"format": "yolov8", "classes": "many"}, {"format": "yolov8", "classes": 3,
                                                                              "names": ["not", "a", "dict"]}, "yolov8"])
def test_a_malformed_head_record_makes_no_detector(record) -> None:
    """A manifest is hostile input: a head that cannot be read is no head, never a crash at load."""
    rec = OutputFidelity("output0", [1, 7, 64], "float32", "detection", artifact_name="output0",
                         fidelity=Fidelity(samples=4, top1_agreement=None, cosine=1.0, max_abs_error=0.0, head=record))
    found = detector_of(_artifact([rec]), ["output0"])
    assert found is None or found.head.names is None  # names that are not a mapping are dropped, the head kept


def test_outputs_that_do_not_fit_the_head_are_a_500_naming_them() -> None:
    head = Head("ssd", 2, ["b", "s"])
    with pytest.raises(RequestError) as err:
        detections({"b": np.zeros((1, 8, 4)), "s": np.zeros((1, 5, 2))}, Detector(head, ["b", "s"]),
                   parse_cuts({"conf": "0"}, head), fit(8, 8, 8, 8), 8, 8, None)
    assert err.value.status == 500 and "do not fit its recorded ssd head" in err.value.message


def test_an_anchors_head_whose_file_is_gone_is_a_500_that_says_so(tmp_path) -> None:
    anchors = {"file": str(tmp_path / "anchors.npy"), "sha256": "", "input_size": [128, 128],
               "scale": [128.0, 128.0, 128.0, 128.0]}
    head = Head("anchors", 1, ["regressors", "classificators"], keypoints=6, anchors=anchors)
    det = Detector(head, ["regressors", "classificators"])
    results = {"regressors": np.zeros((1, 896, 16), np.float32), "classificators": np.zeros((1, 896, 1), np.float32)}
    with pytest.raises(RequestError) as err:
        detections(results, det, parse_cuts({}, head), fit(128, 128, 128, 128), 128, 128, None)
    assert err.value.status == 500 and "anchors.npy" in str(err.value) and "cannot decode here" in str(err.value)
