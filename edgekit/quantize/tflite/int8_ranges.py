"""Ranges no int8 model can hold: the exact rewrite every int8 TFLite gets, and the check that names the rest.

A padded MaxPool from ONNX reaches TFLite as PADV2 with the constant -FLT_MAX ("minus infinity") before a VALID
MAX_POOL_2D. The TFLite quantizer gives PADV2's input, output and constant one scale, so the calibrated range runs
from -3.4e38: on a transformers ResNet-18 the stem convolution's output got the scale 1.3e36. Every value of that
tensor rounds to one level, the model is garbage, XNNPACK refuses it ("failed to prepare") and LiteRT's builtin
kernels abort the process. The Edge TPU artifact escaped because edgekit.edgetpu.fixes rewrites that PADV2 as PAD
where its input cannot be negative (written by a ReLU): the maximum is the same, and the rewrite is exact in float.
That rewrite is not about the Edge TPU, so every int8 TFLite gets it (`range_fixes`). Where the input can be negative
(MTCNN: a PReLU before PyTorch's MaxPool2d(ceil_mode=True)) and the pads are those SAME padding adds, the pool
reads the PADV2's input with SAME padding, which leaves the padded cells out: exact too (issue 27).

Where the input can be negative, the rewrite would change the function, so it is not made; `absurd_ranges` then
finds the tensor whose int8 step is absurd, and the artifact fails naming it, with what the user can change,
instead of publishing a model that computes nothing (or crashing at validation).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ABSURD_SCALE = 1e6  # an int8 step of a million: the range holds an infinity or FLT_MAX, not activations
# edgekit.edgetpu.fixes.FIXES keys that every int8 TFLite gets
RANGE_FIXES = ("PADV2(-inf) after ReLU -> PAD", "PADV2(-inf) + MAX_POOL_2D VALID -> MAX_POOL_2D SAME")


@dataclass(frozen=True)
class AbsurdRange:
    tensor: str
    op: str  # the op that writes the tensor (or reads it, for a model input)
    scale: float


def range_fixes(blob: bytes) -> tuple[bytes, dict[str, int]]:
    """BLOB (a float .tflite) with the exact rewrites that keep int8 ranges finite; what each changed."""
    from edgekit.edgetpu.fixes import FIXES
    from edgekit.tflite.flatbuffer import FlatModel

    f = FlatModel(blob)
    applied = {name: n for name in RANGE_FIXES if (n := FIXES[name](f))}
    return (f.to_bytes() if applied else blob), applied


def absurd_ranges(path: Path) -> list[AbsurdRange]:
    """The int8/uint8 activations of the .tflite at PATH whose scale is over ABSURD_SCALE, in op order."""
    from edgekit.tflite.model import read_tflite

    m = read_tflite(path)
    found: dict[int, AbsurdRange] = {}
    for op in m.ops:
        for t in op.outputs + op.inputs:
            tensor = m.tensor(t)
            if tensor is None or tensor.const or tensor.index in found or tensor.quantization is None:
                continue
            if tensor.dtype not in ("int8", "uint8"):
                continue
            scales = tensor.quantization.scale
            scale = max(scales) if isinstance(scales, list) else float(scales)
            if scale > ABSURD_SCALE:
                found[tensor.index] = AbsurdRange(tensor.name, op.op, scale)
    return list(found.values())


def absurd_words(found: list[AbsurdRange]) -> str:
    first = found[0]
    more = f" (and {len(found) - 1} more tensor(s) sharing it)" if len(found) > 1 else ""
    return (f"int8 quantization gave tensor '{first.tensor}' ({first.op}) the step {first.scale:.2g}{more}: its "
            "calibrated range holds an infinity, so every value rounds to one level")


ABSURD_HINT = ("A padded MaxPool exported from ONNX pads with minus infinity (PADV2); edgekit rewrites it where a ReLU "
               "comes first or the pads are SAME's, and here neither holds. Put the activation before the pooling, "
               "export the pooling without padding, or ship the ONNX int8 or TFLite fp16/dynamic artifact instead.")
