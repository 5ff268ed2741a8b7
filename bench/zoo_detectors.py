"""The zoo's YOLOv8 detectors (issue 27): rows judged by their boxes, not by their raw tensors.

Why: a YOLOv8 head's one (N, 4 + C, A) output holds pixel coordinates beside [0, 1] scores; its cosine stays
near 1 while an int8 artifact loses boxes. edgekit now decodes both sides and matches boxes (edgekit.fidelity.
detection); these rows show what that gives on a trained detector and on the real YOLOv8n graph.

- `digits_yolo`: the bundled trained detector (models/digits_yolo.onnx, YOLOv8 architecture at width 0.125, 10
  digit classes, Ultralytics-style metadata `task: detect` and `names`), on 128x128 canvases of held-out MNIST
  TEST digits with their labelled boxes (models.detection_data.write_npz): real digits, real boxes, so the
  fidelity record has mAP50 beside recall and precision.
- `yolov8n_320`: YOLOv8n at its real scale (models/yolo.py, 3,157,200 parameters, 80 classes), random init with
  Ultralytics' Detect bias prior applied as Ultralytics' DetectionModel does at construction (`bias_init()`, its
  640 px prior), exported as Ultralytics' ONNX exporter does: torch's TorchScript exporter (dynamo=False), opset
  17, static 1x3x320x320, input `images`, output `output0`, weights inside the file, and the same metadata keys
  (task, stride, batch, imgsz, names). Inputs: crops of scikit-image's sample photos at 320x320, uint8. Random
  weights with that prior score every class near 5 / 80 / (640 / stride)^2, far below the 0.25 cut: almost no
  box, so validation judges the raw output by the regression measures and says so in the record's notes (the
  build record says how many boxes the source finds, and what the same net gives without the prior).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

N_CALIB = 400  # samples in each .npz, as the other task rows (the zoo calibrates on 100 and holds out 100)
YOLO_SIZE = 320
PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry", "camera",
          "coins", "clock", "retina")
COCO = ("person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic_light",
        "fire_hydrant", "stop_sign", "parking_meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
        "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
        "skis", "snowboard", "sports_ball", "kite", "baseball_bat", "baseball_glove", "skateboard", "surfboard",
        "tennis_racket", "bottle", "wine_glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
        "sandwich", "orange", "broccoli", "carrot", "hot_dog", "pizza", "donut", "cake", "chair", "couch",
        "potted_plant", "bed", "dining_table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell_phone",
        "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors", "teddy_bear",
        "hair_drier", "toothbrush")


def _root() -> Path:
    from zoo_models import ROOT

    return ROOT


def _held_out(n: int) -> np.ndarray:
    """The indices of N samples the zoo's convert holds out for validation (edgekit's own split)."""
    from zoo_models import CALIB_SIZE, VAL_SIZE

    from edgekit.data.calibration import split_indices

    return split_indices(n, CALIB_SIZE, VAL_SIZE)[1]


def _ort(path: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])


def build_digits_yolo(out: Path) -> dict[str, Any]:
    """The bundled trained detector on N_CALIB held-out canvases with boxes; its mAP50 on the validated ones."""
    import onnx

    from edgekit.data.feeds import held_out_boxes
    from edgekit.fidelity.coco import mean_ap
    from edgekit.fidelity.detection import Head, decode, labelled_boxes
    from models.detection_data import write_npz

    src = _root() / "models" / "digits_yolo.onnx"
    calib = write_npz(out / "digits_yolo.npz", n=N_CALIB)
    x = np.load(calib)["x"]
    val = _held_out(len(x))
    from zoo_models import CALIB_SIZE, VAL_SIZE

    truth_rows = held_out_boxes(str(calib), CALIB_SIZE, VAL_SIZE)
    y = _ort(src, x[val])
    head = Head("yolov8", 10)
    m50, m5095 = mean_ap(decode([y], head), labelled_boxes(truth_rows, len(val)))
    meta = {p.key: p.value for p in onnx.load(str(src)).metadata_props}
    params = sum(int(np.prod(t.dims)) for t in onnx.load(str(src)).graph.initializer)
    return {"file": src, "params": params, "layout": "NCHW", "input": "3x128x128", "calib": calib, "args": [],
            "outputs": f"output0 (N,14,336); metadata task={meta.get('task')!r}",
            "task": f"mAP50 {m50:.3f}, mAP50-95 {m5095:.3f} at confidence 0.25 ({len(val)} held-out canvases, "
                    f"{len(truth_rows)} digits)"}


def photos(n: int, size: int, seed: int) -> np.ndarray:
    """N uint8 (3, SIZE, SIZE) crops of scikit-image's sample photos at random positions and scales."""
    import skimage.data
    from PIL import Image

    rng = np.random.default_rng(seed)
    imgs = []
    for name in PHOTOS:
        a = getattr(skimage.data, name)()
        if a.ndim == 2:
            a = np.repeat(a[..., None], 3, axis=2)
        imgs.append(np.ascontiguousarray(a[..., :3]))
    out = np.empty((n, 3, size, size), np.uint8)
    for i in range(n):
        img = imgs[i % len(imgs)]
        h, w = img.shape[:2]
        s = int(rng.uniform(0.5, 1.0) * min(h, w))
        y0, x0 = int(rng.integers(0, h - s + 1)), int(rng.integers(0, w - s + 1))
        crop = Image.fromarray(img[y0:y0 + s, x0:x0 + s]).resize((size, size), Image.Resampling.BILINEAR)
        out[i] = np.asarray(crop).transpose(2, 0, 1)
    return out


