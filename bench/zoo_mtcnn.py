"""The zoo's trained MTCNN (issue 27): P-Net, R-Net and O-Net with facenet-pytorch's trained weights, on real photos.

Why: a trained face-detector cascade is what edge users convert, and its heads test edgekit's output-kind
decisions: P-Net's (N,4,H,W) box map beside its (N,2,H,W) face probabilities, R-Net's and O-Net's (N,4) boxes and
O-Net's (N,10) landmarks beside their (N,2) softmax. None is a class score; each is judged as a regression (the
sibling rule of edgekit.fidelity.decide: the outputs are unnamed, as facenet-pytorch returns them).

The weights are the state dicts inside the facenet-pytorch wheel (facenet_pytorch/data/{pnet,rnet,onet}.pt), read
with zipfile and `torch.load(weights_only=True)`; the package itself is never imported (it imports torchvision,
which cannot load beside the CPU torch here). The nets are defined below in plain torch with facenet-pytorch's
module names (models/mtcnn.py, 2.6.0), so the state dicts load strictly. Nothing is downloaded at run time: the
wheel is looked for where `pip download` leaves it (see `weights_source`), or an installed copy's data folder.

Inputs are crops of scikit-image's sample photos, normalised as MTCNN does ((x - 127.5) / 128, RGB, NCHW):
- R-Net (24x24) and O-Net (48x48): the astronaut's face (found by O-Net itself over a grid of square boxes) with
  shifts and scales, scikit-image's LFW subset (100 faces, 100 non-faces, 25x25 grey), and random crops of the
  other photos (coffee, cat, rocket, Hubble field, tissue stain) as negatives: half faces, half not;
- P-Net (64x64): scenes cut from the photos at scales where the astronaut's face is 12-40 px, and others.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

N_CALIB = 400
PNET_SIZE = 64
WHEEL_GLOB = "facenet_pytorch-*.whl"
GET_WHEEL = "pip download --no-deps facenet-pytorch -d bench/results/zoo/data"
NEGATIVE_PHOTOS = ("coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry", "camera")


# ----------------------------------------------------------------------------- the weights


def weights_source() -> Path:
    """The facenet-pytorch wheel (or installed package folder) holding data/{pnet,rnet,onet}.pt.

    Looked for, in order: $FACENET_PYTORCH_WHEEL, bench/results/zoo/data/, /tmp/pk/ and the working folder
    (where `pip download` leaves it), then an installed facenet_pytorch (found without importing it).
    """
    from zoo_models import RESULTS

    env = os.environ.get("FACENET_PYTORCH_WHEEL")
    if env and Path(env).is_file():
        return Path(env)
    for folder in (RESULTS / "data", Path("/tmp/pk"), Path.cwd()):
        found = sorted(glob.glob(str(folder / WHEEL_GLOB)))
        if found:
            return Path(found[-1])
    spec = importlib.util.find_spec("facenet_pytorch")  # locates the package; runs none of its code
    if spec is not None and spec.submodule_search_locations:
        data = Path(next(iter(spec.submodule_search_locations))) / "data"
        if (data / "onet.pt").is_file():
            return data
    raise SystemExit(f"MTCNN weights: no facenet-pytorch wheel found; get it with `{GET_WHEEL}` "
                     "(only its data/*.pt state dicts are read; the package is not imported)")


def state_dict(net: str) -> dict[str, Any]:
    """NET's ('pnet', 'rnet', 'onet') trained state dict, read straight out of the wheel: weights only."""
    import io

    import torch

    src = weights_source()
    if src.is_dir():
        return torch.load(src / f"{net}.pt", weights_only=True, map_location="cpu")
    with zipfile.ZipFile(src) as z:
        return torch.load(io.BytesIO(z.read(f"facenet_pytorch/data/{net}.pt")), weights_only=True,
                          map_location="cpu")


