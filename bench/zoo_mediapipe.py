"""The zoo's MediaPipe rows (issue 37): six trained float .tflite graphs of the mediapipe 0.10.21 wheel, each judged
by its kind (a mask, landmarks and presence scores, a raw-anchor detection head), on bundled photos.

Where the graphs come from: the mediapipe 0.10.21 wheel's `mediapipe/modules/**/*.tflite`, read out of the zip (the
package is never imported). mediapipe is not in the `zoo` extra: installing it beside the rest would downgrade numpy
(2.4 -> 1.26.4) and protobuf (7 -> 4.25.9) and pull jax and OpenCV (`pip install --dry-run mediapipe==0.10.21`).
So the wheel is found at $MEDIAPIPE_WHEEL, or in bench/results/zoo/data/, /tmp/mp/ or the working folder
(`GET_MEDIAPIPE_WHEEL` leaves it there); a mediapipe package that is importable anyway is read from its folder.

Photos: scikit-image's and scikit-learn's bundled colour photos, each whole and as random square crops (14 per photo
with a person, the astronaut and the cameraman; 6 per other), 93 PNGs, exactly as docs/results/mediapipe.md's
recipe writes them; one folder shared by the six rows, 60 calibrate and 23 validate (edgekit holds out a quarter of a
folder, the photos in a fixed shuffled order, as docs/results/mediapipe.md's conversions did). None holds a
hand, two hold a person and a face: what the float model itself does on them is each row's `task` figure.

Each file is an fp16 .tflite: a .tflite source is taken as it is, so the rows ask `--target tflite,edgetpu
--quantize fp16,int8` (fp32 would be refused, ONNX is not a target of a .tflite source).
"""

from __future__ import annotations

import importlib.util
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

WHEEL = "mediapipe-0.10.21-cp311-cp311-manylinux_2_28_x86_64.whl"
GET_MEDIAPIPE_WHEEL = "pip download mediapipe==0.10.21 --no-deps -d /tmp/mp"
PHOTOS = "mp_photos"  # the folder of PNGs, under the zoo's src/
CALIB_SIZE = 60  # of the 93 photos; the other 33 validate
# row -> (file in mediapipe/modules/, input size, [-1, 1] input (mean 0.5, std 0.5), --output-kind spellings)
GRAPHS: dict[str, tuple[str, int, bool, tuple[str, ...]]] = {
    "mp_selfie_segmentation": ("selfie_segmentation/selfie_segmentation.tflite", 256, False, ("activation_10=mask",)),
    "mp_hand_landmark_full": ("hand_landmark/hand_landmark_full.tflite", 224, False,
                              ("Identity=landmarks", "Identity_1=presence", "Identity_2=score")),
    "mp_face_landmark": ("face_landmark/face_landmark.tflite", 192, False, ("conv2d_21=landmarks", "conv2d_31=score")),
    "mp_face_detection_short": ("face_detection/face_detection_short_range.tflite", 128, True,
                                ("regressors=anchors:face",)),
    "mp_palm_detection_full": ("palm_detection/palm_detection_full.tflite", 192, False, ("Identity=anchors:palm",)),
    "mp_pose_detection": ("pose_detection/pose_detection.tflite", 224, True, ("Identity=anchors:pose",)),
}


def graph(name: str, out: Path) -> Path:
    """Row NAME's .tflite copied into OUT (so the recorded command names no site-packages or /tmp path)."""
    rel = GRAPHS[name][0]
    local = out / f"{name}.tflite"
    spec = importlib.util.find_spec("mediapipe")
    if spec is not None and spec.origin is not None and (Path(spec.origin).parent / "modules" / rel).is_file():
        local.write_bytes((Path(spec.origin).parent / "modules" / rel).read_bytes())
        return local
    data = Path(__file__).resolve().parent / "results" / "zoo" / "data"
    wheels = [Path(os.environ.get("MEDIAPIPE_WHEEL", "")), *(d / WHEEL for d in (data, Path("/tmp/mp"), Path.cwd()))]
    wheel = next((w for w in wheels if w.is_file()), None)
    if wheel is None:
        raise SystemExit(f"the mediapipe 0.10.21 wheel is not found: `{GET_MEDIAPIPE_WHEEL}`, or set $MEDIAPIPE_WHEEL")
    with zipfile.ZipFile(wheel) as z:
        local.write_bytes(z.read(f"mediapipe/modules/{rel}"))
    return local


