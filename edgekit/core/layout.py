"""Which axis of an image tensor holds the channels, guessed from its shape when nothing says so.

ONNX sources and profiled artifacts often carry no layout; calibration and sample loading still
need to know NCHW from NHWC to feed images the right way round. The rule is one, so it lives here:
a last axis of 1, 3 or 4 with a second axis that is not is channels-last; anything else is
channels-first (PyTorch's and ONNX's default). A leaf module: it imports nothing from edgekit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_CHANNEL_COUNTS = (1, 3, 4)  # grey, RGB, RGBA


def guess_layout(shape: Sequence[int]) -> str:
    """NCHW or NHWC for a 4-D shape; "NC" for 2-D; "<rank>D" otherwise."""
    if len(shape) != 4:
        return "NC" if len(shape) == 2 else f"{len(shape)}D"
    c_first, c_last = shape[1], shape[3]
    if c_last in _CHANNEL_COUNTS and c_first not in _CHANNEL_COUNTS:
        return "NHWC"
    return "NCHW"


def to_layout(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """The 4-D batch X, in layout SRC (NCHW or NHWC), in layout DST; anything else as it is."""
    if x.ndim != 4 or src == dst:
        return x
    if (src, dst) == ("NCHW", "NHWC"):
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    if (src, dst) == ("NHWC", "NCHW"):
        return np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    raise ValueError(f"unknown layouts {src} -> {dst}")


__all__ = ["guess_layout", "to_layout"]
