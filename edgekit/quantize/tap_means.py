"""What each kernel tap of a 2-D convolution reads on average, and the mean output shift that follows from it: the
math bias correction shares between the TFLite route (edgekit.quantize.tflite.bias, NHWC) and the ONNX one
(edgekit.quantize.onnx.bias_correct, NCHW).

A convolution's output mean over samples and positions is sum over taps (a, b) and input channels c of
W[o, a, b, c] * E[x at tap (a, b), channel c], the expectation taken over the output positions: zero padding makes
a border tap read zeros part of the time, so its mean is below the channel's (on a 3x3 map with SAME padding a
corner tap of a 3x3 kernel reads 4 of the 9 positions). With the per-tap means, (W~ - W) . E[x] is exactly the
layer's mean output shift; with the channel mean it was 18% off on a 5x5 SAME depthwise over 16x16.
"""

from __future__ import annotations

import numpy as np

Span = tuple[int, int]  # (before, after) along one axis


def same_pads(size: int, k: int, stride: int, dilation: int, lower: bool = False) -> Span:
    """SAME padding of an axis of SIZE: the output is ceil(SIZE / STRIDE); the odd pad goes after (TFLite's SAME,
    ONNX's SAME_UPPER) or before (ONNX's SAME_LOWER)."""
    out = -(-size // stride)
    pad = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    small = pad // 2
    return (pad - small, small) if lower else (small, pad - small)


def tap_means(total: np.ndarray, samples: int, kernel: Span, strides: Span, dilations: Span,
              pads: tuple[Span, Span]) -> np.ndarray | None:
    """[kh, kw, C]: what each kernel tap reads, averaged over the output positions and SAMPLES, from TOTAL, the
    input summed over the samples ([H, W, C]), with PADS ((top, bottom), (left, right)) of zeros; None where no
    output position exists."""
    if total.ndim != 3:
        return None
    (h, w, c), (kh, kw), (sh, sw), (dh, dw) = total.shape, kernel, strides, dilations
    (pt, pb), (pl, pr) = pads
    ho, wo = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1, (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    if ho < 1 or wo < 1 or samples < 1:
        return None
    padded = np.pad(total, ((pt, pb), (pl, pr), (0, 0)))
    out = np.empty((kh, kw, c))
    for a in range(kh):
        for b in range(kw):
            out[a, b] = padded[a * dh:a * dh + (ho - 1) * sh + 1:sh, b * dw:b * dw + (wo - 1) * sw + 1:sw].sum((0, 1))
    return out / (samples * ho * wo)


def conv_shift(dw: np.ndarray, taps: np.ndarray) -> np.ndarray | None:
    """(W~ - W) . E[x] per output channel of a (grouped) convolution: DW = W~ - W as [Cout, kh, kw, Cin / groups],
    TAPS the per-tap means [kh, kw, C]; output channel o reads the input channels of its group. None where the
    shapes do not fit."""
    if dw.ndim != 4 or taps.ndim != 3 or taps.shape[:2] != dw.shape[1:3]:
        return None
    c, cout, cin_g = taps.shape[2], dw.shape[0], dw.shape[-1]
    if c % cin_g or cout % (c // cin_g):
        return None
    groups = c // cin_g
    per_out = taps.reshape(*taps.shape[:2], groups, cin_g)[:, :, np.arange(cout) // (cout // groups)]
    return np.einsum("ohwc,hwoc->o", dw, per_out)


__all__ = ["conv_shift", "same_pads", "tap_means"]
