"""Where the trained PP-OCRv4 recognizer's ONNX w8a16 loses its CTC steps (issue 40): weights or activations, which
layers, and what bias correction takes back.

On the fp32 ONNX (pinned to 1x3x48x320, onnxruntime's pre-processing as `edgekit convert` runs it), calibrated on
bench/int8_tasks.py's 200 calibration lines, judged on its held-out lines of distributions A and B (LINES each):
- w8a16 as edgekit made it before the correction: int8 per-channel weights, int16 activations (`Plain(W8A16)`);
- its int8 weights alone (the fp32 model with each weight replaced by its dequantized int8 value), and its int16
  activations alone (the QDQ model with each weight's DequantizeLinear fed the float weight);
- its int8 weights on one group of layers at a time (the CTC classifier, the SVTR neck's Gemms: attention qkv,
  projection and MLP, the neck's convolutions, the backbone's depthwise and its other convolutions);
- w8a16 with bias correction (edgekit.quantize.onnx.bias_correct), what `--quantize w8a16` now makes.
Figures: per-step argmax agreement with the fp32 model (what greedy CTC reads) on A and B, cosine.

    python bench/w8a16_weights.py [--work DIR] [--lines 150] [--out bench/results/w8a16_weights.json]

Needs bench/results/zoo/src/ppocr_rec.onnx (`python bench/zoo.py build ppocr_rec`).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def pinned(src: Path, work: Path) -> Path:
    """SRC pinned to 1x3x48x320 and pre-processed as the convert step does, nodes named."""
    import onnx
    from onnxruntime.tools.onnx_model_utils import make_input_shape_fixed

    from edgekit.quantize.onnx.graph import name_nodes
    from edgekit.steps.onnx_quantize import _pre_process

    pre = work / "pre.onnx"
    if not pre.is_file():
        m = onnx.load(str(src))
        del m.graph.value_info[:]
        make_input_shape_fixed(m.graph, m.graph.input[0].name, [1, 3, 48, 320])
        onnx.save(m, str(work / "fixed.onnx"))
        _pre_process(work / "fixed.onnx", pre, print)
        m = onnx.load(str(pre))
        name_nodes(m)
        onnx.save(m, str(pre))
    return pre


def dequantized_weights(qdq: Any) -> dict[str, np.ndarray]:
    """Each quantized weight of the QDQ model (by its float name) as its DequantizeLinear gives it."""
    from onnx import numpy_helper as nh

    inits = {i.name: nh.to_array(i) for i in qdq.graph.initializer}
    out = {}
    for n in qdq.graph.node:
        if n.op_type == "DequantizeLinear" and n.input[0] in inits and inits[n.input[0]].ndim >= 2:
            w, s = inits[n.input[0]].astype(np.float64), inits[n.input[1]].astype(np.float64)
            z = inits[n.input[2]].astype(np.float64) if len(n.input) > 2 and n.input[2] else 0.0
            shape = [1] * w.ndim
            shape[next((a.i for a in n.attribute if a.name == "axis"), 1)] = -1
            out[n.input[0].removesuffix("_quantized")] = ((w - np.reshape(z, shape)) * np.reshape(s, shape)).astype(
                np.float32)
    return out


def groups(names: list[str], shapes: dict[str, tuple[int, ...]]) -> dict[str, set[str]]:
    neck_convs = {k for k in names if "conv2d_14" in k}  # the SVTR neck's convolutions (conv2d_142..146)
    backbone = [k for k in names if not k.startswith("linear_") and k not in neck_convs]
    depthwise = {k for k in backbone if shapes[k][1] == 1}
    return {"CTC classifier (linear_85)": {k for k in names if k.startswith("linear_85")},
            "neck Gemms (attention qkv, projection, MLP)": {k for k in names if k.startswith("linear_")
                                                            and not k.startswith("linear_85")},
            "neck convolutions": neck_convs, "backbone depthwise": depthwise,
            "backbone pointwise and stem": set(backbone) - depthwise}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "edgekit-w8a16-weights")
    ap.add_argument("--lines", type=int, default=150)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "w8a16_weights.json")
    args = ap.parse_args()
    import onnx
    from int8_tasks import BASE_SEED, CALIB, SEEDS, rec_figures, rec_lines
    from onnx import numpy_helper as nh

    from edgekit.quantize.onnx.graph import run_batches, session
    from edgekit.quantize.onnx.recipes import W8A16, Plain, QuantData

    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    pre = pinned(ROOT / "bench" / "results" / "zoo" / "src" / "ppocr_rec.onnx", work)
    base, n = BASE_SEED["ppocr_rec"], args.lines
    calib = rec_lines(CALIB, base + SEEDS["calib"], "A")
    x = np.concatenate([rec_lines(n, base + SEEDS[d], d) for d in ("A", "B")])
    name = onnx.load(str(pre), load_external_data=False).graph.input[0].name

    def run(model: Any) -> np.ndarray:
        path = work / "candidate.onnx"
        onnx.save(model, str(path))
        return run_batches(session(str(path)), x, batch=8)[0]

    fp32 = onnx.load(str(pre))
    y_ref = run(fp32)

    def figures(y: np.ndarray) -> dict[str, float]:
        a, b = rec_figures(y_ref[:n], y[:n]), rec_figures(y_ref[n:], y[n:])
        return {"A_steps": a["step_agreement"], "B_steps": b["step_agreement"],
                "cosine": rec_figures(y_ref, y)["cosine"]}

    def built(label: str, recipe: Any) -> tuple[Any, float]:
        dst, folder = work / f"{label}.onnx", work / label
        folder.mkdir(exist_ok=True)
        t0 = time.perf_counter()
        recipe.build(pre, dst, QuantData(name, calib, 1, folder))
        return onnx.load(str(dst)), round(time.perf_counter() - t0, 1)

    res: dict[str, Any] = {"lines": {"A": n, "B": n}, "calibration": CALIB}
    qdq, secs = built("w8a16", Plain(W8A16))
    res["w8a16 (int8 weights, int16 activations)"] = {**figures(run(qdq)), "build_seconds": secs}
    deq = dequantized_weights(qdq)
    shapes = {i.name: tuple(i.dims) for i in fp32.graph.initializer}

    def int8_weights_on(names: set[str]) -> Any:
        m = copy.deepcopy(fp32)
        for i in m.graph.initializer:
            if i.name in names:
                i.CopyFrom(nh.from_array(deq[i.name], i.name))
        return m

    res["int8 weights alone (float activations)"] = figures(run(int8_weights_on(set(deq))))
    floats = copy.deepcopy(qdq)  # int16 activations alone: each weight's DequantizeLinear fed the float weight
    originals = {i.name: nh.to_array(i) for i in fp32.graph.initializer}
    for node in floats.graph.node:
        weight = node.input[0].removesuffix("_quantized") if node.op_type == "DequantizeLinear" else None
        if weight in deq:
            node.op_type, node.input[:] = "Identity", [f"{weight}_float"]
            del node.attribute[:]
            floats.graph.initializer.append(nh.from_array(originals[weight], f"{weight}_float"))
    res["int16 activations alone (float weights)"] = figures(run(floats))
    for label, names in groups(sorted(deq), shapes).items():
        res[f"int8 weights on {label} alone ({len(names)} layers)"] = figures(run(int8_weights_on(names)))
    corrected, secs = built("w8a16-bias", Plain(replace(W8A16, bias_correct=True)))
    res["w8a16 with bias correction (--quantize w8a16 now)"] = {**figures(run(corrected)), "build_seconds": secs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    for label, row in res.items():
        print(f"{label}: {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
