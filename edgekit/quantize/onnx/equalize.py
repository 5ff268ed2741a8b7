"""Cross-layer equalization (Nagel et al., "Data-Free Quantization Through Weight Equalization and Bias
Correction", ICCV 2019) as a pass over an fp32 ONNX graph, with data-driven bias absorption.

For two convolutions in a row, A -> act -> B, where act is positively homogeneous (ReLU, or nothing),
scaling A's output channel i by 1/s_i and B's input channel i by s_i leaves the function unchanged;
choosing s_i = sqrt(r_A,i / r_B,i) (r: the channel's weight range) gives both the same range
sqrt(r_A,i * r_B,i), so no channel is crushed by a neighbour 100x wider when the tensor between them
is quantized with one scale. Chains longer than two are swept until the scales settle.

ReLU6 (Clip 0..6) is not homogeneous: ReLU6(x / s) != ReLU6(x) / s. AIMET replaces it by ReLU, which
changes the function wherever an activation exceeds 6: on a MobileNetV2 with BatchNorm statistics from
photos and digits as inputs, that alone moved the logits by more than half their range. Here, with
`relu6="clip"` (the default), the Clip becomes ReLU followed by a per-channel Min(x, 6 / s_i): exact in
float, and the ceiling stays where it was in each channel's own units (onnxruntime leaves the Min in
float between the quantized layers). `relu6="replace"` is AIMET's way; `relu6="keep"` skips those pairs.
BatchNorm is already folded into the convolutions by onnxruntime's pre-processing, which runs first.

Bias absorption: where a channel's pre-activation never falls below c_i > 0 on the calibration data,
ReLU(h_i) = ReLU(h_i - c_i) + c_i there, so c_i moves from A's bias into B's (B must not pad, or the
border would see the zero padding unshifted). Equalization can blow a channel's bias up by 1/s_i;
absorption takes the part that only shifts the range back out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from edgekit.quantize.onnx.graph import Graph, run_batches, session, with_outputs

_EPS = 1e-12


@dataclass
class Pair:
    a: Any  # Conv writing the channels
    act: Any | None  # Relu / Clip between them, or None
    b: Any  # Conv (or depthwise Conv) reading them
    scale: np.ndarray | None = None  # the product of the s_i applied so far, per channel


@dataclass(frozen=True)
class EqualizeReport:
    pairs: int
    relu6_replaced: int
    absorbed_channels: int
    sweeps: int
    relu6_mode: str = "clip"


def _is_relu6(g: Graph, node: Any) -> bool:
    if node.op_type != "Clip":
        return False
    lo = g.const_scalar(node, 1) if len(node.input) > 1 else g.attr(node, "min")
    hi = g.const_scalar(node, 2) if len(node.input) > 2 else g.attr(node, "max")
    return lo is not None and abs(float(lo)) < 1e-9 and hi is not None and abs(float(hi) - 6.0) < 1e-6


def _conv_ok(g: Graph, node: Any, gemm: bool = False) -> bool:
    kinds = ("Conv", "Gemm") if gemm else ("Conv",)
    if node.op_type == "Gemm" and (g.attr(node, "transA", 0) or g.inits.get(node.input[1], np.zeros(0)).ndim != 2):
        return False
    return (node.op_type in kinds and len(node.input) >= 2 and node.input[1] in g.inits
            and (len(node.input) < 3 or not node.input[2] or node.input[2] in g.inits)
            and len(g.consumers.get(node.input[1], [])) == 1)


def find_pairs(g: Graph, relu6: str = "clip") -> list[Pair]:
    """Conv -> [Relu | ReLU6] -> Conv chains whose middle tensor nothing else reads, and the classifier's
    Conv -> [act] -> GlobalAveragePool -> Flatten -> Gemm (averaging is linear and keeps channels apart)."""
    pairs = []
    for a in g.model.graph.node:
        if not _conv_ok(g, a):
            continue
        nxt = g.only_reader(a.output[0])
        act = None
        if nxt is not None and (nxt.op_type == "Relu" or (relu6 in ("clip", "replace") and _is_relu6(g, nxt))):
            act, nxt = nxt, g.only_reader(nxt.output[0])
        if nxt is not None and nxt.op_type == "GlobalAveragePool":
            nxt = g.only_reader(nxt.output[0])
            nxt = g.only_reader(nxt.output[0]) if nxt is not None and nxt.op_type == "Flatten" else None
            if nxt is None or nxt.op_type != "Gemm":
                continue
        if nxt is None or not _conv_ok(g, nxt, gemm=True):
            continue
        c = g.inits[a.input[1]].shape[0]
        if _in_channels(g, nxt) != c:
            continue
        pairs.append(Pair(a, act, nxt))
    return pairs


def _in_channels(g: Graph, b: Any) -> int:
    w = g.inits[b.input[1]]
    if b.op_type == "Gemm":
        return int(w.shape[1] if g.attr(b, "transB", 0) else w.shape[0])
    return int(w.shape[1]) * int(g.attr(b, "group", 1))


def _b_mask(g: Graph, b: Any) -> np.ndarray:
    """For each input channel of B, a boolean mask over B's weight of the entries that read it: [C, *wb.shape]."""
    wb = g.inits[b.input[1]]
    if b.op_type == "Gemm":
        trans = bool(g.attr(b, "transB", 0))
        c = wb.shape[1] if trans else wb.shape[0]
        mask = np.zeros((c, *wb.shape), dtype=bool)
        for i in range(c):
            if trans:
                mask[i, :, i] = True
            else:
                mask[i, i, :] = True
        return mask
    return _b_index(wb, int(g.attr(b, "group", 1)))


