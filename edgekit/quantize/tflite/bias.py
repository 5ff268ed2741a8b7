"""Bias correction for the TFLite route (edgekit.quantize.onnx.bias_correct's method, Nagel et al. 2019, 4.2, with
empirical means), on the float flatbuffer before calibration.

Quantizing a layer's weights shifts the mean of its output by (W~ - W) E[x] per output channel, W~ the int8
weights as dequantized; the next layers carry the shift on (depthwise convolutions, few weights per channel,
suffer most). The TFLite quantizer's weight grid depends on the weights only, so W~ is predicted here from the
float model, as the converter edgekit uses (TF 2.21's mlir_quantize) makes it: symmetric int8 in [-127, 127]
per output channel, scale max|W| / 127, for CONV_2D (filter [Cout, kh, kw, Cin / groups], axis 0),
DEPTHWISE_CONV_2D ([1, kh, kw, C * m], axis 3: output channel j reads input channel j // m) and
FULLY_CONNECTED ([out, in], axis 0: per channel too since the converter's 2024 switch, which
tensorflow/tflite-micro#2602 describes; mlir_quantize's disable_per_channel_for_dense_layers, False by default,
would make it per tensor and edgekit never sets it). tests/quantize/test_tflite_bias.py checks all three against
the converter's own int8 weights. E[x] is measured in the float model on the calibration samples (LiteRT with
every intermediate tensor kept), for a convolution per kernel tap: the mean of what that tap reads over the output
positions, zero padding and strides included (on the 3x3 maps of a small ResNet's last stage, a corner tap
reads 4 of the 9 positions). The sum of (W~ - W) E[x] over the taps is then exactly the mean shift of the layer's
output over samples and positions. The shift is subtracted from the float bias and the corrected model is
calibrated and quantized as any other. With every layer corrected at once against the float means, each layer
removes only its own shift: once upstream is corrected, the mean the quantized layer reads is the float one
again. Ops without a bias tensor are skipped (counted); a bias tensor or buffer another tensor shares gets a copy
of its own first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgekit.quantize.tap_means import conv_shift, same_pads, tap_means
from edgekit.tflite.flatbuffer import FlatModel

MAX_SAMPLES = 64  # the means settle well before this; more only costs time (as edgekit.quantize.onnx.bias_correct)
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
    """(W~ - W) E[x] per output channel of a KIND op, DW = W~ - W in its TFLite layout; MEAN_IN: per input feature
    for FULLY_CONNECTED, per kernel tap [kh, kw, C] for the convolutions (None where the shapes do not fit)."""
    if kind == "FULLY_CONNECTED":
        return dw @ mean_in if dw.ndim == 2 and mean_in.shape == (dw.shape[1],) else None
    if mean_in.ndim != 3 or mean_in.shape[:2] != dw.shape[1:3]:
        return None
    c = mean_in.shape[2]
    if kind == "DEPTHWISE_CONV_2D":  # output channel j reads input channel j // m
        if dw.shape[-1] % c:
            return None
        return np.einsum("hwj,hwj->j", dw[0], np.repeat(mean_in, dw.shape[-1] // c, axis=2))
    return conv_shift(dw, mean_in)


def tflite_tap_means(total: np.ndarray, samples: int, kernel: tuple[int, int], options: Any) -> np.ndarray | None:
    """[kh, kw, C]: what each kernel tap of a CONV_2D / DEPTHWISE_CONV_2D with OPTIONS (padding, strides,
    dilations) reads on average (edgekit.quantize.tap_means), from TOTAL, the input summed over SAMPLES ([H, W, C]);
    zero padding placed as TFLite places it (SAME: the odd one at the bottom / right)."""
    if total.ndim != 3 or options is None:
        return None
    strides = (int(options.strideH or 1), int(options.strideW or 1))
    dilations = (int(options.dilationHFactor or 1), int(options.dilationWFactor or 1))
    same = options.padding == 0
    pads = tuple(same_pads(n, k, s, d) if same else (0, 0)
                 for n, k, s, d in zip(total.shape[:2], kernel, strides, dilations, strict=True))
    return tap_means(total, samples, kernel, strides, dilations, (pads[0], pads[1]))


def tensor_interpreter(blob: bytes) -> Any:
    """A LiteRT interpreter of BLOB, allocated, that keeps every intermediate tensor readable after invoke."""
    import sys

    from edgekit.runtimes.litert_io import interpreter_class

    cls = interpreter_class()
    # no default delegate (XNNPACK): the ops it takes over would not leave their intermediates to read
    plain = sys.modules[cls.__module__].OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = cls(model_content=blob, experimental_op_resolver_type=plain, experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    return it


def input_sums(blob: bytes, tensors: list[int], batches: Iterable[list[np.ndarray]]) -> tuple[dict[int, np.ndarray],
                                                                                               int]:
    """TENSORS of the float model BLOB summed over the samples of BATCHES (lists in the model's input order; at most
    MAX_SAMPLES samples), each to a sample's shape; and how many samples. Every mean here is a sum of those."""
    it = tensor_interpreter(blob)
    inputs = it.get_input_details()
    sums: dict[int, np.ndarray] = {}
    seen = 0
    for batch in batches:
        if seen >= MAX_SAMPLES:
            break
        for d, a in zip(inputs, batch, strict=True):
            it.set_tensor(d["index"], np.asarray(a, d["dtype"]))
        it.invoke()
        seen += len(batch[0])
        for k in tensors:
            x = np.asarray(it.get_tensor(k), np.float64).sum(axis=0)
            sums[k] = sums[k] + x if k in sums else x
    return sums, seen


def _mean_in(f: FlatModel, k: int, w: np.ndarray, total: np.ndarray, samples: int) -> np.ndarray | None:
    """What op K (weights W) reads, averaged: per input feature (FULLY_CONNECTED), per kernel tap (convolutions)."""
    if f.name(k) == "FULLY_CONNECTED":
        n = w.shape[1]
        return total.reshape(-1, n).sum(axis=0) / (samples * (total.size // n)) if total.size % n == 0 else None
    return tflite_tap_means(total, samples, (int(w.shape[1]), int(w.shape[2])), f.sg.operators[k].builtinOptions)


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
    reads = list(dict.fromkeys(int(f.sg.operators[k].inputs[0]) for k, _ in targets))
    totals, samples = input_sums(blob, reads, batches) if targets else ({}, 0)
    buffers = Counter(t.buffer for t in f.sg.tensors if t.buffer > 0)
    names, shifts = [], []
    for k, w in targets:
        op, kind = f.sg.operators[k], f.name(k)
        mean = _mean_in(f, k, w, totals[int(op.inputs[0])], samples) if samples else None
        shift = None if mean is None else output_shift(kind, int8_grid(w, WEIGHT_AXIS[kind]) - w, mean)
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
    return f.tensor_name(int(f.sg.operators[k].outputs[0]))


__all__ = ["BiasCorrection", "correct_biases", "input_sums", "int8_grid", "int8_weights", "output_shift",
           "tensor_interpreter", "tflite_tap_means"]
