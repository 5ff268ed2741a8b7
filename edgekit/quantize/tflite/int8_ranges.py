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
finds the tensor whose int8 step is absurd, and `range_cause` finds in the model what brought it: that PADV2, a
constant of FLT_MAX or -1e9 (a mask fill), or an op computing an infinity (log of zero). The artifact then fails
naming that op, with what the user can change, instead of publishing a model that computes nothing (or crashing at
validation). A step over a million is not always absurd: a MobileOne exported before re-parameterization, at random
weights, grows its activations to 3e8 block by block (each sums four conv branches, a scale branch and an identity
through BatchNorms that normalize nothing). No op brings that range at once, the float model computes those values
itself, and int8 holds them at its usual relative step (cosine 0.9995 on a 34-block model): that range is kept, with
a note, and validation judges the artifact. The hint names only a cause found in the model, never one from a list.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from edgekit.tflite.model import TfliteModel, TOp, TTensor

ABSURD_SCALE = 1e6  # an int8 step of a million: the range holds an infinity, FLT_MAX or a huge constant, or the model
# computes values that large itself (range_cause tells which)
JUMP = 1e3  # an op whose int8 step is this many times its inputs' brought the range in itself
HUGE = 1e30  # a constant at or beyond this is "infinity" (-FLT_MAX pads a MaxPool; FLT_MAX / 255 is a 1.3e36 step)
# edgekit.edgetpu.fixes.FIXES keys that every int8 TFLite gets
RANGE_FIXES = ("PADV2(-inf) after ReLU -> PAD", "PADV2(-inf) + MAX_POOL_2D VALID -> MAX_POOL_2D SAME")
_BRINGS_INFINITY = {"LOG": "log of zero", "DIV": "division by zero or a divisor near it", "EXP": "exp overflow",
                    "RSQRT": "rsqrt of zero", "POW": "a power overflowing"}


@dataclass(frozen=True)
class AbsurdRange:
    tensor: str
    op: str  # the op that writes the tensor (or reads it, for a model input)
    scale: float
    index: int = -1  # the tensor's index in the model


@dataclass(frozen=True)
class RangeCause:
    """Where the first absurd range of an int8 model comes from, found in that model (range_cause)."""

    kind: Literal["padded-maxpool", "constant", "computed", "grown"]
    op: str  # the op that brought it (its type)
    tensor: str  # that op's output (the tensor to look for in the model)
    value: float  # the constant's value (padded-maxpool, constant), the jump's factor (computed), the range (grown)

    @property
    def refused(self) -> bool:
        """Whether the int8 model computes nothing there: a range the values do not fill, not the model's own."""
        return self.kind != "grown"

    def hint(self) -> str:
        if self.kind == "padded-maxpool":
            return (f"'{self.tensor}' is a PADV2 padding with {self.value:.2g} (minus infinity) before a MAX_POOL_2D: "
                    "a padded MaxPool exported from ONNX. edgekit rewrites it where a ReLU comes first or the pads "
                    "are SAME's, and here neither holds. Put the activation before the pooling, export the pooling "
                    "without padding, or ship the ONNX int8 or TFLite fp16/dynamic artifact instead.")
        if self.kind == "constant":
            return (f"The {self.op} writing '{self.tensor}' reads a constant of {self.value:.2g} (a mask fill or a "
                    "stand-in for infinity), which int8 must share a step with the real values. Use a fill near "
                    "the values' own range (a masked softmax needs only about -1e2 below the largest logit), or ship "
                    "the ONNX int8 or TFLite fp16/dynamic artifact instead.")
        cause = _BRINGS_INFINITY.get(self.op, "a value far beyond its inputs'")
        return (f"The {self.op} writing '{self.tensor}' computes values {self.value:.2g} times its inputs' step on "
                f"the calibration data ({cause}): bound its input in the model (x.clamp(min=eps) before a log or "
                "rsqrt, x / (d + eps) for a division), or ship the ONNX int8 or TFLite fp16/dynamic artifact instead.")

    def note(self) -> str:
        """The record's words where the range is the model's own (grown): kept, not refused."""
        return (f"int8 steps over {ABSURD_SCALE:.0e} from '{self.tensor}' ({self.op}) on: activations reach "
                f"+-{self.value:.2g}, grown layer by layer (no constant or op brings the range at once): the float "
                "model's own values, which int8 holds at its usual relative step")


def range_fixes(blob: bytes) -> tuple[bytes, dict[str, int]]:
    """BLOB (a float .tflite) with the exact rewrites that keep int8 ranges finite; what each changed."""
    from edgekit.edgetpu.fixes import FIXES
    from edgekit.tflite.flatbuffer import FlatModel

    f = FlatModel(blob)
    applied = {name: n for name in RANGE_FIXES if (n := FIXES[name](f))}
    return (f.to_bytes() if applied else blob), applied


def _step(tensor: TTensor | None) -> float:
    q = tensor.quantization if tensor is not None else None
    if q is None:
        return 0.0
    return max(q.scale) if isinstance(q.scale, list) else float(q.scale)