def _boxes_seen(model: Any, x: np.ndarray) -> tuple[float, float, int]:
    """(lowest, highest class score, boxes after the 0.25 cut and NMS) of MODEL on uint8 X (scaled by 1/255)."""
    import torch

    from edgekit.fidelity.detection import Head, decode

    with torch.no_grad():
        y = torch.cat([model(torch.from_numpy(x[i:i + 8].astype(np.float32) / 255.0)) for i in range(0, len(x), 8)])
    y = y.numpy()
    scores = y[:, 4:]
    return float(scores.min()), float(scores.max()), sum(len(d) for d in decode([y], Head("yolov8", 80)))


def build_yolov8n(out: Path) -> dict[str, Any]:
    """YOLOv8n (random init, Ultralytics' bias prior) exported at 320x320 as Ultralytics exports ONNX."""
    import onnx
    import torch

    from models.yolo import yolov8n

    torch.manual_seed(0)
    model = yolov8n()
    x = photos(N_CALIB, YOLO_SIZE, seed=41)
    probe = x[_held_out(len(x))][:32]
    raw = _boxes_seen(model, probe)  # models.yolo.yolov8n() as it returns: no bias prior
    model.detect.bias_init()  # what Ultralytics' DetectionModel.__init__ runs once (its default: the 640 px prior)
    prior = _boxes_seen(model, probe)
    path = out / "yolov8n_320.onnx"
    torch.onnx.export(model, (torch.zeros(1, 3, YOLO_SIZE, YOLO_SIZE),), str(path), dynamo=False, opset_version=17,
                      external_data=False, do_constant_folding=True, input_names=["images"],
                      output_names=["output0"])
    m = onnx.load(str(path))
    meta = {"description": "YOLOv8n (edgekit models/yolo.py, random init)", "stride": "32", "task": "detect",
            "batch": "1", "imgsz": str([YOLO_SIZE, YOLO_SIZE]), "names": str(dict(enumerate(COCO)))}
    for k, v in meta.items():  # the keys Ultralytics' exporter writes into metadata_props
        m.metadata_props.add(key=k, value=v)
    onnx.save(m, str(path))
    calib = out / "yolov8n_320.npz"
    np.savez(calib, x=x)
    return {"file": path, "params": sum(p.numel() for p in model.parameters()), "layout": "NCHW",
            "pixels": "0-1", "input": f"3x{YOLO_SIZE}x{YOLO_SIZE}", "calib": calib, "args": [],
            "outputs": f"output0 (N,84,{(YOLO_SIZE // 8) ** 2 + (YOLO_SIZE // 16) ** 2 + (YOLO_SIZE // 32) ** 2})",
            "task": f"random weights: with Ultralytics' bias prior class scores {prior[0]:.4f}-{prior[1]:.4f}, "
                    f"{prior[2]} boxes at confidence 0.25 on {len(probe)} held-out photos; without it "
                    f"(models.yolo.yolov8n() as returned) {raw[0]:.2f}-{raw[1]:.2f}, {raw[2]} boxes",
            "scores": {"with_bias_init": prior, "without_bias_init": raw, "photos": len(probe)}}


BUILDERS = {"digits_yolo": build_digits_yolo, "yolov8n_320": build_yolov8n}


def build(name: str, out: Path) -> dict[str, Any]:
    import sys

    root = str(_root())
    if root not in sys.path:  # models/ is imported as a package from the repository root
        sys.path.insert(0, root)
    return BUILDERS[name](out)