def nets() -> dict[str, Any]:
    """The three trained nets, eval mode, by name. Defined here, as facenet-pytorch defines them."""
    import torch
    from torch import nn

    class PNet(nn.Module):
        """Fully convolutional proposal net: (box offsets (N,4,H',W'), face probability (N,2,H',W'))."""

        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.prelu1 = nn.Conv2d(3, 10, 3), nn.PReLU(10)
            self.pool1 = nn.MaxPool2d(2, 2, ceil_mode=True)
            self.conv2, self.prelu2 = nn.Conv2d(10, 16, 3), nn.PReLU(16)
            self.conv3, self.prelu3 = nn.Conv2d(16, 32, 3), nn.PReLU(32)
            self.conv4_1, self.softmax4_1 = nn.Conv2d(32, 2, 1), nn.Softmax(dim=1)
            self.conv4_2 = nn.Conv2d(32, 4, 1)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            x = self.pool1(self.prelu1(self.conv1(x)))
            x = self.prelu3(self.conv3(self.prelu2(self.conv2(x))))
            return self.conv4_2(x), self.softmax4_1(self.conv4_1(x))

    class RNet(nn.Module):
        """Refinement net on 24x24 crops: (box offsets (N,4), face probability (N,2))."""

        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.prelu1 = nn.Conv2d(3, 28, 3), nn.PReLU(28)
            self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv2, self.prelu2 = nn.Conv2d(28, 48, 3), nn.PReLU(48)
            self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv3, self.prelu3 = nn.Conv2d(48, 64, 2), nn.PReLU(64)
            self.dense4, self.prelu4 = nn.Linear(576, 128), nn.PReLU(128)
            self.dense5_1, self.softmax5_1 = nn.Linear(128, 2), nn.Softmax(dim=1)
            self.dense5_2 = nn.Linear(128, 4)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            x = self.pool1(self.prelu1(self.conv1(x)))
            x = self.pool2(self.prelu2(self.conv2(x)))
            x = self.prelu3(self.conv3(x))
            x = x.permute(0, 3, 2, 1).contiguous()  # the Caffe original's W-major flatten
            x = self.prelu4(self.dense4(x.view(x.shape[0], -1)))
            return self.dense5_2(x), self.softmax5_1(self.dense5_1(x))

    class ONet(nn.Module):
        """Output net on 48x48 crops: (box offsets (N,4), landmarks (N,10), face probability (N,2))."""

        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.prelu1 = nn.Conv2d(3, 32, 3), nn.PReLU(32)
            self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv2, self.prelu2 = nn.Conv2d(32, 64, 3), nn.PReLU(64)
            self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv3, self.prelu3 = nn.Conv2d(64, 64, 3), nn.PReLU(64)
            self.pool3 = nn.MaxPool2d(2, 2, ceil_mode=True)
            self.conv4, self.prelu4 = nn.Conv2d(64, 128, 2), nn.PReLU(128)
            self.dense5, self.prelu5 = nn.Linear(1152, 256), nn.PReLU(256)
            self.dense6_1, self.softmax6_1 = nn.Linear(256, 2), nn.Softmax(dim=1)
            self.dense6_2, self.dense6_3 = nn.Linear(256, 4), nn.Linear(256, 10)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            x = self.pool1(self.prelu1(self.conv1(x)))
            x = self.pool2(self.prelu2(self.conv2(x)))
            x = self.pool3(self.prelu3(self.conv3(x)))
            x = self.prelu4(self.conv4(x))
            x = x.permute(0, 3, 2, 1).contiguous()
            x = self.prelu5(self.dense5(x.view(x.shape[0], -1)))
            return self.dense6_2(x), self.dense6_3(x), self.softmax6_1(self.dense6_1(x))

    out = {}
    for name, cls in (("pnet", PNet), ("rnet", RNet), ("onet", ONet)):
        net = cls()
        net.load_state_dict(state_dict(name), strict=True)
        out[name] = net.eval()
    return out


# ----------------------------------------------------------------------------- the inputs


def normalise(rgb: np.ndarray) -> np.ndarray:
    """uint8 (N,H,W,3) RGB -> MTCNN's input: float32 (N,3,H,W), (x - 127.5) * 0.0078125."""
    return ((rgb.astype(np.float32) - 127.5) * 0.0078125).transpose(0, 3, 1, 2).copy()


def _photo(name: str) -> np.ndarray:
    import skimage.data

    a = getattr(skimage.data, name)()
    if a.ndim == 2:
        a = np.repeat(a[..., None], 3, axis=2)
    return np.ascontiguousarray(a[..., :3])


def _crop(img: np.ndarray, box: tuple[float, float, float, float], size: int) -> np.ndarray:
    """The square-ish BOX (x0, y0, x1, y1; may run off the image: zero-padded, as MTCNN pads) resized to SIZE."""
    from PIL import Image

    x0, y0, x1, y1 = (int(round(v)) for v in box)
    h, w = img.shape[:2]
    canvas = np.zeros((y1 - y0, x1 - x0, 3), np.uint8)
    sx0, sy0, sx1, sy1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    if sx1 > sx0 and sy1 > sy0:
        canvas[sy0 - y0:sy1 - y0, sx0 - x0:sx1 - x0] = img[sy0:sy1, sx0:sx1]
    return np.asarray(Image.fromarray(canvas).resize((size, size), Image.Resampling.BILINEAR))


