"""Bias correction for the TFLite route (edgekit.quantize.bias_correct's method, Nagel et al. 2019, 4.2, with
empirical means), on the float flatbuffer before calibration.

Quantizing a layer's weights shifts the mean of its output by (W~ - W) E[x] per output channel, W~ the int8
weights as dequantized; the next layers carry the shift on (depthwise convolutions, few weights per channel,
suffer most). The TFLite quantizer's weight grid depends on the weights only, so W~ is predicted here from the
float model, as the converter edgekit uses (TF 2.21's mlir_quantize) makes it: symmetric int8 in [-127, 127]
per output channel, scale max|W| / 127, for CONV_2D (filter [Cout, kh, kw, Cin / groups], axis 0),
DEPTHWISE_CONV_2D ([1, kh, kw, C * m], axis 3: output channel j reads input channel j // m) and
FULLY_CONNECTED ([out, in], axis 0: per channel too; tests/quantize/test_tflite_bias.py checks all three
against the converter's own int8 weights). E[x] is each input channel's mean in the float model on the
calibration samples (LiteRT with every intermediate tensor kept); the shift is subtracted from the float bias
and the corrected model is calibrated and quantized as any other. With every layer corrected at once against
the float means, each layer removes only its own shift: once upstream is corrected, the mean the quantized
layer reads is the float one again. Ops without a bias tensor are skipped (counted); a bias tensor or buffer
another tensor shares gets a copy of its own first. Zero padding makes E[x] at the borders smaller than the
channel mean: a small residue, as in the ONNX recipe.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgekit.quantize.flatbuffer import FlatModel

MAX_SAMPLES = 64  # the means settle well before this; more only costs time (as edgekit.quantize.bias_correct)
LAYERS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
WEIGHT_AXIS = {"CONV_2D": 0, "DEPTHWISE_CONV_2D": 3, "FULLY_CONNECTED": 0}  # the quantizer's per-channel axis


@dataclass(frozen=True)
class BiasCorrection:
    """What bias correction did: the ops corrected (by their output tensor's name) with the shift removed from
    each one's bias, those skipped for want of a bias tensor, and how many others could not be corrected."""

    corrected: tuple[str, ...]
    shifts: tuple[tuple[float, ...], ...]  # per corrected op, per output channel: (W~ - W) E[x]
    no_bias: tuple[str, ...]
    other_skipped: int

    def largest(self) -> float:
        return max((abs(v) for s in self.shifts for v in s), default=0.0)

    def words(self) -> str:
        more = f", {len(self.no_bias)} without a bias tensor skipped" if self.no_bias else ""
        more += f", {self.other_skipped} others not corrected (no constant float weights or no mean measured)" \
            if self.other_skipped else ""
        return (f"bias correction: {len(self.corrected)} layers of the float TFLite model corrected for their int8 "
                f"weights' mean shift (largest removed {self.largest():.4g}){more}")


def int8_weights(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """W as the TFLite quantizer's per-channel symmetric int8 weights: (q, s), q = round(W / s) in [-127, 127],
    s = max|W| / 127 per slice along AXIS (kept as a dimension of 1 elsewhere; a channel of zeros gets s = 0)."""
    other = tuple(k for k in range(w.ndim) if k != axis)
    scale = (np.abs(w).max(axis=other, keepdims=True) / np.float32(127)).astype(np.float32)
    q = np.clip(np.round(w / np.where(scale > 0, scale, np.float32(1))), -127, 127)
    return q.astype(np.int8), scale


def int8_grid(w: np.ndarray, axis: int) -> np.ndarray:
    """W~: W's int8 weights as the int8 model computes with them, q * s (float64)."""
    q, scale = int8_weights(w, axis)
    return q.astype(np.float64) * scale.astype(np.float64)


def output_shift(kind: str, dw: np.ndarray, mean_in: np.ndarray) -> np.ndarray | None:
    """(W~ - W) E[x] per output channel of a KIND op, DW = W~ - W in its TFLite layout, MEAN_IN per input channel
    (None where the shapes do not fit)."""
    c = mean_in.size
    if kind == "FULLY_CONNECTED":
        return dw @ mean_in if dw.ndim == 2 and dw.shape[1] == c else None
    if kind == "DEPTHWISE_CONV_2D":
        per = dw.reshape(-1, dw.shape[-1]).sum(axis=0)  # [C * m]
        return per * np.repeat(mean_in, per.size // c) if per.size % c == 0 else None
    cout, cin_g = dw.shape[0], dw.shape[-1]
    if c % cin_g or cout % (c // cin_g):
        return None
    per = dw.reshape(cout, -1, cin_g).sum(axis=1)  # [Cout, Cin / groups]
    group = np.arange(cout) // (cout // (c // cin_g))
    return np.einsum("oc,oc->o", per, mean_in.reshape(-1, cin_g)[group])


def input_means(blob: bytes, widths: dict[int, int], batches: Iterable[list[np.ndarray]]) -> dict[int, np.ndarray]:
    """Each tensor of WIDTHS (index -> channels) averaged per channel (its last WIDTH values) in the float model
    BLOB over BATCHES (lists in the model's input order), at most MAX_SAMPLES samples."""
    import sys

    from edgekit.runtimes.litert_io import interpreter_class

    cls = interpreter_class()
    # no default delegate (XNNPACK): the ops it takes over would not leave their intermediates to read
    plain = sys.modules[cls.__module__].OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = cls(model_content=blob, experimental_op_resolver_type=plain, experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    inputs = it.get_input_details()
    sums = {k: np.zeros(c, np.float64) for k, c in widths.items()}
    rows = dict.fromkeys(widths, 0)
    seen = 0
    for batch in batches:
        if seen >= MAX_SAMPLES:
            break
        for d, a in zip(inputs, batch, strict=True):
            it.set_tensor(d["index"], np.asarray(a, d["dtype"]))
        it.invoke()
        seen += len(batch[0])
        for k, c in widths.items():
            x = np.asarray(it.get_tensor(k), np.float64)
            if x.size % c == 0:
                sums[k] += x.reshape(-1, c).sum(axis=0)
                rows[k] += x.size // c
    return {k: sums[k] / rows[k] for k in widths if rows[k]}


def _targets(f: FlatModel) -> tuple[list[tuple[int, np.ndarray]], list[int], int]:
    """The layer ops with constant float weights and a float bias (op, weights); those without a bias; others."""
    out, no_bias, other = [], [], 0
    for k, op in enumerate(f.sg.operators):
        kind = f.name(k)
        if kind not in LAYERS:
            continue
        w = f.const(int(op.inputs[1])) if len(op.inputs) > 1 else None
        if w is None or w.ndim != (2 if kind == "FULLY_CONNECTED" else 4):
            other += 1
        elif len(op.inputs) < 3 or op.inputs[2] < 0:
            no_bias.append(k)
        elif f.const(int(op.inputs[2])) is None:
            other += 1
        else:
            out.append((k, w))
    return out, no_bias, other


def _own_bias(f: FlatModel, k: int, buffers: Counter[int]) -> int:
    """Op K's bias tensor, copied first where another op reads it or another tensor holds its buffer."""
    op = f.sg.operators[k]
    t = int(op.inputs[2])
    if len(f.readers.get(t, [])) == 1 and buffers[f.sg.tensors[t].buffer] == 1:
        return t
    bias = f.const(t)
    assert bias is not None  # _targets checked it
    op.inputs[2] = f.add_const(f"{_name(f, k)}/corrected_bias", bias)
    return int(op.inputs[2])


def correct_biases(blob: bytes, batches: Iterable[list[np.ndarray]]) -> tuple[bytes, BiasCorrection]:
    """The float model BLOB with each layer's bias corrected for its int8 weights' mean shift on BATCHES."""
    f = FlatModel(blob)
    targets, no_bias, other = _targets(f)
    widths = {}
    for k, w in targets:
        kind, x = f.name(k), int(f.sg.operators[k].inputs[0])
        widths[x] = int(w.shape[1]) if kind == "FULLY_CONNECTED" else int(f.sg.tensors[x].shape[-1])
    means = input_means(blob, widths, batches) if targets else {}
    buffers = Counter(t.buffer for t in f.sg.tensors if t.buffer > 0)
    names, shifts = [], []
    for k, w in targets:
        op, kind = f.sg.operators[k], f.name(k)
        mean = means.get(int(op.inputs[0]))
        w64 = w.astype(np.float64)
        shift = None if mean is None else output_shift(kind, int8_grid(w, WEIGHT_AXIS[kind]) - w64, mean)
        t = int(op.inputs[2])
        bias = f.const(t)
        if shift is None or bias is None or bias.shape != shift.shape:
            other += 1
            continue
        t = _own_bias(f, k, buffers)
        f.set_weight(t, (bias.astype(np.float64) - shift).astype(np.float32))
        names.append(_name(f, k))
        shifts.append(tuple(float(v) for v in shift))
    f.reindex()
    return f.to_bytes(), BiasCorrection(tuple(names), tuple(shifts), tuple(_name(f, k) for k in no_bias), other)


def _name(f: FlatModel, k: int) -> str:
    name: Any = f.sg.tensors[int(f.sg.operators[k].outputs[0])].name
    return name.decode() if isinstance(name, bytes) else str(name)


__all__ = ["BiasCorrection", "correct_biases", "input_means", "int8_grid", "int8_weights", "output_shift"]
