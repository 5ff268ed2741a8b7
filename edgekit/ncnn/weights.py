"""The ncnn .bin beside a .param: which layer's weights are where, and in what precision.

The .bin is the weights of the layers in .param order, each array as ncnn's `ModelBin::load(n, type)` reads
it: type 1 is n raw float32; type 0 starts with a 4-byte tag: 0x01306B47 fp16 (n halves, padded to 4 bytes),
0x000D4B38 int8 (n bytes, padded), 0x0002C056 or 0 float32, anything else a 256-entry float table and n
uint8 indices. Which arrays a layer loads is ncnn's layer code; the layers pnnx writes are listed below. A
layer with weights that is not listed ends the walk (what was read is kept, the rest of the file is reported
as unread), so the figures are never guessed.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from edgekit.ncnn.param import Layer

TAG_FP16 = 0x01306B47
TAG_INT8 = 0x000D4B38
TAG_FP32_EXTRA = 0x0002C056

# layers that load nothing (their parameters are all in the .param)
NO_WEIGHTS = frozenset((
    "Input", "ReLU", "Pooling", "Pooling1D", "Pooling3D", "Split", "Concat", "Reshape", "Flatten", "BinaryOp",
    "Eltwise", "Sigmoid", "Swish", "HardSwish", "HardSigmoid", "Clip", "Softmax", "Permute", "Slice", "Crop",
    "Interp", "Padding", "UnaryOp", "Dropout", "Noop", "TanH", "ELU", "GELU", "Mish", "Squeeze", "ExpandDims",
    "Reduction", "ShuffleChannel", "PixelShuffle", "Cast", "Tile", "Packing", "Exp", "Log", "Power", "AbsVal",
    "Threshold", "Erf", "SELU", "CELU", "Shrink", "Flip", "Fold", "Unfold", "MatMul", "CopyTo", "Diag",
    "CumulativeSum", "ArgMax",
))


@dataclass
class WeightReport:
    """What the walk of a .bin found."""

    by_dtype: dict[str, dict[str, int]] = field(default_factory=dict)  # dtype -> {"count", "bytes"}
    by_layer: dict[str, int] = field(default_factory=dict)  # layer name -> bytes it loads
    read_bytes: int = 0
    file_bytes: int = 0
    stopped_at: str | None = None  # "Type name" of the layer the walk could not read past; None: read to its end

    @property
    def complete(self) -> bool:
        return self.stopped_at is None and self.read_bytes == self.file_bytes

    def add(self, layer: str, dtype: str, count: int, nbytes: int) -> None:
        row = self.by_dtype.setdefault(dtype, {"count": 0, "bytes": 0})
        row["count"] += count
        row["bytes"] += nbytes
        self.by_layer[layer] = self.by_layer.get(layer, 0) + nbytes
        self.read_bytes += nbytes


def _arrays(layer: Layer) -> list[tuple[int, int]] | None:
    """(count, type) of each array LAYER loads, in order (type 0 tagged, 1 raw float32); None: not known here."""
    p, t = layer.int_param, layer.type
    if t in ("Convolution", "ConvolutionDepthWise", "Deconvolution", "DeconvolutionDepthWise", "Convolution1D",
             "Convolution3D", "ConvolutionDepthWise1D", "ConvolutionDepthWise3D", "Deconvolution1D",
             "Deconvolution3D"):
        if p(8):  # int8_scale_term: scales follow, in a layout per layer type: not walked
            return None
        return [(p(6), 0), *([(p(0), 1)] if p(5) else [])]
    if t == "InnerProduct":
        if p(8):
            return None
        return [(p(2), 0), *([(p(0), 1)] if p(1) else [])]
    if t == "BatchNorm":
        return [(p(0), 1)] * 4
    if t == "Scale":
        n = p(0)
        return [] if n == -233 else [(n, 1), *([(n, 1)] if p(1) else [])]
    if t == "PReLU":
        return [(p(0), 1)]
    if t == "LayerNorm":
        return [(p(0), 1)] * 2 if p(2) else []
    if t == "GroupNorm":
        return [(p(1), 1)] * 2 if p(3) else []
    if t == "InstanceNorm":
        return [(p(0), 1)] * 2 if p(2) else []
    if t == "Embed":
        return [(p(3), 0), *([(p(0), 1)] if p(2) else [])]
    if t == "MemoryData":
        dims = [d for d in (p(0), p(1), p(11), p(2)) if d > 0]
        return [(math.prod(dims) if dims else 1, 1)]
    if t in NO_WEIGHTS:
        return []
    return None


def _read(f: BinaryIO, n: int) -> bytes | None:
    data = f.read(n)
    return data if len(data) == n else None


def _load(f: BinaryIO, count: int, kind: int) -> tuple[str, int] | None:
    """(dtype, bytes) of one array of COUNT values of TYPE read from F; None where the file ends first."""
    if count < 0:
        return None
    if kind == 1:
        return ("float32", count * 4) if _read(f, count * 4) is not None else None
    head = _read(f, 4)
    if head is None:
        return None
    tag = struct.unpack("<I", head)[0]
    if tag == TAG_FP16:
        size, dtype = (count * 2 + 3) // 4 * 4, "float16"
    elif tag == TAG_INT8:
        size, dtype = (count + 3) // 4 * 4, "int8"
    elif tag in (TAG_FP32_EXTRA, 0):
        size, dtype = count * 4, "float32"
    else:  # a 256-entry float table and COUNT uint8 indices
        size, dtype = 256 * 4 + (count + 3) // 4 * 4, "uint8"
    return (dtype, size + 4) if _read(f, size) is not None else None


def walk(layers: list[Layer], bin_path: str | Path) -> WeightReport:
    """Walk the .bin at BIN_PATH along LAYERS (the .param's, in order): each layer's weights by dtype."""
    p = Path(bin_path)
    report = WeightReport(file_bytes=p.stat().st_size)
    with open(p, "rb") as f:
        for layer in layers:
            arrays = _arrays(layer)
            if arrays is None:
                report.stopped_at = f"{layer.type} {layer.name}"
                break
            for count, kind in arrays:
                got = _load(f, count, kind)
                if got is None:
                    report.stopped_at = f"{layer.type} {layer.name} (the file ends inside its weights)"
                    return report
                report.add(layer.name, got[0], count, got[1])
    return report


def stored_precision(layers: list[Layer], bin_path: str | Path) -> str:
    """"fp16" where the first tagged weights of the .bin are stored in fp16 (pnnx fp16=1), "int8" where in int8,
    else "fp32": what the ncnn runtime's default options follow."""
    p = Path(bin_path)
    with open(p, "rb") as f:
        for layer in layers:
            arrays = _arrays(layer)
            if not arrays:
                if arrays is None:
                    return "fp32"
                continue
            for count, kind in arrays:
                if kind == 0:
                    head = _read(f, 4)
                    tag = struct.unpack("<I", head)[0] if head else 0
                    return {TAG_FP16: "fp16", TAG_INT8: "int8"}.get(tag, "fp32")
                if _load(f, count, kind) is None:
                    return "fp32"
    return "fp32"


__all__ = ["NO_WEIGHTS", "WeightReport", "stored_precision", "walk"]