def photos(out: Path) -> Path:
    """OUT/mp_photos: the 93 PNGs of docs/results/mediapipe.md's recipe (written once; seed 0)."""
    from PIL import Image
    from skimage import color, data
    from sklearn.datasets import load_sample_images

    folder = out / PHOTOS
    if len(list(folder.glob("*.png"))) == 93:
        return folder
    tmp = out / f".{PHOTOS}.{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    shots = {name: getattr(data, name)() for name in ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field",
                                                      "immunohistochemistry", "retina", "cat")}
    shots["camera"] = (color.gray2rgb(data.camera())).astype(np.uint8)
    shots.update(zip(("china", "flower"), load_sample_images().images, strict=True))
    rng = np.random.default_rng(0)
    for name, im in shots.items():  # name -> HxWx3 uint8
        Image.fromarray(im).save(tmp / f"{name}_full.png")
        for k in range(14 if name in ("astronaut", "camera") else 6):
            s = int(rng.uniform(0.45, 0.95) * min(im.shape[:2]))
            y, x = rng.integers(0, im.shape[0] - s + 1), rng.integers(0, im.shape[1] - s + 1)
            crop = im[y:y + s, x:x + s][:, ::-1] if rng.random() < 0.5 else im[y:y + s, x:x + s]
            Image.fromarray(np.ascontiguousarray(crop)).save(tmp / f"{name}_crop{k}.png")
    if folder.exists():  # a folder left half-written by an earlier build
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()
    tmp.rename(folder)
    return folder


def _run_float(path: Path, folder: Path, size: int, signed: bool) -> tuple[list[str], list[dict[str, np.ndarray]]]:
    """The float graph (LiteRT, XNNPACK) on every photo, resized to SIZE: (photo names, outputs by name per photo)."""
    from ai_edge_litert.interpreter import Interpreter
    from PIL import Image

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    inp = it.get_input_details()[0]["index"]
    names, outs = [], []
    for p in sorted(folder.glob("*.png")):
        x = np.asarray(Image.open(p).convert("RGB").resize((size, size), Image.Resampling.BILINEAR), np.float32) / 255
        it.set_tensor(inp, ((x - 0.5) / 0.5 if signed else x)[None])
        it.invoke()
        names.append(p.stem)
        outs.append({d["name"]: it.get_tensor(d["index"]).copy() for d in it.get_output_details()})
    return names, outs


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(np.asarray(v, np.float64), -100, 100)))


def task_figure(name: str, names: list[str], outs: list[dict[str, np.ndarray]]) -> str:
    """What the float model itself does on the 93 photos, in words."""
    person = np.array([n.split("_")[0] in ("astronaut", "camera") for n in names])
    n = len(names)
    if name == "mp_selfie_segmentation":
        cover = np.array([float((o["activation_10"] > 0.5).mean()) for o in outs])
        return (f"mask (p > 0.5) covers {cover[person].mean():.0%} of a photo on average on the {person.sum()} photos "
                f"with a person, {cover[~person].mean():.0%} on the {n - person.sum()} without")
    if name == "mp_hand_landmark_full":
        present = np.array([float(o["Identity_1"].ravel()[0]) for o in outs]) > 0.5
        return f"hand presence > 0.5 on {present.sum()} of {n} photos (none holds a hand)"
    if name == "mp_face_landmark":
        present = _sigmoid(np.array([float(o["conv2d_31"].ravel()[0]) for o in outs])) > 0.5
        return (f"face presence > 0.5 on {present[person].sum()} of {person.sum()} photos with a person, "
                f"{present[~person].sum()} of {n - person.sum()} without (whole photos and loose crops, not face ROIs)")
    logits = next(k for k in outs[0] if outs[0][k].shape[-1] == 1)
    over = np.array([int((_sigmoid(o[logits]) > 0.5).sum()) for o in outs])
    return (f"{over.sum()} anchors over 0.5 on {n} photos ({(over > 0).sum()} photos with any; "
            f"{over[person].sum()} on the {person.sum()} with a person)")


def build(name: str, out: Path) -> dict[str, Any]:
    """Row NAME's build record: the graph, the photos folder, its flags and the float model's own figure."""
    rel, size, signed, kinds = GRAPHS[name]
    path = graph(name, out)
    folder = photos(out)
    names, outs = _run_float(path, folder, size, signed)
    args = [*(["--mean", "0.5", "--std", "0.5"] if signed else []), *(a for k in kinds for a in ("--output-kind", k))]
    return {"file": path, "params": _params(path), "layout": "NHWC", "input": f"{size}x{size}x3",
            "calib": folder, "args": args, "targets": "tflite,edgetpu", "precisions": "fp16,int8",
            "calib_size": CALIB_SIZE, "val_size": round(len(names) / 4),
            "graph": f"mediapipe 0.10.21 mediapipe/modules/{rel}",
            "outputs": ", ".join(f"{k} {tuple(v.shape)}" for k, v in outs[0].items()),
            "task": task_figure(name, names, outs)}


def _params(path: Path) -> int:
    """Values of the graph's constant tensors (weights), read from the flatbuffer without TensorFlow."""
    from ai_edge_litert.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model(str(path))
    total = 0
    for sg in model.subgraphs:
        for t in sg.tensors:
            buf = model.buffers[t.buffer] if t.buffer < len(model.buffers) else None
            if buf is not None and buf.data is not None and len(buf.data) and t.shape is not None:
                total += int(np.prod(t.shape))
    return total
