"""A small ncnn model written by hand, the way pnnx writes one: its .param text and a .bin of tagged weights."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

# conv 3x3 (1 -> 4, bias) -> ReLU -> max pool 2 -> flatten -> inner product (4*13*13 -> 10, bias), on 1x28x28
PARAM = """7767517
6 6
Input                    in0                      0 1 in0
Convolution              conv_0                   1 1 in0 1 0=4 1=3 11=3 12=1 13=1 14=0 2=1 3=1 4=0 5=1 6=36
ReLU                     relu_0                   1 1 1 2
Pooling                  pool_0                   1 1 2 3 0=0 1=2 11=2 12=2 13=0 2=2 3=0 5=1
Flatten                  flatten_0                1 1 3 4
InnerProduct             fc_0                     1 1 4 out0 0=10 1=1 2=6760
"""
FP16_TAG = 0x01306B47


def weights_bytes(fp16: bool) -> bytes:
    """The .bin for PARAM: each layer's weights (tagged) then its bias (raw float32), in .param order."""
    rng = np.random.default_rng(0)
    out = b""
    for count, bias in ((36, 4), (6760, 10)):
        w = rng.standard_normal(count).astype(np.float32) * 0.1
        if fp16:
            data = w.astype(np.float16).tobytes()
            out += struct.pack("<I", FP16_TAG) + data + b"\0" * (-len(data) % 4)
        else:
            out += struct.pack("<I", 0) + w.tobytes()
        out += rng.standard_normal(bias).astype(np.float32).tobytes()
    return out


def write_model(folder: Path, fp16: bool = False, param: str = PARAM) -> Path:
    """FOLDER/m.ncnn.param (its input shape and the source's names written, as the ncnn target writes it) and
    m.ncnn.bin; the .param's path."""
    from edgekit.ncnn.param import rename

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "m.ncnn.param"
    path.write_text(rename(param, {"in0": "image", "out0": "logits"}, {"image": [1, 1, 28, 28]}))
    (folder / "m.ncnn.bin").write_bytes(weights_bytes(fp16))
    return path


def forward(x: np.ndarray) -> np.ndarray:
    """The tiny model's outputs for X (N, 1, 28, 28) in numpy: the ground truth the ncnn runtime is held to."""
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal(36).astype(np.float32) * 0.1).reshape(4, 1, 3, 3)
    b1 = rng.standard_normal(4).astype(np.float32)
    w2 = (rng.standard_normal(6760).astype(np.float32) * 0.1).reshape(10, 676)
    b2 = rng.standard_normal(10).astype(np.float32)
    windows = np.lib.stride_tricks.sliding_window_view(x[:, 0], (3, 3), axis=(1, 2))  # N, 26, 26, 3, 3
    y = np.maximum(np.einsum("nhwij,oij->nohw", windows, w1[:, 0]) + b1[None, :, None, None], 0)
    y = y.reshape(len(x), 4, 13, 2, 13, 2).max(axis=(3, 5))
    return y.reshape(len(x), -1) @ w2.T + b2
