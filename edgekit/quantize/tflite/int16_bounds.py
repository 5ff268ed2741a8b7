"""16-bit activations too small for LiteRT's fused ReLU6: their scale raised to the least LiteRT can run.

Why: LiteRT's int16 kernels quantize a fused activation's bound into the output's steps when they prepare
(tflite/kernels/kernel_util.cc, `CalculateActivationRangeQuantized` -> `Quantize`: round(6 / scale) must fit an
int32, or "no_integer_overflow_from_quantization was not true ... failed to prepare"). The 16x8 quantizer gives a
symmetric int16 tensor the scale max|x| / 32767, so a ReLU6 output whose calibrated range is under
32767 * 6 / 2^31 = 9.2e-5 cannot be prepared: the whole model fails to load. It happens where activations are tiny,
as in a MobileNetV2 with its initial weights (batch norms at identity: depthwise outputs of 1e-5), and in trained
models with a near-dead layer. int8 has 128 times fewer steps and hits it only under a range of 7e-7.

The fix is exact in what the tensor can hold: its step grows to 6 / 2^30 (at most a 2.8e-9 step, a range of 1.8e-4
over 32767 levels), every tensor that must share its scale (the quantizer ties PAD, RESHAPE, MAX_POOL_2D, ...:
equal scales through a data-movement op) with it, and the int64 bias of each layer reading one of them is rescaled to
the new input step (a bias is counted in input step x weight step). Values under the new step round to 0 where they
rounded to a few levels before: what LiteRT can represent at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from edgekit.tflite.flatbuffer import FlatModel

INT16, INT64 = 7, 4  # TensorType
BOUNDS = {2: 1.0, 3: 6.0}  # fused activation (RELU_N1_TO_1, RELU6) -> the bound LiteRT quantizes into the output
LIMIT = 0.999 * 2.0 ** 31  # bound / step at or over this: LiteRT's round(bound / step) may not fit an int32
HEADROOM = 2.0 ** 30  # the bound over a raised step: half an int32's range, clear of the float rounding
# ops whose int16 output the quantizer gives its input's scale (a kernel may check it): scales tie through these
TIED = ("PAD", "PADV2", "RESHAPE", "MAX_POOL_2D", "CONCATENATION", "SQUEEZE", "TRANSPOSE", "SLICE",
        "STRIDED_SLICE", "SPLIT", "SPLIT_V", "GATHER", "EXPAND_DIMS", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
BIASED = {"CONV_2D": 2, "DEPTHWISE_CONV_2D": 2, "FULLY_CONNECTED": 2}  # op -> its bias input (data is input 0)


@dataclass(frozen=True)
class Raised:
    tensors: int  # activation tensors whose step was raised
    biases: int  # int64 biases rescaled to their new input step
    smallest: float  # the smallest step before (the worst one)
    step: float  # the step they share now (the least LiteRT runs under a fused bound)

    def words(self) -> str:
        return (f"{self.tensors} int16 activation(s) under a fused ReLU6 had a step as small as {self.smallest:.2g}, "
                f"under what LiteRT's int16 kernels can prepare (6 / step must fit an int32): raised to "
                f"{self.step:.2g}, with {self.biases} bias(es) rescaled (edgekit.quantize.tflite.int16_bounds)")


def _scale(t: object) -> float | None:
    q = getattr(t, "quantization", None)
    s = None if q is None else q.scale
    return None if s is None or len(s) != 1 else float(s[0])


def raise_small_steps(blob: bytes) -> tuple[bytes, Raised | None]:
    """BLOB (a 16x8 .tflite) with every int16 activation that LiteRT could not prepare under its fused bound given
    the least step it can; (BLOB, None) where none needed it."""
    from edgekit.tflite.flatbuffer import FlatModel

    f = FlatModel(blob)
    sg = f.sg
    low: dict[int, float] = {}  # tensor -> the least step its fused bound allows
    for op in sg.operators:
        act = getattr(op.builtinOptions, "fusedActivationFunction", 0) if op.builtinOptions is not None else 0
        out = int(op.outputs[0]) if len(op.outputs) else -1
        s = _scale(sg.tensors[out]) if out >= 0 and sg.tensors[out].type == INT16 else None
        if act in BOUNDS and s is not None and BOUNDS[act] / s >= LIMIT:
            low[out] = max(low.get(out, 0.0), BOUNDS[act] / HEADROOM)
    if not low:
        return blob, None
    group = _tied_groups(f)
    new: dict[int, float] = {}
    for t, need in low.items():
        for member in group.get(t, {t}):
            new[member] = max(new.get(member, 0.0), need, _scale(sg.tensors[member]) or 0.0)
    smallest = min(_scale(sg.tensors[t]) or 0.0 for t in new)
    old = {t: _scale(sg.tensors[t]) or s for t, s in new.items()}
    for t, s in new.items():
        sg.tensors[t].quantization.scale = np.array([s], np.float32)
    biases = _rescale_biases(f, old, new)
    return f.to_bytes(), Raised(len(new), biases, smallest, max(new.values()))


def _tied_groups(f: FlatModel) -> dict[int, set[int]]:
    """Each int16 tensor -> the tensors sharing its scale through TIED ops (equal scales in, out)."""
    parent: dict[int, int] = {}

    def root(t: int) -> int:
        while parent.get(t, t) != t:
            t = parent[t]
        return t

    sg = f.sg
    for k, op in enumerate(sg.operators):
        if f.name(k) not in TIED:
            continue
        ins = [int(t) for t in op.inputs if t >= 0 and sg.tensors[t].type == INT16 and not _has_data(f, int(t))]
        for a in ins:
            for b in (int(t) for t in op.outputs):
                if sg.tensors[b].type == INT16 and _scale(sg.tensors[a]) == _scale(sg.tensors[b]):
                    parent[root(a)] = root(b)
    groups: dict[int, set[int]] = {}
    for t in list(parent):
        groups.setdefault(root(t), set()).add(t)
    return {t: g | {r} for r, g in groups.items() for t in g | {r}}


def _has_data(f: FlatModel, t: int) -> bool:
    b = f.sg.tensors[t].buffer
    bufs = f.model.buffers
    return 0 < b < len(bufs) and bufs[b].data is not None and len(bufs[b].data) > 0


def _rescale_biases(f: FlatModel, old: dict[int, float], new: dict[int, float]) -> int:
    """The int64 bias of every layer reading a raised tensor, recounted in its new input step (a copy where the
    bias buffer is shared with another layer). The number rescaled."""
    sg, model = f.sg, f.model
    count = 0
    for k, op in enumerate(sg.operators):
        at = BIASED.get(f.name(k))
        if at is None or len(op.inputs) <= at or int(op.inputs[0]) not in new or op.inputs[at] < 0:
            continue
        x, b = int(op.inputs[0]), int(op.inputs[at])
        t = sg.tensors[b]
        if t.type != INT64 or not _has_data(f, b):
            continue
        value = np.frombuffer(bytes(np.asarray(model.buffers[t.buffer].data, np.uint8)), np.int64)
        ratio = old[x] / new[x]
        fixed = np.round(value.astype(np.float64) * ratio).astype(np.int64)
        if _shared(f, b, k):  # its own copy: the other layers read the old steps
            b = _copy_tensor(f, b)
            op.inputs[at] = b
            t = sg.tensors[b]
            model.buffers.append(f.schema.BufferT())
            t.buffer = len(model.buffers) - 1
        model.buffers[t.buffer].data = np.frombuffer(fixed.tobytes(), np.uint8)
        if t.quantization is not None and t.quantization.scale is not None:
            t.quantization.scale = (np.asarray(t.quantization.scale, np.float64) / ratio).astype(np.float32)
        count += 1
    return count


def _shared(f: FlatModel, tensor: int, op: int) -> bool:
    sg = f.sg
    buf = sg.tensors[tensor].buffer
    return any(k != op and any(t >= 0 and sg.tensors[t].buffer == buf for t in o.inputs)
               for k, o in enumerate(sg.operators))


def _copy_tensor(f: FlatModel, tensor: int) -> int:
    import copy

    sg = f.sg
    t = copy.deepcopy(sg.tensors[tensor])
    t.name = (t.name.decode() if isinstance(t.name, bytes) else str(t.name)) + "_rescaled"
    sg.tensors.append(t)
    return len(sg.tensors) - 1


__all__ = ["Raised", "raise_small_steps"]