def astronaut_face(onet: Any) -> tuple[tuple[float, float, float, float], float]:
    """The astronaut's face box (x0, y0, x1, y1) and O-Net's face probability there: the best of a grid of square
    boxes (sides 100, 140, 180 px, stride 16), refined once by O-Net's own box regression."""
    import torch

    img = _photo("astronaut")
    boxes = [(x, y, x + s, y + s) for s in (100, 140, 180) for y in range(0, 512 - s + 1, 16)
             for x in range(0, 512 - s + 1, 16)]
    crops = normalise(np.stack([_crop(img, b, 48) for b in boxes]))
    with torch.no_grad():  # in batches: 2,000 crops at once would hold GBs of activations
        parts = [onet(torch.from_numpy(crops[i:i + 256])) for i in range(0, len(crops), 256)]
    reg, prob = (np.concatenate([p[j].numpy() for p in parts]) for j in (0, 2))
    k = int(np.argmax(prob[:, 1]))
    x0, y0, x1, y1 = boxes[k]
    s = x1 - x0
    refined = (x0 + reg[k, 0] * s, y0 + reg[k, 1] * s, x1 + reg[k, 2] * s, y1 + reg[k, 3] * s)
    side = max(refined[2] - refined[0], refined[3] - refined[1])  # squared, as MTCNN's rerec
    cx, cy = (refined[0] + refined[2]) / 2, (refined[1] + refined[3]) / 2
    return (cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2), float(prob[k, 1])