def _b_index(wb: np.ndarray, groups: int) -> np.ndarray:
    cout, cin_g = wb.shape[0], wb.shape[1]
    c = cin_g * groups
    out_per_group = cout // groups
    mask = np.zeros((c, *wb.shape), dtype=bool)
    for i in range(c):
        grp, j = divmod(i, cin_g)
        mask[i, grp * out_per_group:(grp + 1) * out_per_group, j] = True
    return mask


def _scale_pair(g: Graph, p: Pair) -> float:
    """Equalize one pair in place; returns the largest |log s_i| applied (0 when already equal)."""
    wa, wb = g.inits[p.a.input[1]].astype(np.float64), g.inits[p.b.input[1]].astype(np.float64)
    mask = _b_mask(g, p.b)
    r1 = np.abs(wa.reshape(wa.shape[0], -1)).max(axis=1)
    r2 = np.array([np.abs(wb[m]).max() if m.any() else 0.0 for m in mask])
    ok = (r1 > _EPS) & (r2 > _EPS)
    s = np.ones_like(r1)
    s[ok] = np.sqrt(r1[ok] / r2[ok])
    wa = wa / s.reshape(-1, *([1] * (wa.ndim - 1)))
    scale_b = np.ones_like(wb)
    for i in np.nonzero(ok)[0]:
        scale_b[mask[i]] = s[i]
    p.scale = s if p.scale is None else p.scale * s
    g.set_init(p.a.input[1], (wa).astype(np.float32))
    g.set_init(p.b.input[1], (wb * scale_b).astype(np.float32))
    if len(p.a.input) > 2 and p.a.input[2]:
        g.set_init(p.a.input[2], (g.inits[p.a.input[2]].astype(np.float64) / s).astype(np.float32))
    return float(np.abs(np.log(s)).max()) if len(s) else 0.0


def _relu6_to_relu(g: Graph, node: Any) -> None:
    del node.input[1:]
    for k in reversed(range(len(node.attribute))):
        del node.attribute[k]
    node.op_type = "Relu"


