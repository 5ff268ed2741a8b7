"""Cross-layer equalization on a float .tflite (edgekit.quantize.onnx.equalize's method, for the TFLite route).

The route to TFLite does not pass through the ONNX graph edgekit equalizes (Keras and SavedModel sources
never do), so the float flatbuffer is equalized instead, before calibration: for CONV_2D /
DEPTHWISE_CONV_2D -> CONV_2D / DEPTHWISE_CONV_2D / (MEAN ->) FULLY_CONNECTED pairs whose middle tensor
nothing else reads and whose first op's fused activation is NONE, RELU or RELU6 (made RELU, as AIMET
does), or NONE followed by a RELU op of its own (MediaPipe's graphs leave their ReLUs unfused), channel i
of the first op's filter and bias is divided by s_i and the second op's weights reading channel i are
multiplied by it. Layouts: CONV_2D filter [Cout, kh, kw, Cin], DEPTHWISE_CONV_2D [1, kh, kw, C*m],
FULLY_CONNECTED [out, in].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgekit.tflite.flatbuffer import FlatModel

_NONE, _RELU, _RELU6 = 0, 1, 3
_CONVS = ("CONV_2D", "DEPTHWISE_CONV_2D")


def _in_masks(kind: str, w: np.ndarray, c: int) -> list[tuple[slice | int, ...]] | None:
    """Index of the weights of B that read input channel i, for each i (None where B does not read C channels)."""
    if kind == "CONV_2D" and w.shape[-1] == c:
        return [(slice(None), slice(None), slice(None), i) for i in range(c)]
    if kind == "DEPTHWISE_CONV_2D" and w.shape[-1] % c == 0:
        m = w.shape[-1] // c
        return [(slice(None), slice(None), slice(None), slice(i * m, (i + 1) * m)) for i in range(c)]
    if kind == "FULLY_CONNECTED" and w.ndim == 2 and w.shape[1] == c:
        return [(slice(None), i) for i in range(c)]
    return None


def _out_index(kind: str, i: int) -> tuple[Any, ...]:
    return (i,) if kind == "CONV_2D" else (slice(None), slice(None), slice(None), i)


def equalizable(blob: bytes) -> int:
    """How many op pairs of the float model BLOB equalization would scale (0: equalizing leaves it as it is, as on a
    network whose activations are SiLU or hard-swish, which no scale passes through)."""
    return len(_pairs(FlatModel(blob)))


def equalize_tflite(blob: bytes, samples: np.ndarray | None = None, sweeps: int = 10) -> tuple[bytes, str]:
    """BLOB equalized, and a line saying what was done."""
    f = FlatModel(blob)
    pairs = _pairs(f)
    clipped = []
    for a, _, _, _ in pairs:
        opts = f.sg.operators[a].builtinOptions
        if opts.fusedActivationFunction == _RELU6:
            opts.fusedActivationFunction = _RELU
            clipped.append(a)
    scales: dict[int, np.ndarray] = {}
    done = 0
    for done in range(1, sweeps + 1):  # noqa: B007 - reported
        moved = 0.0
        for a, b, c, masks in pairs:
            op_a, op_b = f.sg.operators[a], f.sg.operators[b]
            wa, wb = f.weight(int(op_a.inputs[1])), f.weight(int(op_b.inputs[1]))
            assert wa is not None and wb is not None
            ka = f.name(a)
            r1 = np.array([np.abs(wa[_out_index(ka, i)]).max() for i in range(c)], np.float64)
            r2 = np.array([np.abs(wb[m]).max() for m in masks], np.float64)
            s = np.where((r1 > 1e-12) & (r2 > 1e-12), np.sqrt(r1 / np.maximum(r2, 1e-12)), 1.0)
            scales[a] = scales[a] * s if a in scales else s
            for i in range(c):
                wa[_out_index(ka, i)] /= s[i]
                wb[masks[i]] *= s[i]
            f.set_weight(int(op_a.inputs[1]), wa)
            f.set_weight(int(op_b.inputs[1]), wb)
            if len(op_a.inputs) > 2 and op_a.inputs[2] >= 0:
                bias = f.weight(int(op_a.inputs[2]))
                if bias is not None:
                    f.set_weight(int(op_a.inputs[2]), bias / s)
            moved = max(moved, float(np.abs(np.log(s)).max()))
        if moved < 1e-3:
            break
    for a in sorted(clipped, reverse=True):  # from the back: inserting ops moves the later indices
        _ceiling(f, a, scales.get(a))
    f.reindex()
    return f.to_bytes(), f"equalized {len(pairs)} op pairs of the float TFLite model ({done} sweeps), " \
                         f"{len(clipped)} fused ReLU6 made ReLU + a per-channel MINIMUM"


def _pairs(f: FlatModel) -> list[tuple[int, int, int, list[tuple[slice | int, ...]]]]:
    """(first op, second op, channels, the second's weights per channel) of every pair equalization scales."""
    pairs = []
    for a, op in enumerate(f.sg.operators):
        if f.name(a) not in _CONVS or op.builtinOptions is None:
            continue
        act = getattr(op.builtinOptions, "fusedActivationFunction", None)
        if act not in (_NONE, _RELU, _RELU6):
            continue
        b = f.only_reader(int(op.outputs[0]))
        if b is not None and f.name(b) == "RELU" and act == _NONE:  # an unfused ReLU passes a positive scale too
            b = f.only_reader(int(f.sg.operators[b].outputs[0]))
        if b is not None and f.name(b) == "MEAN":  # global average pool before the classifier
            b = f.only_reader(int(f.sg.operators[b].outputs[0]))
            b = b if b is not None and f.name(b) == "FULLY_CONNECTED" else None
        if b is None or f.name(b) not in (*_CONVS, "FULLY_CONNECTED"):
            continue
        wa, wb = f.weight(int(op.inputs[1])), f.weight(int(f.sg.operators[b].inputs[1]))
        if wa is None or wb is None:
            continue
        c = wa.shape[0] if f.name(a) == "CONV_2D" else wa.shape[-1]
        masks = _in_masks(f.name(b), wb, c)
        if masks is not None:
            pairs.append((a, b, c, masks))
    return pairs


def _ceiling(f: FlatModel, a: int, scale: np.ndarray | None) -> None:
    """After op A (its fused ReLU6 now ReLU): MINIMUM(x, 6 / s_i) per channel, exact in float."""
    op = f.sg.operators[a]
    out = int(op.outputs[0])
    base = f.tensor_name(out)
    relu = f.add_like(f"{base}/relu", out)
    c = len(scale) if scale is not None else int(f.sg.tensors[out].shape[-1])
    ceiling = f.add_const(f"{base}/ceiling", (6.0 / (scale if scale is not None else np.ones(c))).astype(np.float32))
    op.outputs = np.array([relu], np.int32)
    f.sg.operators.insert(a + 1, f.make_op("MINIMUM", [relu, ceiling], [out]))


__all__ = ["equalize_tflite"]
