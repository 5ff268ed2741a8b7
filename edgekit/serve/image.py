"""A JPEG or PNG picture to the model's input, as the manifest's `preprocessing` says; top-k from the output.

The same steps edgekit's calibration applied when the model was converted and validated (EXIF
orientation, colour mode, bilinear resize to the input's H x W, x * scale, (x - mean) / std), then
the artifact's own layout (NCHW / NHWC, from its input spec). The pixel count is read from the
header and checked against the budget before a single pixel is decoded (decompression bombs).
/detect (edgekit.serve.detect) opens pictures and makes inputs with the same functions, with a letterbox
in place of the plain resize.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from edgekit.core.artifact import Preprocessing, TensorSpec
from edgekit.core.layout import guess_layout
from edgekit.serve.errors import RequestError, bad_request

FORMATS = ("JPEG", "PNG")


def _geometry(spec: TensorSpec) -> tuple[str, int, int, int]:
    """(layout, channels, H, W) of an image input; 400 for an input that is not an image."""
    shape = list(spec.shape)
    if len(shape) == 3:
        return "NHW", 1, shape[1], shape[2]
    if len(shape) != 4:
        raise bad_request(f"input '{spec.name}' of shape {shape} is not an image: use /infer.", "model")
    layout = (spec.layout or guess_layout(shape)).upper()
    c, h, w = (shape[1], shape[2], shape[3]) if layout == "NCHW" else (shape[3], shape[1], shape[2])
    if c not in (1, 3) or h <= 0 or w <= 0:
        raise bad_request(f"input '{spec.name}' of shape {shape} is not a 1- or 3-channel image of known size.",
                          "model")
    return layout, c, h, w


def default_preprocessing(spec: TensorSpec) -> Preprocessing:
    """Without a manifest: pixels scaled to [0, 1], no mean/std (edgekit's calibration default)."""
    _, c, h, w = _geometry(spec)
    return Preprocessing(color="L" if c == 1 else "RGB", size=[h, w])


def open_picture(data: bytes, color: str, max_pixels: int) -> Any:
    """DATA (JPEG/PNG bytes) decoded to a Pillow image in COLOR ("L" or "RGB"), EXIF orientation applied.

    The one place a picture is opened (/classify and /detect): the pixel count is checked against
    MAX_PIXELS from the header before anything is decoded; 415 for what is not a JPEG/PNG, 413 over the
    budget, 400 for a file that breaks while decoding."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        im = Image.open(io.BytesIO(data), formats=FORMATS)
    except UnidentifiedImageError:
        raise RequestError(415, "the body is not a JPEG or PNG image.", "body") from None
    except Image.DecompressionBombError as exc:  # Pillow refuses over 2x its limit while opening (issue 12's fuzz)
        raise RequestError(413, f"the image is too large to decode: {exc}", "body") from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise bad_request(f"cannot read the image: {exc}.", "body") from None
    with im:
        pixels = im.size[0] * im.size[1]
        if pixels > max_pixels:
            raise RequestError(413, f"the image is {im.size[0]}x{im.size[1]} ({pixels / 1e6:.1f} MP); at most "
                               f"{max_pixels / 1e6:g} MP are decoded (--max-image-mpix).", "body")
        try:
            out = ImageOps.exif_transpose(im).convert(color)
            out.load()
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            raise bad_request(f"cannot decode the image: {exc}.", "body") from None
    return out


def resize(im: Any, w: int, h: int) -> np.ndarray:
    """IM resized to W x H as calibration resized (bilinear), as float32 (H, W[, C]) pixel values 0..255."""
    from PIL import Image

    try:
        return np.asarray(im.resize((w, h), Image.Resampling.BILINEAR), dtype=np.float32)
    except (OSError, ValueError) as exc:
        raise bad_request(f"cannot decode the image: {exc}.", "body") from None


def to_input(arr: np.ndarray, spec: TensorSpec, pre: Preprocessing | None) -> np.ndarray:
    """Pixel values ARR (H, W[, C], 0..255, already at the input's size) as a float32 batch of one for SPEC:
    x * scale, (x - mean) / std as PRE says (pixels/255 without it), then the artifact's layout."""
    layout, c, h, w = _geometry(spec)
    pre = pre or default_preprocessing(spec)
    x = arr.astype(np.float32) * np.float32(pre.scale)
    if pre.mean is not None or pre.std is not None:
        mean = np.asarray(pre.mean or [0.0], dtype=np.float32)
        std = np.asarray(pre.std or [1.0], dtype=np.float32)
        x = (x.reshape(h, w, -1) - mean) / std
    x = x.reshape(h, w, c)
    if layout == "NCHW":
        x = x.transpose(2, 0, 1)
    elif layout == "NHW":
        x = x[..., 0]
    return np.ascontiguousarray(x[None], dtype=np.float32)


def color_of(spec: TensorSpec) -> str:
    """The Pillow mode a picture is converted to for SPEC: "L" for one channel, "RGB" for three."""
    return "L" if _geometry(spec)[1] == 1 else "RGB"


def input_size(spec: TensorSpec) -> tuple[int, int]:
    """(H, W) of an image input; 400 for an input that is not an image."""
    _, _, h, w = _geometry(spec)
    return h, w


def image_input(data: bytes, spec: TensorSpec, pre: Preprocessing | None, max_pixels: int) -> np.ndarray:
    """DATA (JPEG/PNG bytes) as a float32 batch of one for SPEC; 413 over MAX_PIXELS, 415/400 otherwise."""
    h, w = input_size(spec)
    with open_picture(data, color_of(spec), max_pixels) as im:
        arr = resize(im, w, h)
    return to_input(arr, spec, pre)


def top_k(scores: np.ndarray, k: int, labels: list[str] | None) -> dict[str, Any]:
    """The K best classes of a (1, classes) output: index, label, score; softmax applied to logits."""
    v = np.asarray(scores, dtype=np.float64).reshape(-1)
    probabilities = bool(v.size) and v.min() >= 0 and abs(v.sum() - 1.0) < 1e-3
    if not probabilities:
        e = np.exp(v - v.max())
        v = e / e.sum()
    k = max(1, min(k, v.size))
    order = np.argsort(-v, kind="stable")[:k]
    preds = [{"index": int(i), "label": labels[i] if labels and i < len(labels) else str(int(i)),
              "score": round(float(v[i]), 6)} for i in order]
    return {"predictions": preds, "scores": "probabilities" if probabilities else "softmax of the logits"}


__all__ = ["color_of", "default_preprocessing", "image_input", "input_size", "open_picture", "resize", "to_input",
           "top_k"]
