"""Detector int8 (issue 27): how many of the fp32 boxes an int8 ONNX keeps, by recipe variant.

Why: a YOLOv8 head's one output holds pixel coordinates and [0, 1] scores; plain int8 shares one scale
between them and loses most boxes. This measures, with the code the convert step runs
(edgekit.quantize.onnx.recipes, edgekit.quantize.detect_decode) and validation's own judge
(edgekit.fidelity.metrics.judge_detection, IoU 0.5, confidence 0.25):
- plain: onnxruntime's QDQ int8 of the whole graph (before issue 27);
- decode: the same with the detection decode left in float;
- decode+heads: and the head's last layers writing float (int8 weights and inputs): what every int8 recipe of a
  detector now does;
- each further variant named with --variants (percentile, mse, ...: that ONNX recipe with both).
Calibration: the first CALIB samples of the .npz; judged on the next VAL (never calibrated on).

    python bench/detect_int8.py MODEL.onnx DATA.npz [--calib 200] [--val 200] [--variants percentile,mse]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    import onnx

    from edgekit.fidelity.decide import decide_kinds
    from edgekit.fidelity.metrics import judge_detection
    from edgekit.quantize.detect_decode import onnx_decode
    from edgekit.quantize.onnx.graph import name_nodes, node_macs, run_batches, session
    from edgekit.quantize.onnx.prep import unshare_biases
    from edgekit.quantize.onnx.recipes import ONNX_RECIPES, QuantData
    from edgekit.steps.onnx_quantize import _pre_process

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("data", type=Path)
    ap.add_argument("--calib", type=int, default=200)
    ap.add_argument("--val", type=int, default=200)
    ap.add_argument("--variants", default="")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    arrays = np.load(args.data)
    if isinstance(arrays, np.ndarray):  # a .npy of samples, no labelled boxes
        x, boxes = arrays.astype(np.float32), None
    else:
        x, boxes = arrays["x"].astype(np.float32), arrays["boxes"] if "boxes" in arrays.files else None
    calib, val = x[:args.calib], x[args.calib:args.calib + args.val]
    if boxes is not None:  # the held-out images' labelled boxes, renumbered from 0
        keep = (boxes[:, 0] >= args.calib) & (boxes[:, 0] < args.calib + len(val))
        boxes = boxes[keep].copy()
        boxes[:, 0] -= args.calib
    source = onnx.load(str(args.model))
    meta = {p.key: p.value for p in source.metadata_props}
    work = Path(tempfile.mkdtemp(prefix="detect_int8-"))
    pre = work / "pre.onnx"
    _pre_process(args.model, pre, print)
    model = onnx.load(str(pre))
    name_nodes(model)
    unshare_biases(model)
    onnx.save(model, str(pre))
    names = [o.name for o in model.graph.output]
    y_ref = run_batches(session(str(pre)), val)
    choices = decide_kinds(dict(zip(names, y_ref, strict=True)), "NCHW", None, meta)
    det = [n for n in names if choices[n].kind == "detection"]
    if not det:
        print(f"no detection output: {[(n, c.kind, c.reason) for n, c in choices.items()]}")
        return 2
    head = choices[det[0]].head
    region = onnx_decode(model, det)
    macs = node_macs(model)
    share = sum(macs.get(n, 0) for n in region.nodes) / max(sum(macs.values()), 1)
    print(f"{args.model.name}: {head.format} head, {head.classes} classes; decode: {len(region.nodes)} nodes "
          f"({100 * share:.3f}% of MACs) after {len(region.head_layers)} head layers")
    rows = []
    nodes, heads = region.nodes, region.head_layers
    variants = [("plain", "plain", (), ()), ("decode", "plain", nodes, ()), ("decode+heads", "plain", nodes, heads)]
    variants += [(f"decode+heads+{v}", v, nodes, heads) for v in args.variants.split(",") if v]
    for label, recipe_name, decode, float_heads in variants:
        t0 = time.perf_counter()
        out = work / f"{label}.onnx"
        sub = work / label
        sub.mkdir()
        recipe = ONNX_RECIPES[recipe_name](decode=tuple(decode), heads=tuple(float_heads))
        recipe.build(pre, out, QuantData(model.graph.input[0].name, calib, 1, sub))
        y = run_batches(session(str(out)), val)
        idx = [names.index(o) for o in head.outputs]
        fid = judge_detection([y_ref[i] for i in idx], [y[i] for i in idx], head, precision="int8", boxes=boxes)
        row = {"variant": label, "recall": fid.detection_recall, "precision": fid.detection_precision,
               "source_boxes": fid.detections, "box_iou": fid.box_iou, "score_change": fid.score_change,
               "map50": fid.map50, "reference_map50": fid.reference_map50, "cosine": fid.cosine,
               "passed": fid.passed, "seconds": round(time.perf_counter() - t0, 1)}
        rows.append(row)
        words = ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items())
        print(words, flush=True)
    if args.out:
        args.out.write_text(json.dumps({"model": str(args.model), "calib": args.calib, "val": len(val),
                                        "decode_nodes": len(region.nodes), "decode_macs_share": share,
                                        "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
