"""Detector int8 (issues 27 and 37): how many of the fp32 boxes an int8 ONNX keeps, and how far its scores move, by
recipe variant.

Why: a YOLOv8 head's one output holds pixel coordinates and [0, 1] scores; plain int8 shares one scale
between them and loses most boxes (issue 27). Once the boxes hold, the class scores still move (issue 37): this
measures where that drift comes from. With the code the convert step runs (edgekit.quantize.onnx.recipes,
edgekit.quantize.detect_decode) and validation's own judge (edgekit.fidelity.metrics.judge_detection, IoU 0.5,
confidence 0.25):
- plain: onnxruntime's QDQ int8 of the whole graph (before issue 27);
- decode: the same with the detection decode left in float;
- decode+heads: and the head's last layers writing float (int8 weights and inputs): what every int8 recipe of a
  detector now does;
- decode+heads+scores-float: and the class branch's last convolutions wholly float (float weights and inputs: the
  ONNX form of what TFLite's int8 of a detector does to every last head layer);
- decode+heads+branch-float: and the whole class branch (every node whose output reaches only the class scores)
  in float;
- decode+heads+branch16: and the whole class branch with 16-bit activations;
- decode+heads+a16: every activation 16-bit (int8 weights): how much of the drift int8 activations make at all;
- only the trunk int8, only the head's branches int8 (each box and class branch: the nodes that feed one head
  layer only): where the drift comes from;
- each further variant named with --variants (percentile, mse, ...: that ONNX recipe with decode+heads).
The class heads are the head's last layers with as many output channels as the detector has classes (YOLOv8's cls
convolutions; its box convolutions write 4 x 16 DFL bins): a rule for this bench, not a structural finding.

Per variant: box recall and precision at the 0.25 cut against fp32, mAP50 against the labels, the mean score drift
as validation measures it (the score read on the artifact's final box at each kept object), as it was measured
before (the best-overlapping candidate's score), and at the same anchor and class (YOLOv8 layout); size; ms per
image (onnxruntime, 1 thread, batch 1, median of --runs). Calibration: the first CALIB samples of the .npz; judged
on the next VAL (never calibrated on).

    python bench/detect_int8.py MODEL.onnx DATA.npz [--calib 200] [--val 200] [--variants percentile,mse]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _class_branch(model: object, heads: tuple[str, ...], classes: int
                  ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(the class heads: last layers with CLASSES output channels, every node whose output reaches only them, every
    node whose output reaches one head layer only: the head's branches, box and class, apart from the trunk)."""
    from onnx import numpy_helper

    g = model.graph  # type: ignore[attr-defined]
    weights = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    nodes = {n.name: n for n in g.node}
    cls = tuple(h for h in heads if nodes[h].input[1] in weights and weights[nodes[h].input[1]].shape[0] == classes)
    readers: dict[str, list[object]] = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    reach: dict[str, set[str]] = {}  # node -> the heads it feeds (memoised, walking forward)

    def feeds(name: str) -> set[str]:
        if name not in reach:
            reach[name] = set()
            got: set[str] = {name} if name in heads else set()
            if name not in heads:
                for o in nodes[name].output:
                    for r in readers.get(o, []):
                        got |= feeds(r.name)  # type: ignore[attr-defined]
            reach[name] = got
        return reach[name]

    branch = tuple(n.name for n in g.node if (f := feeds(n.name)) and f <= set(cls))
    return cls, branch, tuple(n.name for n in g.node if len(feeds(n.name)) == 1)


def _anchor_drift(y_ref: np.ndarray, y: np.ndarray, classes: int, cut: float) -> float | None:
    """Mean |score change| at the same anchor and class, over the (N, 4 + C, A) anchors whose best source class
    score passes CUT."""
    s_ref, s = y_ref[:, 4:4 + classes], y[:, 4:4 + classes]
    cls = s_ref.argmax(1)
    best = s_ref.max(1)
    mask = best > cut
    if not mask.any():
        return None
    same = np.take_along_axis(s, cls[:, None], 1)[:, 0]
    return float(np.abs(same - best)[mask].mean())


def _best_overlap_drift(src: list, art_candidates: list, match_iou: float) -> float | None:
    """The drift as validation measured it before issue 37: the best-overlapping artifact candidate's score."""
    from edgekit.fidelity.detection import box_iou

    changes: list[float] = []
    for r, p in zip(src, art_candidates, strict=True):
        if not len(r) or not len(p):
            continue
        iou = box_iou(r.boxes, p.boxes)
        iou[r.classes[:, None] != p.classes[None, :]] = 0.0
        best = iou.argmax(1)
        got = iou[np.arange(len(r)), best] >= match_iou
        changes.extend(np.abs(p.scores[best[got]] - r.scores[got]).tolist())
    return float(np.mean(changes)) if changes else None


def _ms_per_image(path: Path, x: np.ndarray, runs: int) -> float:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    one = x[:1].astype(np.float32)
    for _ in range(5):
        sess.run(None, {name: one})
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, {name: one})
        times.append(time.perf_counter() - t0)
    return 1000 * float(np.median(times))