def crops(size: int, face: tuple[float, float, float, float], n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """N uint8 (size, size, 3) crops and labels (1 face, 0 not): half faces (the astronaut's, shifted and scaled;
    LFW faces), half not (LFW non-faces, random boxes of the other photos and of the astronaut away from her face)."""
    import skimage.data
    from PIL import Image

    rng = np.random.default_rng(seed)
    astro = _photo("astronaut")
    lfw = skimage.data.lfw_subset()  # 100 faces then 100 non-faces, 25x25 grey in [0, 1]
    lfw_rgb = np.repeat(np.clip(lfw * 255, 0, 255).astype(np.uint8)[..., None], 3, axis=3)
    photos = [_photo(p) for p in NEGATIVE_PHOTOS] + [astro]
    out, labels = [], []
    x0, y0, x1, y1 = face
    side = x1 - x0
    for i in range(n):
        if i % 2 == 0 and rng.random() < 0.5:  # a face: the astronaut's, jittered as P-Net's proposals are
            s = side * rng.uniform(0.85, 1.2)
            cx, cy = (x0 + x1) / 2 + rng.uniform(-0.12, 0.12) * side, (y0 + y1) / 2 + rng.uniform(-0.12, 0.12) * side
            out.append(_crop(astro, (cx - s / 2, cy - s / 2, cx + s / 2, cy + s / 2), size))
            labels.append(1)
        elif i % 2 == 0:  # an LFW face
            out.append(np.asarray(Image.fromarray(lfw_rgb[rng.integers(0, 100)]).resize((size, size),
                                                                                        Image.Resampling.BILINEAR)))
            labels.append(1)
        elif rng.random() < 0.25:  # an LFW non-face
            out.append(np.asarray(Image.fromarray(lfw_rgb[rng.integers(100, 200)]).resize((size, size),
                                                                                          Image.Resampling.BILINEAR)))
            labels.append(0)
        else:  # a random box of a photo, never the astronaut's face
            img = photos[rng.integers(len(photos))]
            h, w = img.shape[:2]
            while True:
                s = rng.uniform(24, min(h, w) * 0.6)
                bx, by = rng.uniform(0, w - s), rng.uniform(0, h - s)
                if img is not astro or bx + s < x0 or bx > x1 or by + s < y0 or by > y1:
                    break
            out.append(_crop(img, (bx, by, bx + s, by + s), size))
            labels.append(0)
    return np.stack(out), np.asarray(labels, np.int64)


def scenes(face: tuple[float, float, float, float], n: int, seed: int) -> np.ndarray:
    """N uint8 PNET_SIZE^2 scenes: the astronaut scaled so her face is 12-40 px (P-Net's pyramid), half of them,
    and windows of the other photos at random scales."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    astro = _photo("astronaut")
    others = [_photo(p) for p in NEGATIVE_PHOTOS]
    side = face[2] - face[0]
    out = []
    for i in range(n):
        if i % 2 == 0:
            scale = rng.uniform(12, 40) / side
            img = astro
            fx, fy = (face[0] + face[2]) / 2 * scale, (face[1] + face[3]) / 2 * scale
        else:
            img = others[rng.integers(len(others))]
            scale = rng.uniform(PNET_SIZE / min(img.shape[:2]), 0.5)
            fx = fy = None
        h, w = int(img.shape[0] * scale), int(img.shape[1] * scale)
        small = np.asarray(Image.fromarray(img).resize((max(w, PNET_SIZE), max(h, PNET_SIZE)),
                                                       Image.Resampling.BILINEAR))
        h, w = small.shape[:2]
        if fx is not None:  # a window holding the face
            x = int(np.clip(fx - rng.uniform(10, PNET_SIZE - 10), 0, w - PNET_SIZE))
            y = int(np.clip(fy - rng.uniform(10, PNET_SIZE - 10), 0, h - PNET_SIZE))
        else:
            x, y = int(rng.integers(0, w - PNET_SIZE + 1)), int(rng.integers(0, h - PNET_SIZE + 1))
        out.append(small[y:y + PNET_SIZE, x:x + PNET_SIZE])
    return np.stack(out)


# ----------------------------------------------------------------------------- the zoo rows


def _export(model: Any, shape: tuple[int, ...], path: Path) -> None:
    """A static-shape .pt2 (MTCNN's R-/O-Net crops are fixed; P-Net is exported at one pyramid size)."""
    import torch

    torch.export.save(torch.export.export(model, (torch.zeros(*shape),)), path)


def build(name: str, out: Path) -> dict[str, Any]:
    """Zoo row NAME (mtcnn_pnet | mtcnn_rnet | mtcnn_onet): its .pt2, calibration .npz and build record."""
    import torch

    torch.set_num_threads(2)
    m = nets()
    face, face_p = astronaut_face(m["onet"])
    net = name.removeprefix("mtcnn_")
    params = sum(p.numel() for p in m[net].parameters())
    path = out / f"{name}.pt2"
    calib = out / f"{name}.npz"
    where = f"facenet-pytorch weights from {weights_source().name}; astronaut face box " \
            f"{tuple(round(v) for v in face)} (O-Net p={face_p:.3f})"
    if net == "pnet":
        x = normalise(scenes(face, N_CALIB, seed=31))
        _export(m[net], (1, 3, PNET_SIZE, PNET_SIZE), path)
        with torch.no_grad():
            prob = m[net](torch.from_numpy(x))[1].numpy()[:, 1]
        faces, others = prob[0::2].max(axis=(1, 2)), prob[1::2].max(axis=(1, 2))
        task = (f"scenes with the face where some cell has p(face) > 0.6: {np.mean(faces > 0.6):.0%}; "
                f"scenes without: {np.mean(others > 0.6):.0%} (P-Net proposes; R-Net and O-Net prune)")
        np.savez(calib, x=x)
        shape, outputs = f"3x{PNET_SIZE}x{PNET_SIZE}", "box (N,4,27,27), prob (N,2,27,27) (unnamed: output_0, 1)"
    else:
        size = 24 if net == "rnet" else 48
        img, y = crops(size, face, N_CALIB, seed=32 if net == "rnet" else 33)
        x = normalise(img)
        _export(m[net], (1, 3, size, size), path)
        with torch.no_grad():
            prob = m[net](torch.from_numpy(x))[-1].numpy()
        acc = float(np.mean((prob[:, 1] > 0.5) == (y == 1)))
        task = f"face / not face at p > 0.5: {acc:.1%} of {len(y)} crops ({int(y.sum())} faces)"
        np.savez(calib, x=x)  # no y: the (N,2) head is one of several outputs; its accuracy is the build's
        shape = f"3x{size}x{size}"
        outputs = "box (N,4), prob (N,2)" if net == "rnet" else "box (N,4), landmarks (N,10), prob (N,2)"
    return {"file": path, "params": params, "layout": "NCHW", "input": shape, "calib": calib, "args": [],
            "outputs": outputs, "task": task, "weights": where}


__all__ = ["build", "nets", "normalise", "state_dict", "weights_source"]
