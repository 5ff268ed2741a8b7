"""Bias correction (Nagel et al. 2019, section 4.2), with the input means measured on the calibration samples.

Quantizing a layer's weights shifts the mean of its output: with W~ the int8 weights as dequantized,
E[W~ x] - E[W x] = (W~ - W) E[x], a bias error per output channel that the next layers amplify
(depthwise convolutions, with few weights per channel, suffer most). E[x] is each input channel's mean
in the quantized model itself (what the layer actually reads), so the shift of every layer is its own:
correcting them all at once does not count an upstream shift twice. For a 2-D Conv, E[x] is taken per kernel
tap (edgekit.quantize.tap_means, shared with the TFLite route): zero padding makes a border tap read less than
the channel mean, so with per-tap means the shift is the layer's exact mean output shift. The shift is
subtracted from the float bias and the model is quantized again: the weights' int8 grids do not move (they
depend on the weights only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from edgekit.quantize.onnx.graph import Graph, run_batches, session, with_outputs
from edgekit.quantize.tap_means import conv_shift, same_pads, tap_means

MAX_SAMPLES = 64  # the mean shift settles well before this; more only costs time


def _targets(g: Graph, skip: set[str]) -> list[Any]:
    out = []
    for n in g.model.graph.node:
        if n.op_type not in ("Conv", "Gemm") or n.name in skip or len(n.input) < 2 or n.input[1] not in g.inits:
            continue
        if n.op_type == "Gemm" and (g.attr(n, "transA", 0) or (len(n.input) > 2 and n.input[2]
                                                                and g.inits.get(n.input[2], np.zeros(0)).ndim != 1)):
            continue
        out.append(n)
    return out


def _dequantized_weight(qdq: Any, qg: Graph, qnode: Any) -> np.ndarray | None:
    """The int8 weight of QNODE as the quantized model computes with it: (q - zero_point) * scale."""
    dq = qg.producer.get(qnode.input[1])
    if dq is None or dq.op_type != "DequantizeLinear" or dq.input[0] not in qg.inits:
        return None
    q = qg.inits[dq.input[0]].astype(np.float64)
    scale = qg.inits[dq.input[1]].astype(np.float64)
    zp = qg.inits[dq.input[2]].astype(np.float64) if len(dq.input) > 2 and dq.input[2] else np.zeros_like(scale)
    axis = int(qg.attr(dq, "axis", 1))
    if scale.ndim == 1 and scale.size > 1:
        shape = [1] * q.ndim
        shape[axis] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return (q - zp) * scale


def _taps(node: Any, g: Graph, kernel: tuple[int, int], total: np.ndarray, samples: int) -> np.ndarray | None:
    """[kh, kw, C]: what each tap of 2-D Conv NODE reads on average (edgekit.quantize.tap_means), from TOTAL, its
    input summed over SAMPLES ([C, H, W]), with ONNX's pads, strides, dilations and auto_pad."""
    strides = tuple(int(v) for v in g.attr(node, "strides", [1, 1]))
    dilations = tuple(int(v) for v in g.attr(node, "dilations", [1, 1]))
    auto = g.attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    if total.ndim != 3 or len(strides) != 2 or len(dilations) != 2:
        return None
    sizes = total.shape[1:]
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = tuple(same_pads(n, k, s, d, lower=auto == "SAME_LOWER")
                     for n, k, s, d in zip(sizes, kernel, strides, dilations, strict=True))
    elif auto == "VALID":
        pads = ((0, 0), (0, 0))
    else:  # [top, left, bottom, right]
        p = [int(v) for v in g.attr(node, "pads", [0, 0, 0, 0])]
        pads = ((p[0], p[2]), (p[1], p[3]))
    return tap_means(total.transpose(1, 2, 0), samples, kernel, (strides[0], strides[1]),
                     (dilations[0], dilations[1]), (pads[0], pads[1]))