def _per_channel_ceiling(g: Graph, p: Pair) -> None:
    """After the ReLU that replaced P's ReLU6: Min(x, 6 / s_i), channel i's ceiling in its new units."""
    from onnx import helper

    assert p.act is not None and p.scale is not None
    out = p.act.output[0]
    relu_out = f"{out}_relu"
    p.act.output[0] = relu_out
    shape = [1, len(p.scale)] + ([1, 1] if p.b.op_type == "Conv" else [])
    ceiling = f"{out}_ceiling"
    g.set_init(ceiling, (6.0 / p.scale).reshape(shape).astype(np.float32))
    graph = g.model.graph
    for vi in list(graph.value_info):  # the quantizer calibrates only tensors whose type it knows
        if vi.name == out:
            copy = graph.value_info.add()
            copy.CopyFrom(vi)
            copy.name = relu_out
    nodes = graph.node
    k = next(i for i, n in enumerate(nodes) if n is p.act or n.name == p.act.name)
    nodes.insert(k + 1, helper.make_node("Min", [relu_out, ceiling], [out], name=f"{p.act.name}_ceiling"))


def _absorb(g: Graph, pairs: list[Pair], x: np.ndarray) -> int:
    """Move the always-positive part of each channel's pre-activation from A's bias into B's."""
    usable = [p for p in pairs if p.act is not None and p.act.op_type == "Relu" and len(p.a.input) > 2
              and p.b.op_type == "Conv" and p.b.input[0] == p.act.output[0]
              and p.a.input[2] and not any(int(v) for v in (g.attr(p.b, "pads") or [0])) and
              g.attr(p.b, "auto_pad", b"NOTSET") in (b"NOTSET", "NOTSET", b"VALID", "VALID")]
    if not usable:
        return 0
    names = [p.a.output[0] for p in usable]
    outs = run_batches(session(with_outputs(g.model, names), optimize=False), x, names, batch=16)
    moved = 0
    for p, h in zip(usable, outs, strict=True):
        lo = h.min(axis=tuple(k for k in range(h.ndim) if k != 1))
        c = np.maximum(lo, 0.0).astype(np.float64)
        if not (c > 0).any():
            continue
        wb = g.inits[p.b.input[1]].astype(np.float64)
        mask = _b_mask(g, p.b)
        shift = np.zeros(wb.shape[0])
        for i in np.nonzero(c > 0)[0]:
            shift += (wb * mask[i]).reshape(wb.shape[0], -1).sum(axis=1) * c[i]
        g.set_init(p.a.input[2], (g.inits[p.a.input[2]] - c).astype(np.float32))
        bname = p.b.input[2] if len(p.b.input) > 2 and p.b.input[2] else None
        if bname is None:
            bname = f"{p.b.name or p.b.output[0]}_absorbed_bias"
            while len(p.b.input) < 3:
                p.b.input.append("")
            p.b.input[2] = bname
            g.set_init(bname, np.zeros(wb.shape[0], np.float32))
        g.set_init(bname, (g.inits[bname] + shift).astype(np.float32))
        moved += int((c > 0).sum())
    return moved


def equalize(model: Any, relu6: str = "clip", absorb_with: np.ndarray | None = None,
             max_sweeps: int = 10) -> EqualizeReport:
    """Equalize MODEL (an onnx ModelProto, changed in place); with ABSORB_WITH samples, absorb biases too."""
    g = Graph(model)
    pairs = find_pairs(g, relu6)
    clipped = [p for p in pairs if p.act is not None and p.act.op_type == "Clip"]
    for p in clipped:
        _relu6_to_relu(g, p.act)
    sweeps = 0
    for sweeps in range(1, max_sweeps + 1):  # noqa: B007 - the count is reported
        if max((_scale_pair(g, p) for p in pairs), default=0.0) < 1e-3:
            break
    if relu6 == "clip":
        for p in clipped:
            _per_channel_ceiling(g, p)
        g = Graph(model)  # the readers changed
    absorbed = _absorb(g, pairs, absorb_with) if absorb_with is not None else 0
    return EqualizeReport(pairs=len(pairs), relu6_replaced=len(clipped), absorbed_channels=absorbed, sweeps=sweeps,
                          relu6_mode=relu6)


__all__ = ["EqualizeReport", "Pair", "equalize", "find_pairs"]
