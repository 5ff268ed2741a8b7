"""/detect against a real `edgekit serve` process on 127.0.0.1, on real conversion folders.

A colour detector whose yolov8-format output we control (an ONNX graph: one anchor per 8x8 cell of the
input, class 0 = red, class 1 = green) is converted by `edgekit convert` like any model, so its head is
the one validation recorded; a picture of another shape than the input's puts red and green blocks where
the letterbox maps them onto whole cells, and the boxes must come back on the blocks in the picture's own
pixels. The bundled digits detector (models/digits_yolo.onnx), where it is present, is then asked to find
real MNIST digits drawn on a 200x150 picture.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgekit.testing.server import REPO, ServerProcess

httpx = pytest.importorskip("httpx")
pytestmark = pytest.mark.slow  # real conversions and a server process: seconds


def colour_detector(path: Path, size: int = 64, stride: int = 8) -> Path:
    """An ONNX yolov8-format detector: per STRIDE x STRIDE cell, a box of the cell and scores relu(R - B), relu(G - B).

    Gray (the letterbox's 114) and black score 0; a pure red cell scores 1 as class 0. Ultralytics metadata
    (task detect, names) as real exports carry, so conversion decides the output is a detection head."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    cells = size // stride
    a = cells * cells
    j, i = np.meshgrid(np.arange(cells), np.arange(cells))
    boxes = np.stack([(j.ravel() + 0.5) * stride, (i.ravel() + 0.5) * stride, np.full(a, stride),
                      np.full(a, stride)]).astype(np.float32)[None]
    inits = [numpy_helper.from_array(boxes, "boxes"), numpy_helper.from_array(np.array([1, 3, a], np.int64), "shape"),
             numpy_helper.from_array(np.array([1], np.int64), "axis1")]
    nodes = [helper.make_node("AveragePool", ["images"], ["pooled"], kernel_shape=[stride, stride],
                              strides=[stride, stride]),
             helper.make_node("Reshape", ["pooled", "shape"], ["flat"])]
    for k, name in enumerate("rgb"):
        inits += [numpy_helper.from_array(np.array([k], np.int64), f"{name}0"),
                  numpy_helper.from_array(np.array([k + 1], np.int64), f"{name}1")]
        nodes.append(helper.make_node("Slice", ["flat", f"{name}0", f"{name}1", "axis1"], [name]))
    nodes += [helper.make_node("Sub", ["r", "b"], ["rb"]), helper.make_node("Relu", ["rb"], ["s0"]),
              helper.make_node("Sub", ["g", "b"], ["gb"]), helper.make_node("Relu", ["gb"], ["s1"]),
              helper.make_node("Concat", ["boxes", "s0", "s1"], ["output0"], axis=1)]
    x = helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, size, size])
    y = helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 6, a])
    model = helper.make_model(helper.make_graph(nodes, "colours", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    for key, value in {"task": "detect", "names": "{0: 'red', 1: 'green'}"}.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, path)
    return path


def _vector_model(path: Path) -> Path:
    """A model that takes a (N, 4) vector, not a picture: Identity."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "vector", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _convert(model: Path, calib: Path, out: Path, targets: str = "onnx") -> Path:
    run = subprocess.run([sys.executable, "-m", "edgekit.cli", "convert", str(model), "--target", targets,
                          "--quantize", "fp32", "--calib", str(calib), "-o", str(out)],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def _encode(array: np.ndarray, fmt: str = "PNG") -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format=fmt, quality=95)
    return buf.getvalue()


@pytest.fixture(scope="module")
def colours(tmp_path_factory: pytest.TempPathFactory):
    """A server with the colour detector's conversion folder, the bare ONNX (no manifest) and a non-image model."""
    tmp = tmp_path_factory.mktemp("detect")
    model = colour_detector(tmp / "colours.onnx")
    rng = np.random.default_rng(0)
    x = np.zeros((16, 3, 64, 64), np.float32)
    for k in range(16):  # calibration/validation inputs: coloured cells, so validation sees boxes
        for _ in range(4):
            i, j, c = rng.integers(0, 8, size=3)
            x[k, c % 2, i * 8:(i + 1) * 8, j * 8:(j + 1) * 8] = 1.0
    np.savez(tmp / "calib.npz", x=x)
    folder = _convert(model, tmp / "calib.npz", tmp / "out")
    bare = tmp / "bare"
    bare.mkdir()
    (bare / "plain.onnx").write_bytes(model.read_bytes())
    server = ServerProcess([str(folder), str(bare / "plain.onnx"), str(_vector_model(tmp / "vector.onnx")),
                            "--max-image-mpix", "0.1"], tmp / "server.log")
    server.folder = folder  # type: ignore[attr-defined]
    yield server
    assert server.stop() == 0, server.text()


def _blocks() -> np.ndarray:
    """A 128x64 (W x H) black picture with a red block at x 32..48, y 16..32 and a green one at x 80..96, y 32..48.

    Letterboxed into 64x64 it is scaled by 0.5 with 16 px bars above and below: each block lands on one whole
    8x8 cell of the detector, whose box is then exactly the block again in the picture's pixels."""
    im = np.zeros((64, 128, 3), np.uint8)
    im[16:32, 32:48] = (255, 0, 0)
    im[32:48, 80:96] = (0, 255, 0)
    return im


def test_detect_finds_the_blocks_in_the_pictures_pixels(colours) -> None:
    r = httpx.post(f"{colours.base}/v2/models/colours/detect", content=_encode(_blocks()),
                   headers={"content-type": "image/png"}, timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["model_name"] == "colours" and body["head"] == "yolov8"
    assert body["image"] == {"width": 128, "height": 64} and body["input"] == {"width": 64, "height": 64}
    assert body["letterbox"] == {"scale": 0.5, "resized": [64, 32], "pad": [0, 16, 0, 16], "fill": 114}
    assert body["thresholds"] == {"conf": 0.25, "iou": 0.7, "max_det": 300}  # the head's own, as validated
    assert set(body["time_ms"]) == {"preprocess", "inference", "postprocess"}
    found = sorted((d["label"], d["index"], d["box"]) for d in body["detections"])
    assert [(label, index) for label, index, _ in found] == [("green", 1), ("red", 0)], body["detections"]
    np.testing.assert_allclose(found[1][2], [32, 16, 48, 32], atol=0.01)
    np.testing.assert_allclose(found[0][2], [80, 32, 96, 48], atol=0.01)
    assert all(d["score"] > 0.9 for d in body["detections"])


def test_detect_takes_a_multipart_jpeg_and_the_cuts(colours) -> None:
    jpeg = _encode(_blocks(), "JPEG")
    r = httpx.post(f"{colours.base}/v2/models/colours/detect?max_det=1",
                   files={"image": ("blocks.jpg", jpeg, "image/jpeg")}, timeout=30)
    assert r.status_code == 200, r.text
    assert len(r.json()["detections"]) == 1 and r.json()["thresholds"]["max_det"] == 1
    r = httpx.post(f"{colours.base}/v2/models/colours/detect?conf=1", content=jpeg,
                   headers={"content-type": "image/jpeg"}, timeout=30)
    assert r.status_code == 200 and r.json()["detections"] == []


def test_infer_on_the_detector_is_still_the_raw_tensor(colours) -> None:
    import onnxruntime as ort

    x = np.zeros((1, 3, 64, 64), np.float32)
    x[0, 0, :8, :8] = 1.0
    r = httpx.post(f"{colours.base}/v2/models/colours/infer", timeout=30, json={"inputs": [
        {"name": "images", "shape": [1, 3, 64, 64], "datatype": "FP32", "data": x.ravel().tolist()}]})
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    assert out["name"] == "output0" and out["shape"] == [1, 6, 64]
    want = ort.InferenceSession(str(colours.folder / "colours.fp32.onnx")).run(None, {"images": x})[0]
    np.testing.assert_array_equal(np.asarray(out["data"], np.float32).reshape(want.shape), want)
    assert want[0, 4, 0] == 1.0


@pytest.mark.parametrize(("what", "path", "kw", "status", "field", "words"), [
    ("not an image", "colours/detect", {"content": b"GIF89a not a png"}, 415, "body", "JPEG or PNG"),
    ("too many pixels", "colours/detect", {"content": _encode(np.zeros((400, 300), np.uint8))}, 413, "body",
     "--max-image-mpix"),
    ("bad conf", "colours/detect?conf=high", {"content": b""}, 400, "conf", "conf"),
    ("bad max_det", "colours/detect?max_det=0", {"content": b""}, 400, "max_det", "max_det"),
    ("no manifest", "plain/detect", {"content": _encode(_blocks())}, 400, "model", "/classify"),
    ("not an image model", "vector/detect", {"content": _encode(_blocks())}, 400, "model", "/infer"),
    ("unknown model", "nope/detect", {"content": b""}, 404, "model", "no model named"),
], ids=lambda v: v if isinstance(v, str) and " " in v else "")
def test_bad_requests_get_a_clear_4xx(colours, what, path, kw, status, field, words) -> None:
    r = httpx.post(f"{colours.base}/v2/models/{path}", timeout=30, **kw)
    assert r.status_code == status, r.text
    assert r.json().get("field") == field and words in r.json()["error"]
    assert httpx.post(f"{colours.base}/v2/models/colours/detect", content=_encode(_blocks()),
                      timeout=30).status_code == 200


def test_labels_name_a_detectors_classes(colours, tmp_path: Path) -> None:
    """--labels are checked against the head's class count (not the raw tensor's last axis) and win over the names
    the model carries; a labels file that fits no model is refused at start."""
    labels = tmp_path / "labels.txt"
    labels.write_text("rouge\nvert\n")
    server = ServerProcess([str(colours.folder), "--labels", str(labels)], tmp_path / "server.log")
    try:
        r = httpx.post(f"{server.base}/v2/models/colours/detect", content=_encode(_blocks()), timeout=30)
        assert r.status_code == 200, r.text
        assert sorted(d["label"] for d in r.json()["detections"]) == ["rouge", "vert"]
    finally:
        assert server.stop() == 0, server.text()
    labels.write_text("a\nb\nc\n")
    with pytest.raises(RuntimeError, match="--labels has 3 names but the models have \\[2\\] classes"):
        ServerProcess([str(colours.folder), "--labels", str(labels)], tmp_path / "refused.log")


def test_detect_is_counted_in_the_metrics(colours) -> None:
    text = httpx.get(f"{colours.base}/metrics", timeout=30).text
    assert 'edgekit_requests_total{code="200",endpoint="detect",model="colours"}' in text
    assert 'edgekit_request_seconds_count{endpoint="detect",model="colours"}' in text


# ---------------------------------------------------------------------------------------- the trained digits detector
DIGITS_ONNX = REPO / "models" / "digits_yolo.onnx"
# (test-split digit index, x, y, cell size) on a 200 x 150 picture: scaled by 0.64 into the 128 x 128 input, each
# digit's cell is 32-36 px there, inside the 16-48 px the detector was trained on
PLACED = [(0, 12, 24, 52), (1, 78, 70, 56), (2, 140, 16, 50)]


def digits_picture() -> tuple[np.ndarray, list[tuple[int, list[float]]]]:
    """A 200x150 RGB picture of real MNIST test digits (white ink on black, as the training canvases), and each
    digit's (class, tight ink box in the picture's pixels), the box as models/detection_data.py makes it."""
    from PIL import Image

    from edgekit.data.calibration import mnist_split

    _, _, x_test, y_test = mnist_split()
    picture = np.zeros((150, 200), np.float32)
    truth = []
    for index, x0, y0, size in PLACED:
        digit = Image.fromarray(x_test[index].astype(np.uint8))
        cell = np.asarray(digit.resize((size, size), Image.Resampling.BILINEAR), np.float32) / 255
        region = picture[y0:y0 + size, x0:x0 + size]
        np.maximum(region, cell, out=region)
        ys, xs = np.nonzero(cell >= 0.25)  # detection_data.INK
        truth.append((int(y_test[index]), [float(v) for v in (x0 + xs.min(), y0 + ys.min(), x0 + xs.max() + 1,
                                                               y0 + ys.max() + 1)]))
    rgb = np.repeat(np.rint(picture * 255).astype(np.uint8)[..., None], 3, axis=2)
    return rgb, truth


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory):
    """The bundled digits detector converted as a user would (ONNX fp32, calibrated on held-out canvases), served."""
    if not DIGITS_ONNX.is_file():
        pytest.skip("models/digits_yolo.onnx is not here yet (python models/train_detector.py writes it)")
    tmp = tmp_path_factory.mktemp("digits")
    calib = REPO / "models" / "digits_detect_val.npz"
    if not calib.is_file():
        sys.path.insert(0, str(REPO))
        from models.detection_data import write_npz

        calib = write_npz(tmp / "calib.npz", 64)
    folder = _convert(DIGITS_ONNX, calib, tmp / "out")
    server = ServerProcess([str(folder)], tmp / "server.log")
    yield server
    assert server.stop() == 0, server.text()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_the_digits_detector_finds_real_digits_on_a_picture_of_another_size(digits, fmt: str) -> None:
    from edgekit.fidelity.detection import box_iou

    picture, truth = digits_picture()
    r = httpx.post(f"{digits.base}/v2/models/digits_yolo/detect", content=_encode(picture, fmt),
                   headers={"content-type": f"image/{fmt.lower()}"}, timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["image"] == {"width": 200, "height": 150} and body["input"] == {"width": 128, "height": 128}
    assert body["letterbox"]["pad"] == [0, 16, 0, 16]
    found = body["detections"]
    for cls, box in truth:  # every digit drawn has a box of its class on it, in the picture's pixels
        same = [d for d in found if d["index"] == cls]
        best = max((float(box_iou(np.array(box), np.array(d["box"]))[0, 0]) for d in same), default=0.0)
        assert best >= 0.5, (cls, box, found)
        assert next(d["label"] for d in same) == str(cls)  # the names the model carries
    assert len(found) <= len(truth) + 1, found  # and not a cloud of spurious boxes
