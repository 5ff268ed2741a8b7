"""The zoo's non-classifiers (issue 15): task models built in code and trained briefly on real digits, and trained
third-party PP-OCR ONNX models.

No download is possible here, so each model is built with torch and trained for a few hundred steps on
scenes made of the bundled MNIST digits (edgekit.data.calibration.mnist_split: 4,000 train, 1,000 test):
- `det_faceproposal`: a fully convolutional 3-head proposal net (as face/object proposal nets are): 64x64
  scenes with two digits; per 8x8 cell an objectness map "obj" (N,1,8,8), class scores "cls" (N,10,8,8) and
  a box "box" (N,4,8,8). Saved as .pt2 (outputs named by the dict keys).
- `unet_seg`: a U-Net (3 levels, skip connections) labelling every pixel of a 32x32 digit: background or
  its digit, (N,11,32,32); the .npz carries the label masks, so mIoU is measured.
- `crnn_digits`: a convolutional recognizer reading 4-digit strings (four test digits side by side,
  32x128), CTC-trained, (N,32,11) per-step scores (blank + 10). Convolutional sequence head, no
  LSTM: what int8 edge recognizers usually ship.
- `east_dyn_onnx`: an EAST-style text/digit detector, score map + 4-channel geometry, exported as a
  third-party exporter writes it: torch's TorchScript exporter at opset 12, dynamic batch, height and width
  (dim_params), converted with `--input-shape 1,3,64,64`.
- `ppocr_det`, `ppocr_rec`, `ppocr_cls`: TRAINED third-party models, the PP-OCR ONNX files shipped in the
  rapidocr-onnxruntime wheel (the `zoo` extra; only its .onnx files are read): a DB text detector (dynamic H/W,
  pinned 320x320), a CTC text-line recogniser ((N,T,6625) scores, pinned 48x320) and a 0/180 orientation
  classifier (48x192, labels in the .npz). Inputs are text rendered with PIL's default font, preprocessed as
  PP-OCR does (det: BGR uint8 + ImageNet mean/std flags; rec/cls: float (x/255-0.5)/0.5, zero-padded right).

Each builder returns the build record bench/zoo.py stores: the source file, its calibration .npz (test
scenes only; never the training digits), the extra CLI flags (--output-kind for box/geometry maps, which
are regressions whatever their channel count), and the trained model's own task figure.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

SCENE, CELL = 64, 8
STEPS = {"det_faceproposal": 250, "unet_seg": 150, "crnn_digits": 300, "east_dyn_onnx": 150}  # batch 32: a shared CPU
N_CALIB = 400  # test scenes in each .npz (the zoo calibrates on 100 and validates on 200 of them)


def _digits(split: str) -> tuple[np.ndarray, np.ndarray]:
    from edgekit.data.calibration import mnist_split

    x_train, y_train, x_test, y_test = mnist_split()
    x, y = (x_train, y_train) if split == "train" else (x_test, y_test)
    return np.asarray(x, np.float32) / 255.0, np.asarray(y, np.int64)


def scenes(split: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """N 64x64 scenes with two digits (one per half), 3 channels: (x (N,3,64,64), labels (N,2), boxes (N,2,4)).

    Boxes are the digits' ink bounding boxes in pixels (x0, y0, x1, y1).
    """
    x, y = _digits(split)
    rng = np.random.default_rng(seed)
    img = np.zeros((n, SCENE, SCENE), np.float32)
    labels = np.zeros((n, 2), np.int64)
    boxes = np.zeros((n, 2, 4), np.float32)
    for i in range(n):
        for j, x0 in enumerate((rng.integers(0, 5), rng.integers(32, 37))):
            k, y0 = rng.integers(len(x)), rng.integers(0, SCENE - 28)
            d = x[k]
            img[i, y0:y0 + 28, x0:x0 + 28] = np.maximum(img[i, y0:y0 + 28, x0:x0 + 28], d)
            rows, cols = np.nonzero(d > 0.3)
            boxes[i, j] = (x0 + cols.min(), y0 + rows.min(), x0 + cols.max() + 1, y0 + rows.max() + 1)
            labels[i, j] = y[k]
    return np.repeat(img[:, None], 3, axis=1), labels, boxes


def _train(model: Any, batches: Any, loss_fn: Any, steps: int, lr: float = 5e-3) -> float:
    import torch

    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    loss = torch.zeros(())
    for step in range(steps):
        loss = loss_fn(model, *batches(step))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return float(loss.detach())


def _conv(cin: int, cout: int, stride: int = 1) -> Any:
    import torch

    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, stride, 1), torch.nn.BatchNorm2d(cout),
                               torch.nn.ReLU())


def _export_pt2(model: Any, example: Any, path: Path) -> None:
    import torch

    ep = torch.export.export(model, (example,), dynamic_shapes=({0: torch.export.Dim("batch", max=1024)},))
    torch.export.save(ep, path)


def _npz(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


# ----------------------------------------------------------------------------- the detector


def _cell_targets(labels: np.ndarray, boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per 8x8 cell: objectness (N,8,8), class (N,8,8; -1 where no digit), box (N,4,8,8: centre offset, size)."""
    n, g = len(labels), SCENE // CELL
    obj, cls, box = np.zeros((n, g, g), np.float32), np.full((n, g, g), -1, np.int64), np.zeros((n, 4, g, g),
                                                                                                 np.float32)
    for i in range(n):
        for (x0, y0, x1, y1), lab in zip(boxes[i], labels[i], strict=True):
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            gx, gy = int(cx // CELL), int(cy // CELL)
            obj[i, gy, gx], cls[i, gy, gx] = 1.0, lab
            box[i, :, gy, gx] = (cx / CELL - gx, cy / CELL - gy, (x1 - x0) / SCENE, (y1 - y0) / SCENE)
    return obj, cls, box


def build_detector(out: Path) -> dict[str, Any]:
    import torch

    class Proposals(torch.nn.Module):
        """A fully convolutional proposal net: backbone at stride 8, three 1x1 heads (obj, cls, box)."""

        def __init__(self) -> None:
            super().__init__()
            self.body = torch.nn.Sequential(_conv(3, 16, 2), _conv(16, 32, 2), _conv(32, 48, 2), _conv(48, 48))
            self.obj, self.cls, self.box = (torch.nn.Conv2d(48, c, 1) for c in (1, 10, 4))

        def forward(self, image: torch.Tensor) -> dict[str, torch.Tensor]:
            f = self.body(image)
            return {"obj": torch.sigmoid(self.obj(f)), "cls": self.cls(f), "box": self.box(f)}

    x, labels, boxes = scenes("train", 4000, seed=1)
    obj, cls, box = (torch.from_numpy(a) for a in _cell_targets(labels, boxes))
    xt = torch.from_numpy(x)
    rng = np.random.default_rng(0)

    def batch(_step: int) -> tuple[Any, ...]:
        idx = torch.from_numpy(rng.integers(0, len(xt), 32))
        return xt[idx], obj[idx], cls[idx], box[idx]

    def loss(m: Any, xb: Any, ob: Any, cb: Any, bb: Any) -> Any:
        y = m(xb)
        pos = ob > 0
        ce = torch.nn.functional.cross_entropy(y["cls"].permute(0, 2, 3, 1)[pos], cb[pos])
        l1 = (y["box"] - bb).abs().sum(1)[pos].mean()
        return torch.nn.functional.binary_cross_entropy(y["obj"][:, 0], ob) * 4 + ce + l1

    torch.manual_seed(0)
    model = Proposals()
    final = _train(model, batch, loss, STEPS["det_faceproposal"])
    xs, ls, bs = scenes("test", N_CALIB, seed=2)
    with torch.no_grad():
        y = model(torch.from_numpy(xs))
    to, tc, _ = _cell_targets(ls, bs)
    hit = (y["obj"][:, 0].numpy() > 0.5) & (y["cls"].argmax(1).numpy() == tc)
    false_pos = ((y["obj"][:, 0].numpy() > 0.5) & (to == 0)).sum() / len(xs)
    path = out / "det_faceproposal.pt2"
    _export_pt2(model, torch.zeros(2, 3, SCENE, SCENE), path)
    return {"file": path, "params": sum(p.numel() for p in model.parameters()), "layout": "NCHW",
            "input": "3x64x64", "calib": _npz(out / "det_faceproposal.npz", x=xs),
            "args": ["--output-kind", "box=regression"], "outputs": "obj (N,1,8,8), cls (N,10,8,8), box (N,4,8,8)",
            "task": f"digits found (obj > 0.5, right class) {hit.sum() / to.sum():.1%}, "
                    f"{false_pos:.2f} false cells per scene", "train_loss": final}


# ----------------------------------------------------------------------------- the U-Net


def build_unet(out: Path) -> dict[str, Any]:
    import torch

    class UNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.e1, self.e2, self.e3 = _conv(1, 16), _conv(16, 32, 2), _conv(32, 64, 2)
            self.up = torch.nn.Upsample(scale_factor=2, mode="nearest")
            self.d2, self.d1 = _conv(64 + 32, 32), _conv(32 + 16, 16)
            self.head = torch.nn.Conv2d(16, 11, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a = self.e1(x)
            b = self.e2(a)
            c = self.e3(b)
            d = self.d2(torch.cat([self.up(c), b], 1))
            return self.head(self.d1(torch.cat([self.up(d), a], 1)))

    def data(split: str) -> tuple[np.ndarray, np.ndarray]:
        x, y = _digits(split)
        img = np.pad(x, ((0, 0), (2, 2), (2, 2)))[:, None]
        masks = np.where(img[:, 0] > 0.3, y[:, None, None] + 1, 0).astype(np.int64)
        return img.astype(np.float32), masks

    x, masks = (torch.from_numpy(a) for a in data("train"))
    rng = np.random.default_rng(0)

    def batch(_step: int) -> tuple[Any, ...]:
        idx = torch.from_numpy(rng.integers(0, len(x), 32))
        return x[idx], masks[idx]

    def loss(m: Any, xb: Any, mb: Any) -> Any:
        return torch.nn.functional.cross_entropy(m(xb), mb)

    torch.manual_seed(0)
    model = UNet()
    final = _train(model, batch, loss, STEPS["unet_seg"])
    xs, ms = data("test")
    xs, ms = xs[:N_CALIB], ms[:N_CALIB]
    with torch.no_grad():
        pred = model(torch.from_numpy(xs)).argmax(1).numpy()
    ious = [((pred == c) & (ms == c)).sum() / max(1, ((pred == c) | (ms == c)).sum()) for c in range(11)]
    path = out / "unet_seg.pt2"
    _export_pt2(model, torch.zeros(2, 1, 32, 32), path)
    return {"file": path, "params": sum(p.numel() for p in model.parameters()), "layout": "NCHW",
            "input": "1x32x32", "calib": _npz(out / "unet_seg.npz", x=xs, masks=ms), "args": [],
            "outputs": "output (N,11,32,32)", "task": f"mIoU {np.mean(ious):.3f} (11 classes, test digits)",
            "train_loss": final}


# ----------------------------------------------------------------------------- the recognizer


def strings(split: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """N 32x128 lines of four digits side by side (each padded to 32x32): (x (N,1,32,128), labels (N,4))."""
    x, y = _digits(split)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), (n, 4))
    tiles = np.pad(x[idx], ((0, 0), (0, 0), (2, 2), (2, 2)))  # (n, 4, 32, 32)
    return np.concatenate(list(tiles.transpose(1, 0, 2, 3)), axis=2)[:, None].astype(np.float32), y[idx]


def build_crnn(out: Path) -> dict[str, Any]:
    import torch

    class Recognizer(torch.nn.Module):
        """Conv features, height collapsed to 1, a temporal conv stack, per-step scores (N, T=32, 11)."""

        def __init__(self) -> None:
            super().__init__()
            self.body = torch.nn.Sequential(_conv(1, 16), torch.nn.MaxPool2d(2), _conv(16, 32), torch.nn.MaxPool2d(2),
                                            _conv(32, 64), torch.nn.Conv2d(64, 64, (8, 1)), torch.nn.ReLU())
            self.seq = torch.nn.Sequential(torch.nn.Conv2d(64, 64, (1, 3), padding=(0, 1)), torch.nn.ReLU(),
                                           torch.nn.Conv2d(64, 64, (1, 3), padding=(0, 1)), torch.nn.ReLU())
            self.head = torch.nn.Conv2d(64, 11, 1)

        def forward(self, line: torch.Tensor) -> torch.Tensor:
            y = self.head(self.seq(self.body(line)))  # (N, 11, 1, 32)
            return y.flatten(2).permute(0, 2, 1)  # (N, 32, 11): blank is class 10

    x, labels = (torch.from_numpy(a) for a in strings("train", 4000, seed=3))
    rng = np.random.default_rng(0)
    ctc = torch.nn.CTCLoss(blank=10)

    def batch(_step: int) -> tuple[Any, ...]:
        idx = torch.from_numpy(rng.integers(0, len(x), 32))
        return x[idx], labels[idx]

    def loss(m: Any, xb: Any, lb: Any) -> Any:
        logp = m(xb).log_softmax(2).permute(1, 0, 2)  # (T, N, C)
        n = len(xb)
        return ctc(logp, lb, torch.full((n,), logp.shape[0], dtype=torch.long), torch.full((n,), 4, dtype=torch.long))

    torch.manual_seed(0)
    model = Recognizer()
    final = _train(model, batch, loss, STEPS["crnn_digits"])
    xs, ls = strings("test", N_CALIB, seed=4)
    with torch.no_grad():
        best = model(torch.from_numpy(xs)).argmax(2).numpy()
    right = sum(greedy(b) == list(t) for b, t in zip(best, ls, strict=True))
    path = out / "crnn_digits.pt2"
    _export_pt2(model, torch.zeros(2, 1, 32, 128), path)
    return {"file": path, "params": sum(p.numel() for p in model.parameters()), "layout": "NCHW",
            "input": "1x32x128", "calib": _npz(out / "crnn_digits.npz", x=xs), "args": [],
            "outputs": "output (N,32,11)", "task": f"4-digit strings read exactly (greedy CTC) {right / len(xs):.1%}",
            "train_loss": final}


def greedy(best: np.ndarray, blank: int = 10) -> list[int]:
    """Greedy CTC decoding of per-step argmaxes: repeats merged, blanks dropped."""
    out, prev = [], blank
    for s in best.tolist():
        if s != prev and s != blank:
            out.append(s)
        prev = s
    return out


# ----------------------------------------------------------------------------- the third-party ONNX


def build_east(out: Path) -> dict[str, Any]:
    import torch

    class East(torch.nn.Module):
        """EAST-style: features at stride 4, a score map (sigmoid) and 4 distances to the box edges per pixel."""

        def __init__(self) -> None:
            super().__init__()
            self.body = torch.nn.Sequential(_conv(3, 16, 2), _conv(16, 32, 2), _conv(32, 32))
            self.score, self.geo = torch.nn.Conv2d(32, 1, 1), torch.nn.Conv2d(32, 4, 1)

        def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            f = self.body(image)
            return torch.sigmoid(self.score(f)), torch.relu(self.geo(f))

    def targets(boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n, g = len(boxes), SCENE // 4
        score, geo = np.zeros((n, 1, g, g), np.float32), np.zeros((n, 4, g, g), np.float32)
        cy, cx = (np.mgrid[0:g, 0:g] * 4 + 2).astype(np.float32)
        for i in range(n):
            for x0, y0, x1, y1 in boxes[i]:
                inside = (cx >= x0) & (cx < x1) & (cy >= y0) & (cy < y1)
                score[i, 0][inside] = 1.0
                for k, d in enumerate((cx - x0, cy - y0, x1 - cx, y1 - cy)):
                    geo[i, k][inside] = d[inside] / 32.0
        return score, geo

    x, _, boxes = scenes("train", 4000, seed=5)
    score, geo = (torch.from_numpy(a) for a in targets(boxes))
    xt = torch.from_numpy(x)
    rng = np.random.default_rng(0)

    def batch(_step: int) -> tuple[Any, ...]:
        idx = torch.from_numpy(rng.integers(0, len(xt), 32))
        return xt[idx], score[idx], geo[idx]

    def loss(m: Any, xb: Any, sb: Any, gb: Any) -> Any:
        s, g = m(xb)
        return torch.nn.functional.binary_cross_entropy(s, sb) + ((g - gb).abs() * sb).sum() / sb.sum().clamp(min=1)

    torch.manual_seed(0)
    model = East().eval()
    final = _train(model, batch, loss, STEPS["east_dyn_onnx"])
    xs, _, bs = scenes("test", N_CALIB, seed=6)
    with torch.no_grad():
        s, _ = model(torch.from_numpy(xs))
    ts, _ = targets(bs)
    pred = s.numpy() > 0.5
    iou = (pred & (ts > 0)).sum() / max(1, (pred | (ts > 0)).sum())
    path = out / "east_dyn_onnx.onnx"
    dyn = {0: "batch", 2: "height", 3: "width"}
    torch.onnx.export(model, (torch.zeros(1, 3, SCENE, SCENE),), str(path), dynamo=False, opset_version=12,
                      input_names=["image"], output_names=["score", "geo"],
                      dynamic_axes={"image": dyn, "score": {0: "batch", 2: "h4", 3: "w4"},
                                    "geo": {0: "batch", 2: "h4", 3: "w4"}})
    return {"file": path, "params": sum(p.numel() for p in model.parameters()), "layout": "NCHW",
            "input": "3xHxW (dynamic; pinned 3x64x64)", "calib": _npz(out / "east_dyn_onnx.npz", x=xs),
            "args": ["--input-shape", "1,3,64,64", "--output-kind", "geo=regression"],
            "outputs": "score (N,1,H/4,W/4), geo (N,4,H/4,W/4)",
            "task": f"text-pixel IoU of the score map {iou:.3f}", "train_loss": final}


# ----------------------------------------------------------------------------- trained third-party: PP-OCR

WORDS = ("edge", "model", "invoice", "total", "station", "north", "river", "paper", "signal", "market", "garden",
         "window", "number", "street", "coffee", "ticket", "orange", "silver", "yellow", "summer", "winter", "camera",
         "receipt", "battery", "Monday", "Friday", "London", "Paris", "Berlin", "Open", "Exit", "Push", "Pull",
         "2024", "17:45", "No. 38", "EUR 12.50", "$4.99", "Platform 9", "Room 214")
OCR_FILES = {"ppocr_det": "ch_PP-OCRv4_det_infer.onnx", "ppocr_rec": "ch_PP-OCRv4_rec_infer.onnx",
             "ppocr_cls": "ch_ppocr_mobile_v2.0_cls_infer.onnx"}


OCR_WHEEL = "rapidocr_onnxruntime-1.4.4-py3-none-any.whl"
GET_OCR_WHEEL = "pip download --no-deps rapidocr-onnxruntime==1.4.4 -d bench/results/zoo/data"


def ocr_model(name: str) -> Path:
    """The trained .onnx inside the rapidocr-onnxruntime package (the `zoo` extra), found without importing it; or,
    where it is not installed, read out of its wheel (what `GET_OCR_WHEEL` leaves: $RAPIDOCR_WHEEL,
    bench/results/zoo/data/, /tmp/wh/ or the working folder) into bench/results/zoo/data/."""
    import importlib.util
    import os
    import zipfile

    spec = importlib.util.find_spec("rapidocr_onnxruntime")
    if spec is not None and spec.origin is not None:
        return Path(spec.origin).parent / "models" / OCR_FILES[name]
    data = Path(__file__).resolve().parent / "results" / "zoo" / "data"
    wheels = [Path(os.environ.get("RAPIDOCR_WHEEL", "")), *(d / OCR_WHEEL for d in (data, Path("/tmp/wh"), Path.cwd()))]
    wheel = next((w for w in wheels if w.is_file()), None)
    if wheel is None:
        raise SystemExit(f"rapidocr-onnxruntime is not installed: pip install -e '.[zoo]', or `{GET_OCR_WHEEL}`")
    out = data / OCR_FILES[name]
    if not out.is_file():
        data.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as z:
            out.write_bytes(z.read(f"rapidocr_onnxruntime/models/{OCR_FILES[name]}"))
    return out


def _line_text(rng: np.random.Generator) -> str:
    return " ".join(str(w) for w in rng.choice(WORDS, int(rng.integers(1, 4))))


def _render(text: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """TEXT in the default font at SIZE px, dark ink on a light, slightly coloured background: (h, w, 3) uint8 RGB,
    cropped to the ink with a small margin."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=size)
    x0, y0, x1, y1 = font.getbbox(text)
    pad = max(2, size // 6)
    bg = tuple(int(v) for v in rng.integers(200, 256, 3))
    ink = tuple(int(v) for v in rng.integers(0, 70, 3))
    img = Image.new("RGB", (x1 - x0 + 2 * pad, y1 - y0 + 2 * pad), bg)
    ImageDraw.Draw(img).text((pad - x0, pad - y0), text, font=font, fill=ink)
    return np.asarray(img)


def _line_tensor(rgb: np.ndarray, width: int, height: int = 48) -> np.ndarray:
    """PP-OCR's rec/cls preprocessing: BGR, resized to HEIGHT (aspect kept, width capped), (x/255-0.5)/0.5,
    zero-padded on the right to WIDTH: (3, HEIGHT, WIDTH) float32."""
    from PIL import Image

    h, w = rgb.shape[:2]
    nw = min(width, max(1, int(np.ceil(height * w / h))))
    img = np.asarray(Image.fromarray(rgb).resize((nw, height), Image.BILINEAR), np.float32)[:, :, ::-1]
    out = np.zeros((3, height, width), np.float32)
    out[:, :, :nw] = (img.transpose(2, 0, 1) / 255.0 - 0.5) / 0.5
    return out


def _ort(path: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: x[i:i + 16]})[0] for i in range(0, len(x), 16)])


def _ocr_record(path: Path, **kw: Any) -> dict[str, Any]:
    import onnx

    m = onnx.load(str(path))
    consts = [a.t for n in m.graph.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"]
    params = sum(int(np.prod(t.dims)) for t in (*m.graph.initializer, *consts))  # Paddle2ONNX: weights as Constant
    local = kw["calib"].with_suffix(".onnx")  # beside its .npz, so the recorded command names no site-packages
    shutil.copyfile(path, local)
    return {"file": local, "params": params, "layout": "NCHW", **kw}


def build_ppocr_det(out: Path) -> dict[str, Any]:
    """Pages of 320x320 with 3-6 lines of words at 14-30 px; DB's probability map (N,1,H,W) at full size."""
    from PIL import Image

    rng = np.random.default_rng(21)
    pages = np.zeros((N_CALIB, 320, 320, 3), np.uint8)
    boxes: list[list[tuple[int, int, int, int]]] = [[] for _ in range(N_CALIB)]
    for i in range(N_CALIB):
        pages[i] = rng.integers(215, 256, 3)  # a light, slightly coloured page
        y = int(rng.integers(4, 30))
        for _ in range(int(rng.integers(3, 7))):
            line = _render(_line_text(rng), int(rng.integers(14, 31)), rng)
            h, w = line.shape[:2]
            if w > 310:
                line = np.asarray(Image.fromarray(line).resize((310, h)))
                w = 310
            if y + h > 316:
                break
            x = int(rng.integers(2, 320 - w - 1))
            pages[i, y:y + h, x:x + w] = line
            boxes[i].append((x, y, x + w, y + h))
            y += h + int(rng.integers(4, 24))
    x = np.ascontiguousarray(pages[:, :, :, ::-1].transpose(0, 3, 1, 2))  # BGR, NCHW, uint8
    path = ocr_model("ppocr_det")
    mean, std = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)
    prob = _ort(path, ((x[:100] / np.float32(255) - mean[:, None, None]) / std[:, None, None]).astype(np.float32))
    found = prob[:, 0] > 0.3  # DB's binarisation threshold; it marks each line's shrunk core
    hits = [found[i, y0:y1, x0:x1].mean() > 0.25 for i in range(100) for x0, y0, x1, y1 in boxes[i]]
    return _ocr_record(path, input="3xHxW (dynamic; pinned 3x320x320)",
                       calib=_npz(out / "ppocr_det.npz", x=x),
                       args=["--input-shape", "1,3,320,320", "--mean", "0.485,0.456,0.406",
                             "--std", "0.229,0.224,0.225"],
                       task=f"lines found (> 1/4 of the line's box at p > 0.3) {np.mean(hits):.1%} of {len(hits)}; "
                            f"page marked {found.mean():.1%} (100 test pages)")


def _lines(n: int, seed: int, width: int, rotate: bool = False) -> tuple[np.ndarray, list[str]]:
    """N rendered lines as PP-OCR tensors; ROTATE: each line turned 180 degrees before preprocessing."""
    rng = np.random.default_rng(seed)
    texts = [_line_text(rng) for _ in range(n)]
    crops = [_render(t, int(rng.integers(20, 40)), rng) for t in texts]
    return np.stack([_line_tensor(c[::-1, ::-1] if rotate else c, width) for c in crops]), texts


def build_ppocr_rec(out: Path) -> dict[str, Any]:
    """Lines of 1-3 words, (N,3,48,320); CTC scores (N,40,6625) over PP-OCR's character list."""
    import onnx

    path = ocr_model("ppocr_rec")
    x, texts = _lines(N_CALIB, 22, 320)
    meta = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    chars = ["<blank>", *meta["character"].splitlines(), " "]
    best = _ort(path, x[:100]).argmax(2)
    read = ["".join(chars[c] for c in greedy(b, blank=0)) for b in best]
    right = sum(r.strip() == t for r, t in zip(read, texts[:100], strict=True))
    return _ocr_record(path, input="3x48xW (dynamic; pinned 3x48x320)",
                       calib=_npz(out / "ppocr_rec.npz", x=x), args=["--input-shape", "1,3,48,320"],
                       task=f"lines read exactly (greedy CTC) {right}% of 100")


def build_ppocr_cls(out: Path) -> dict[str, Any]:
    """Lines of 1-3 words and their 180-degree rotations (labels 0/1), (N,3,48,192); (N,2) scores."""
    path = ocr_model("ppocr_cls")
    xs = np.empty((N_CALIB, 3, 48, 192), np.float32)
    xs[0::2], xs[1::2] = _lines(N_CALIB // 2, 23, 192)[0], _lines(N_CALIB // 2, 23, 192, rotate=True)[0]
    y = np.tile([0, 1], N_CALIB // 2).astype(np.int64)
    acc = (_ort(path, xs[:200]).argmax(1) == y[:200]).mean()
    return _ocr_record(path, input="3x48x192 (dynamic; pinned)",
                       calib=_npz(out / "ppocr_cls.npz", x=xs, y=y), args=["--input-shape", "1,3,48,192"],
                       task=f"orientation accuracy {acc:.1%} (200 test lines, half rotated 180)")


BUILDERS = {"det_faceproposal": build_detector, "unet_seg": build_unet, "crnn_digits": build_crnn,
            "east_dyn_onnx": build_east, "ppocr_det": build_ppocr_det, "ppocr_rec": build_ppocr_rec,
            "ppocr_cls": build_ppocr_cls}


def build(name: str, out: Path) -> dict[str, Any]:
    """Build and train task model NAME into OUT; its build record (paths as Path objects)."""
    import torch

    torch.set_num_threads(2)
    if name.startswith("mtcnn_"):  # the trained MTCNN nets: bench/zoo_mtcnn.py, beside this file
        from zoo_mtcnn import build as build_mtcnn

        return build_mtcnn(name, out)
    if name.startswith("mp_"):  # MediaPipe's trained float .tflite graphs: bench/zoo_mediapipe.py
        from zoo_mediapipe import build as build_mediapipe

        return build_mediapipe(name, out)
    if name in ("digits_yolo", "yolov8n_320"):  # the YOLOv8 detectors: bench/zoo_detectors.py
        from zoo_detectors import build as build_detector

        return build_detector(name, out)
    return BUILDERS[name](out)