def _shift(node: Any, g: Graph, dw: np.ndarray, total: np.ndarray, samples: int) -> np.ndarray | None:
    """(W~ - W) E[x] per output channel from TOTAL, the layer's input summed over SAMPLES: E[x] per kernel tap for a
    2-D Conv (zero padding and strides make a border tap read less than the channel mean), per input channel
    otherwise."""
    if node.op_type == "Conv" and dw.ndim == 4:
        taps = _taps(node, g, (int(dw.shape[2]), int(dw.shape[3])), total, samples)
        return None if taps is None else conv_shift(dw.transpose(0, 2, 3, 1), taps)
    mean_in = total.reshape(total.shape[0], -1).sum(axis=1) / (samples * (total.size // total.shape[0]))
    if node.op_type == "Gemm":
        m = dw if g.attr(node, "transB", 0) else dw.T  # [out, in]
        return m @ mean_in if m.shape[1] == mean_in.size else None
    groups = int(g.attr(node, "group", 1))
    cout, cin_g = dw.shape[0], dw.shape[1]
    if cin_g * groups != mean_in.size:
        return None
    per = dw.reshape(cout, cin_g, -1).sum(axis=2)  # [out, in per group]
    out_per_group = cout // groups
    return np.array([per[o] @ mean_in[(o // out_per_group) * cin_g:(o // out_per_group + 1) * cin_g]
                     for o in range(cout)])


def _channels(w: np.ndarray, node: Any, g: Graph) -> int:
    if node.op_type == "Conv":
        return int(w.shape[0])
    return int(w.shape[0] if g.attr(node, "transB", 0) else w.shape[1])


def correct_biases(src: Path, dst: Path, data: Any, config: Any) -> Path:
    """Correct the biases of SRC (float) for the shift its quantized twin DST shows; re-quantize DST.

    Returns the corrected float model (the one DST is now quantized from).
    """
    import onnx

    from edgekit.quantize.onnx.ort import quantize

    model, qdq = onnx.load(str(src)), onnx.load(str(dst))
    g, qg = Graph(model), Graph(qdq)
    qnodes = {n.name: n for n in qdq.graph.node}
    targets = [n for n in _targets(g, set(config.excluded())) if n.name in qnodes]
    found = {n.name: _dequantized_weight(qdq, qg, qnodes[n.name]) for n in targets}
    weights = {name: w for name, w in found.items() if w is not None}  # the ones with constant weights
    targets = [n for n in targets if n.name in weights]
    if not targets:
        data.notes.append("bias correction: no quantized Conv/Gemm with constant weights")
        return src
    names = list(dict.fromkeys(qnodes[n.name].input[0] for n in targets))
    seen = run_batches(session(with_outputs(qdq, names), optimize=False), data.samples[:MAX_SAMPLES], names, 16)
    totals = {name: x.astype(np.float64).sum(axis=0) for name, x in zip(names, seen, strict=True)}  # [C, ...]
    samples = int(seen[0].shape[0])
    worst, done = 0.0, 0
    for node in targets:
        w = g.inits[node.input[1]].astype(np.float64)
        shift = _shift(node, g, weights[node.name] - w, totals[qnodes[node.name].input[0]], samples)
        c = _channels(w, node, g)
        if shift is None or shift.shape != (c,):
            continue
        bname = node.input[2] if len(node.input) > 2 and node.input[2] else None
        if bname is None:
            bname = f"{node.name}_corrected_bias"
            while len(node.input) < 3:
                node.input.append("")
            node.input[2] = bname
            g.set_init(bname, np.zeros(c, np.float32))
        if len(g.consumers.get(bname, [])) > 1:  # a shared bias cannot be corrected for one reader
            continue
        g.set_init(bname, (g.inits[bname].astype(np.float64) - shift).astype(np.float32))
        worst, done = max(worst, float(np.abs(shift).max())), done + 1
    out = data.work / f"{src.stem}.biascorrected.onnx"
    onnx.save(model, str(out))
    quantize(out, dst, data, config)
    data.notes.append(f"bias correction: {done} layers, largest shift removed {worst:.4g}")
    return out


__all__ = ["correct_biases"]