def _searched(pre: Path, model: Any, calib: np.ndarray, val: np.ndarray, y_ref: list[np.ndarray], names: list[str],
              head: Any, boxes: np.ndarray | None, meta: dict[str, str], form: Any, work: Path,
              args: argparse.Namespace) -> list[dict[str, Any]]:
    """The `mixed` search judged at ARGS.search_drift (the int8 score drift bar, patched for this run), its layer
    groups ranked by the raw output's error and by each role's own scale; each result judged on VAL."""
    from unittest import mock

    from edgekit.fidelity.kinds import THRESHOLDS
    from edgekit.fidelity.metrics import judge_detection
    from edgekit.quantize.detect_decode import role_parts
    from edgekit.quantize.onnx.graph import run_batches, session
    from edgekit.quantize.onnx.recipes import QuantData
    from edgekit.quantize.onnx.search import KindSource, quantize_onnx

    rows = []
    bar = THRESHOLDS["detection"]["int8"]
    for label, parts in (("raw output error", None), ("box and score rows apart", "roles")):
        sub = work / f"search-{parts}"
        sub.mkdir()
        out = sub / "searched.onnx"
        t0 = time.perf_counter()
        one_scale = (lambda _head: None) if parts is None else role_parts  # None: the ranking as it was
        with mock.patch.dict(bar, {"score_change": args.search_drift}), \
                mock.patch("edgekit.quantize.detect_decode.role_parts", one_scale):
            rec = quantize_onnx(pre, out, QuantData(model.graph.input[0].name, calib, 1, sub, form=form), "mixed",
                                lambda line: print(f"  {line}", flush=True), kinds=KindSource(metadata=meta))
        seconds = round(time.perf_counter() - t0, 1)
        y = run_batches(session(str(out)), val)
        idx = [names.index(o) for o in head.outputs]
        fid = judge_detection([y_ref[i] for i in idx], [y[i] for i in idx], head, precision="int8", boxes=boxes)
        row = {"variant": f"mixed at drift {args.search_drift}, ranked by {label}", "recall": fid.detection_recall,
               "precision": fid.detection_precision, "source_boxes": fid.detections,
               "score_change": fid.score_change, "map50": fid.map50, "reference_map50": fid.reference_map50,
               "met_in_search": rec.met, "macs_float_fraction": rec.macs_float_fraction,
               "float_nodes": len(rec.float_nodes), "size_mb": round(out.stat().st_size / 1e6, 3),
               "ms_per_image": round(_ms_per_image(out, val, args.runs), 3), "seconds": seconds}
        rows.append(row)
        print(", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), flush=True)
    return rows


def _searched_tflite(args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    """`edgekit convert --target tflite --quantize int8 --int8-recipe mixed --int8-budget 600` on the first CALIB + VAL
    samples, the drift bar patched to ARGS.tflite_search_drift, with layer groups walked through SiLUs and without
    (as before): the manifest's figures (validation on its own held-out split)."""
    from contextlib import nullcontext
    from unittest import mock

    from edgekit.conversion.pipeline import convert
    from edgekit.fidelity.kinds import THRESHOLDS

    arrays = np.load(args.data)
    data = work / "tflite-data.npz"
    n = args.calib + args.val
    np.savez(data, x=arrays["x"][:n], boxes=arrays["boxes"][arrays["boxes"][:, 0] < n])
    rows = []
    for label, silu in (("layer groups stop at a SiLU (before)", False), ("layer groups walk through SiLUs", True)):
        t0 = time.perf_counter()
        stop = mock.patch("edgekit.quantize.search.through_silu", lambda *a: None) if not silu else nullcontext()
        with mock.patch.dict(THRESHOLDS["detection"]["int8"], {"score_change": args.tflite_search_drift}), stop:
            result = convert(args.model, "tflite", "int8", calib=str(data), calib_size=args.calib, val_size=args.val,
                             out=work / f"tflite-{silu}", int8_recipe="mixed", int8_budget=600.0)
        (art,) = result.artifacts
        fid, rec = art.fidelity, art.extra["int8_recipe"]
        if fid is None:
            raise SystemExit(f"{art.path}: not validated ({art.failure})")
        row = {"variant": f"TFLite mixed at drift {args.tflite_search_drift}, {label}", "recall": fid.detection_recall,
               "precision": fid.detection_precision, "source_boxes": fid.detections, "score_change": fid.score_change,
               "map50": fid.map50, "reference_map50": fid.reference_map50, "met_in_search": rec.get("met"),
               "macs_float_fraction": rec.get("macs_float_fraction"), "float_nodes": len(rec.get("float_nodes") or ()),
               "size_mb": round(art.size_bytes / 1e6, 3), "seconds": round(time.perf_counter() - t0, 1)}
        rows.append(row)
        print(", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    import onnx

    from edgekit.fidelity.decide import decide_kinds
    from edgekit.fidelity.detection import decode as decode_boxes
    from edgekit.fidelity.metrics import judge_detection
    from edgekit.measure.deploy_cpu import host_cpu
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
    ap.add_argument("--runs", type=int, default=50, help="timed runs per variant (ms per image)")
    ap.add_argument("--search-drift", type=float, default=None,
                    help="also run the `mixed` search (float layers on plain) judged at this mean score drift, its "
                         "layer groups ranked each way: the raw output's error, and box and score rows apart")
    ap.add_argument("--tflite-search-drift", type=float, default=None,
                    help="also convert to TFLite int8 with --int8-recipe mixed judged at this drift, with and without "
                         "layer groups walked through SiLUs")
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
    if head is None:
        print(f"the detection output {det[0]} has no head to decode")
        return 2
    region = onnx_decode(model, det)
    macs = node_macs(model)
    share = sum(macs.get(n, 0) for n in region.nodes) / max(sum(macs.values()), 1)
    print(f"{args.model.name}: {head.format} head, {head.classes} classes; decode: {len(region.nodes)} nodes "
          f"({100 * share:.3f}% of MACs) after {len(region.head_layers)} head layers")
    rows = []
    nodes, heads = region.nodes, region.head_layers
    cls_heads, branch, branches = _class_branch(model, heads, head.classes)
    form = host_cpu().form  # the int8 form convert makes on this machine (edgekit.quantize.cpu_forms)
    everything = tuple(n.name for n in model.graph.node if n.name not in set(nodes))
    print(f"class heads {len(cls_heads)} of {len(heads)}; class branch {len(branch)} nodes "
          f"({100 * sum(macs.get(n, 0) for n in branch) / max(sum(macs.values()), 1):.2f}% of MACs); form {form.label}")
    variants: list[tuple[str, str, tuple[str, ...], tuple[str, ...], dict[str, Any]]] = [
        ("plain", "plain", (), (), {}), ("decode", "plain", nodes, (), {}), ("decode+heads", "plain", nodes, heads, {}),
        ("decode+heads+scores-float", "plain", nodes, heads, {"float_nodes": cls_heads}),
        ("decode+heads+branch-float", "plain", nodes, heads, {"float_nodes": branch}),
        ("decode+heads+branch16", "plain", nodes, heads, {"int16_nodes": branch}),
        ("decode+heads+a16", "plain", nodes, heads, {"int16_nodes": everything}),
        ("only the trunk int8", "plain", nodes, heads, {"float_nodes": branches}),
        ("only the head's branches int8", "plain", nodes, heads,
         {"float_nodes": tuple(n for n in everything if n not in set(branches))})]
    variants += [(f"decode+heads+{v}", v, nodes, heads, {}) for v in args.variants.split(",") if v]
    fp32_ms = _ms_per_image(pre, val, args.runs)
    print(f"fp32: {pre.stat().st_size / 1e6:.3f} MB, {fp32_ms:.2f} ms per image", flush=True)
    for label, recipe_name, decode, float_heads, config in variants:
        t0 = time.perf_counter()
        out = work / f"{label}.onnx"
        sub = work / label
        sub.mkdir()
        recipe = ONNX_RECIPES[recipe_name](decode=tuple(decode), heads=tuple(float_heads))
        recipe.config = replace(recipe.config, **config)
        recipe.build(pre, out, QuantData(model.graph.input[0].name, calib, 1, sub, form=form))
        seconds = round(time.perf_counter() - t0, 1)
        y = run_batches(session(str(out)), val)
        idx = [names.index(o) for o in head.outputs]
        fid = judge_detection([y_ref[i] for i in idx], [y[i] for i in idx], head, precision="int8", boxes=boxes)
        before = _best_overlap_drift(decode_boxes([y_ref[i] for i in idx], head),
                                     decode_boxes([y[i] for i in idx], head, suppress=False), head.match_iou)
        anchor = _anchor_drift(y_ref[idx[0]], y[idx[0]], head.classes, head.confidence) \
            if head.format == "yolov8" else None
        row = {"variant": label, "recall": fid.detection_recall, "precision": fid.detection_precision,
               "source_boxes": fid.detections, "box_iou": fid.box_iou, "score_change": fid.score_change,
               "score_change_best_overlap": before, "score_change_same_anchor": anchor,
               "map50": fid.map50, "reference_map50": fid.reference_map50, "cosine": fid.cosine,
               "passed": fid.passed, "failures": fid.failures, "size_mb": round(out.stat().st_size / 1e6, 3),
               "ms_per_image": round(_ms_per_image(out, val, args.runs), 3), "seconds": seconds}
        rows.append(row)
        words = ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items())
        print(words, flush=True)
    if args.search_drift is not None:
        rows += _searched(pre, model, calib, val, y_ref, names, head, boxes, meta, form, work, args)
    if args.tflite_search_drift is not None:
        rows += _searched_tflite(args, work)
    if args.out:
        args.out.write_text(json.dumps({"model": str(args.model), "calib": args.calib, "val": len(val),
                                        "decode_nodes": len(region.nodes), "decode_macs_share": share,
                                        "class_heads": list(cls_heads), "class_branch_nodes": len(branch),
                                        "form": form.label, "fp32_size_mb": round(pre.stat().st_size / 1e6, 3),
                                        "fp32_ms_per_image": round(fp32_ms, 3), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