def absurd_ranges(path: Path) -> list[AbsurdRange]:
    """The int8/uint8 activations of the .tflite at PATH whose scale is over ABSURD_SCALE, in op order."""
    from edgekit.tflite.model import read_tflite

    m = read_tflite(path)
    found: dict[int, AbsurdRange] = {}
    for op in m.ops:
        for t in op.outputs + op.inputs:
            tensor = m.tensor(t)
            if tensor is None or tensor.const or tensor.index in found or tensor.dtype not in ("int8", "uint8"):
                continue
            if (scale := _step(tensor)) > ABSURD_SCALE:
                found[tensor.index] = AbsurdRange(tensor.name, op.op, scale, tensor.index)
    return list(found.values())


def _dequantized(tensor: TTensor) -> np.ndarray | None:
    v = tensor.value()
    q = tensor.quantization
    if v is None or q is None or tensor.dtype not in ("int8", "uint8"):
        return None if v is None or not np.issubdtype(v.dtype, np.floating) else v.astype(np.float64)
    scale = np.asarray(q.scale, np.float64)
    zero = np.asarray(q.zero_point, np.float64)
    if scale.size > 1:  # per channel: the scales run along the tensor's quantized axis
        shape = [1] * v.ndim
        shape[getattr(q, "axis", 0) or 0] = scale.size
        scale, zero = scale.reshape(shape), zero.reshape(shape)
    return (v.astype(np.float64) - zero) * scale


def range_cause(path: Path, found: list[AbsurdRange]) -> RangeCause:
    """Which op of the int8 model at PATH brings the first of FOUND's ranges (absurd_ranges, non-empty), and how.

    A PADV2 padding with minus infinity shares one step with its input and output; a constant of FLT_MAX or -1e9
    (a mask fill) takes the step of whatever it is added to; an op whose step is JUMP times its inputs' computed
    the range itself (log of zero, a division by zero); otherwise every op grew the range a little: the float
    model's own activations are that large, and int8 holds them as well as any.
    """
    from edgekit.tflite.model import read_tflite

    m = read_tflite(path)
    absurd = {a.index for a in found}
    for op in m.ops:  # a -inf pad shares its step with its input, which an earlier op writes: look for it first
        if op.op != "PADV2" or len(op.inputs) < 3 or not absurd & {op.inputs[0], op.outputs[0]}:
            continue
        pad = m.tensor(op.inputs[2])
        value = _dequantized(pad) if pad is not None else None
        if value is not None and value.size and float(value.min()) <= -HUGE:
            return RangeCause("padded-maxpool", op.op, m.tensors[op.outputs[0]].name, float(value.min()))
    first = min((op for op in m.ops if absurd & set(op.outputs + op.inputs)), key=lambda op: op.index)
    if first.op == "QUANTIZE":  # a float op's output entering int8 (an op kept in float): that op brought it
        producer = next((op for op in m.ops if first.inputs[0] in op.outputs), None)
        first = producer if producer is not None else first
    inputs = [t for t in m.op_inputs(first) if t is not None]
    for t in inputs:
        value = _dequantized(t) if t.const else None
        if value is not None and value.size and float(np.abs(value).max()) > ABSURD_SCALE:
            big = float(value.reshape(-1)[np.argmax(np.abs(value))])
            return RangeCause("constant", first.op, _named_output(m, first), big)
    activations = [s for t in inputs if not t.const and t.index not in absurd and (s := _step_in(m, t))]
    out_step = max(_step_out(m, t) for t in m.op_outputs(first) if t is not None)
    if activations and max(activations) * JUMP < out_step:
        return RangeCause("computed", first.op, _named_output(m, first), out_step / max(activations))
    widest = max(found, key=lambda a: a.scale)
    return RangeCause("grown", first.op, found[0].tensor, widest.scale * 127.5)


def _step_in(m: TfliteModel, t: TTensor) -> float:
    """T's int8 step, or for a float tensor a DEQUANTIZE wrote, the step of what it dequantized."""
    deq = next((op for op in m.ops if op.op == "DEQUANTIZE" and t.index in op.outputs), None)
    return _step(m.tensor(deq.inputs[0])) if deq is not None and not t.quantization else _step(t)


def _step_out(m: TfliteModel, t: TTensor) -> float:
    """T's int8 step, or for a float tensor a QUANTIZE reads, the step it is quantized to."""
    quant = next((op for op in m.ops if op.op == "QUANTIZE" and t.index in op.inputs), None)
    return _step(m.tensor(quant.outputs[0])) if quant is not None and not t.quantization else _step(t)


def _named_output(m: TfliteModel, op: TOp) -> str:
    return m.tensors[op.outputs[0]].name if op.outputs else op.op


def absurd_words(found: list[AbsurdRange], cause: RangeCause) -> str:
    first = found[0]
    more = f" (and {len(found) - 1} more tensor(s) over {ABSURD_SCALE:.0e})" if len(found) > 1 else ""
    held = {"padded-maxpool": "holds the pad's minus infinity", "constant": f"holds the constant {cause.value:.2g}",
            "computed": f"holds what the {cause.op} '{cause.tensor}' computes"}.get(cause.kind, "is out of reach")
    return (f"int8 quantization gave tensor '{first.tensor}' ({first.op}) the step {first.scale:.2g}{more}: its "
            f"calibrated range {held}, so its real values round to a few levels")
