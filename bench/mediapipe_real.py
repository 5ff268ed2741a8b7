"""MediaPipe's float graphs on the inputs their own pipelines give them, from a folder of real photos (issue 37).

docs/results/mediapipe.md measured the six graphs on scikit-image photos: no hand in any, faces only as loose crops.
This script makes, from a folder of user photos (people with a hand and a face in view), the input each graph gets
in MediaPipe's graphs, using the float graphs themselves for the regions of interest:
- the palm (192), face (short range, 128) and pose (224) detectors: the whole photo letterboxed (keep_aspect_ratio,
  BORDER_ZERO), as palm_detection_cpu.pbtxt, face_detection_short_range.pbtxt and pose_detection_cpu.pbtxt do;
- the selfie segmenter (256): the whole photo stretched (selfie_segmentation_cpu.pbtxt: keep_aspect_ratio false);
- the hand landmark model (224): each palm the float palm detector finds (score > 0.5, NMS 0.3; up to 2 hands, as
  num_hands defaults to), made a region as palm_detection_detection_to_roi.pbtxt does (rotation from keypoint 0,
  the wrist, to 2, the middle finger's MCP, target 90 degrees; scale 2.6, shift_y -0.5, square_long), cropped and
  rotated to 224 (BORDER_REPLICATE, ImageToTensorCalculator's default);
- the face mesh (192): each face the float face detector finds, as face_detection_front_detection_to_roi.pbtxt
  (rotation from keypoint 0 to 1, the eyes, target 0 degrees; scale 1.5, square_long), cropped to 192.
The detections are decoded with edgekit's own anchors (edgekit.fidelity.anchors PRESETS, MediaPipe's
SsdAnchorsCalculator options) and greedy NMS (MediaPipe weights overlapping boxes instead: the region moves by a
pixel or two, which the crop's augmentation covers anyway).

Every photo is augmented (the photo itself, then random flips, rotations of up to 15 degrees, scales 0.75-1.25 and
brightness 0.7-1.3) before the pipeline runs on it, so the regions are the detectors' own on each variant. Calibration
and validation are split **by source photo**: a quarter of each group of photos (the file name's prefix up to the first
'_': a gesture class, or 'face'), in a seeded order, is held out, and every variant of a photo lands on the same side.
edgekit splits a .npy by a fixed permutation (edgekit.data.calibration.split_indices: the last quarter of a seed-0
permutation validates); the samples are placed so that its held-out positions hold exactly the held-out photos'
samples, so `edgekit convert --calib GRAPH.npy` calibrates only on the calibration photos and validates only on the
others. The arrays are uint8 NHWC (edgekit scales them to [0, 1]; the [-1, 1] graphs take --mean 0.5 --std 0.5).

    python bench/mediapipe_real.py inputs PHOTOS OUT [--variants 12]       # OUT/<row>.npy, OUT/inputs.json
    python bench/mediapipe_real.py convert OUT [--rows a,b] [--recipe auto] [--budget S] [--tag T] [--precision P]
    python bench/mediapipe_real.py count OUT [--tag T]                      # direct counts on the held-out samples
    python bench/mediapipe_real.py floated OUT [--row R]                    # int8 with op kinds left float

The graphs come from the mediapipe 0.10.21 wheel as bench/zoo_mediapipe.py finds it. Figures go to OUT/*.json.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from zoo_mediapipe import GRAPHS, graph

from edgekit.data.calibration import split_indices
from edgekit.fidelity.anchors import NMS_IOU, PRESETS, AnchorHead, decode_raw, preset_anchors
from edgekit.fidelity.detection import nms

SUFFIXES = (".jpg", ".jpeg", ".png")
HELD_OUT = 4  # one photo in HELD_OUT of each group validates
MAX_HANDS = 2  # hand_landmarker's num_hands default
# row -> (input side, signed input [-1, 1], how it is made: "letterbox" | "stretch" | "hand" | "face")
ROWS: dict[str, tuple[int, bool, str]] = {
    "mp_palm_detection_full": (192, False, "letterbox"),
    "mp_face_detection_short": (128, True, "letterbox"),
    "mp_pose_detection": (224, True, "letterbox"),
    "mp_selfie_segmentation": (256, False, "stretch"),
    "mp_hand_landmark_full": (224, False, "hand"),
    "mp_face_landmark": (192, False, "face"),
}


@dataclass
class Roi:
    """A rotated square region in photo pixels: centre, side, rotation (radians, MediaPipe's sense)."""

    cx: float
    cy: float
    side: float
    rotation: float


class Float:
    """A float graph run by LiteRT (XNNPACK), one sample at a time."""

    def __init__(self, path: Path) -> None:
        from ai_edge_litert.interpreter import Interpreter

        self.it = Interpreter(model_path=str(path))
        self.it.allocate_tensors()
        self.inp = self.it.get_input_details()[0]["index"]

    def __call__(self, x: np.ndarray) -> dict[str, np.ndarray]:
        self.it.set_tensor(self.inp, x[None].astype(np.float32))
        self.it.invoke()
        return {d["name"]: self.it.get_tensor(d["index"]).copy() for d in self.it.get_output_details()}


def split_photos(paths: list[Path], seed: int = 0) -> tuple[list[Path], list[Path]]:
    """(calibration photos, held-out photos): one in HELD_OUT of each name-prefix group, in a seeded order."""
    groups: dict[str, list[Path]] = {}
    for p in paths:
        groups.setdefault(p.name.split("_")[0], []).append(p)
    rng = np.random.default_rng(seed)
    cal: list[Path] = []
    val: list[Path] = []
    for name in sorted(groups):
        members = sorted(groups[name])
        order = rng.permutation(len(members))
        n_val = max(1, round(len(members) / HELD_OUT))
        val += [members[i] for i in order[:n_val]]
        cal += [members[i] for i in order[n_val:]]
    return sorted(cal), sorted(val)


def augment(im: np.ndarray, rng: np.random.Generator, k: int) -> np.ndarray:
    """Variant K of photo IM (uint8 HxWx3): 0 is the photo; others flipped, rotated, scaled and brightened."""
    from PIL import Image

    if k == 0:
        return im
    h, w = im.shape[:2]
    img = Image.fromarray(im[:, ::-1] if rng.random() < 0.5 else im)
    scale = rng.uniform(0.75, 1.25)
    img = img.rotate(rng.uniform(-15, 15), Image.Resampling.BILINEAR, fillcolor=(0, 0, 0))
    sw, sh = round(w * scale), round(h * scale)
    img = img.resize((sw, sh), Image.Resampling.BILINEAR)
    canvas = Image.new("RGB", (w, h))
    canvas.paste(img, ((w - sw) // 2, (h - sh) // 2))
    out = np.asarray(canvas, np.float32) * rng.uniform(0.7, 1.3)
    return np.clip(out, 0, 255).astype(np.uint8)


def letterbox(im: np.ndarray, size: int) -> tuple[np.ndarray, float, float, float]:
    """IM padded with zeros to a centred square and resized to SIZE: (uint8 image, square side, pad x, pad y)."""
    from PIL import Image

    h, w = im.shape[:2]
    side = max(h, w)
    px, py = (side - w) / 2, (side - h) / 2
    canvas = Image.new("RGB", (side, side))
    canvas.paste(Image.fromarray(im), (int(px), int(py)))
    return np.asarray(canvas.resize((size, size), Image.Resampling.BILINEAR)), side, int(px), int(py)


def stretch(im: np.ndarray, size: int) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.fromarray(im).resize((size, size), Image.Resampling.BILINEAR))


def scaled(x: np.ndarray, signed: bool) -> np.ndarray:
    v = x.astype(np.float32) / 255
    return (v - 0.5) / 0.5 if signed else v


def detect(model: Float, im: np.ndarray, preset: str, signed: bool) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """The float detector's detections on photo IM, in photo pixels: (box x1 y1 x2 y2, (K, 2) keypoints, score),
    best first."""
    p = PRESETS[preset]
    size = p.options.input_size_width
    x, side, px, py = letterbox(im, size)
    outs = model(scaled(x, signed))
    reg = next(v for v in outs.values() if v.shape[-1] == p.coords)[0]
    logit = next(v for v in outs.values() if v.shape[-1] == 1)[0]
    head = AnchorHead({"preset": preset}, (size, size), (size,) * 4, count=p.count)
    boxes, kps, conf, cls = decode_raw(reg, logit, preset_anchors(preset), head, p.keypoints)
    over = np.nonzero(conf > p.min_score)[0]
    keep = over[nms(boxes[over], conf[over], cls[over], NMS_IOU)]
    shift = np.array([px, py])
    return [(boxes[i] * side - np.tile(shift, 2), kps[i] * side - shift, float(conf[i])) for i in keep]


def roi(box: np.ndarray, kps: np.ndarray, start: int, end: int, target_deg: float, scale: float,
        shift_y: float) -> Roi:
    """DetectionsToRectsCalculator (rotation from keypoint START to END) then RectTransformationCalculator
    (shift_y, square_long, scale), in pixels."""
    dx, dy = kps[end] - kps[start]
    rot = math.radians(target_deg) - math.atan2(-dy, dx)
    rot = rot - 2 * math.pi * math.floor((rot + math.pi) / (2 * math.pi))
    w, h = box[2] - box[0], box[3] - box[1]
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    cx += -h * shift_y * math.sin(rot)
    cy += h * shift_y * math.cos(rot)
    return Roi(cx, cy, max(w, h) * scale, rot)


def crop(im: np.ndarray, r: Roi, size: int) -> np.ndarray:
    """The rotated square R of IM sampled to SIZE x SIZE (bilinear, edges replicated), upright as MediaPipe's
    ImageToTensorCalculator hands it to the landmark model."""
    from scipy.ndimage import map_coordinates

    t = (np.arange(size) + 0.5) / size - 0.5
    u, v = np.meshgrid(t * r.side, t * r.side)  # u across, v down the crop
    c, s = math.cos(r.rotation), math.sin(r.rotation)
    sx = r.cx + u * c - v * s - 0.5
    sy = r.cy + u * s + v * c - 0.5
    chans = [map_coordinates(im[..., ch].astype(np.float32), [sy, sx], order=1, mode="nearest") for ch in range(3)]
    return np.clip(np.rint(np.stack(chans, axis=-1)), 0, 255).astype(np.uint8)


def samples(photo: Path, variants: int, models: dict[str, Float], seed: int) -> dict[str, list[np.ndarray]]:
    """Every row's inputs from VARIANTS variants of PHOTO."""
    from PIL import Image

    rng = np.random.default_rng([seed, *photo.name.encode()])
    im0 = np.asarray(Image.open(photo).convert("RGB"))
    out: dict[str, list[np.ndarray]] = {row: [] for row in ROWS}
    for k in range(variants):
        im = augment(im0, rng, k)
        for row, (size, _, how) in ROWS.items():
            if how == "letterbox":
                out[row].append(letterbox(im, size)[0])
            elif how == "stretch":
                out[row].append(stretch(im, size))
        for box, kps, _ in detect(models["palm"], im, "palm", False)[:MAX_HANDS]:
            out["mp_hand_landmark_full"].append(crop(im, roi(box, kps, 0, 2, 90, 2.6, -0.5), 224))
        for box, kps, _ in detect(models["face"], im, "face", True)[:1]:
            out["mp_face_landmark"].append(crop(im, roi(box, kps, 0, 1, 0, 1.5, 0.0), 192))
    return out


def arrange(cal: list[np.ndarray], val: list[np.ndarray], rng: np.random.Generator) -> tuple[np.ndarray, int, int]:
    """One array whose edgekit held-out positions hold VAL's samples and whose other positions CAL's:
    (array, calibration samples, held-out samples). N = 4 x held-out, so split_indices holds out exactly them."""
    n_val = min(len(val), len(cal) // (HELD_OUT - 1))
    n = HELD_OUT * n_val
    cal_idx, val_idx = split_indices(n, n, n)
    assert len(val_idx) == n_val and len(cal_idx) == n - n_val, (n, len(val_idx))
    x = np.empty((n, *val[0].shape), np.uint8)
    x[val_idx] = np.stack([val[i] for i in np.sort(rng.choice(len(val), n_val, replace=False))])
    x[cal_idx] = np.stack([cal[i] for i in np.sort(rng.choice(len(cal), n - n_val, replace=False))])
    return x, n - n_val, n_val


def make_inputs(photos: Path, out: Path, variants: int, seed: int) -> dict[str, Any]:
    paths = sorted(p for p in photos.iterdir() if p.suffix.lower() in SUFFIXES)
    cal, val = split_photos(paths, seed)
    out.mkdir(parents=True, exist_ok=True)
    models = {"palm": Float(graph("mp_palm_detection_full", out)), "face": Float(graph("mp_face_detection_short", out))}
    pools: dict[str, dict[str, list[np.ndarray]]] = {"cal": {r: [] for r in ROWS}, "val": {r: [] for r in ROWS}}
    for side, group in (("cal", cal), ("val", val)):
        for p in group:
            for row, xs in samples(p, variants, models, seed).items():
                pools[side][row] += xs
    rng = np.random.default_rng(seed)
    record: dict[str, Any] = {"photos": len(paths), "calibration_photos": [p.name for p in cal],
                              "held_out_photos": [p.name for p in val], "variants": variants, "seed": seed, "rows": {}}
    for row in ROWS:
        graph(row, out)
        x, n_cal, n_val = arrange(pools["cal"][row], pools["val"][row], rng)
        np.save(out / f"{row}.npy", x)
        record["rows"][row] = {"samples": len(x), "calibration": n_cal, "held_out": n_val,
                               "pool": {k: len(pools[k][row]) for k in pools}}
        print(f"{row}: {len(x)} samples ({n_cal} from calibration photos, {n_val} held out)", flush=True)
    (out / "inputs.json").write_text(json.dumps(record, indent=1))
    return record


def edgekit_args(row: str, recipe: str, tag: str, budget: float | None, precision: str = "int8") -> list[str]:
    """ROW's `edgekit convert` arguments: int8 for the CPU and the Edge TPU, or w8a16 (a CPU artifact only)."""
    signed, kinds = ROWS[row][1], GRAPHS[row][3]
    targets = "tflite,edgetpu" if precision == "int8" else "tflite"
    return [f"{row}.tflite", "--target", targets, "--quantize", precision, "--calib", f"{row}.npy",
            "--int8-recipe", recipe, *(["--int8-budget", f"{budget:g}"] if budget else []),
            "--out", f"out_{row}_{tag}", "--force",
            *(["--mean", "0.5", "--std", "0.5"] if signed else []), *(a for k in kinds for a in ("--output-kind", k))]


def convert(out: Path, rows: list[str], recipe: str, tag: str, budget: float | None, precision: str = "int8") -> None:
    """edgekit convert on each row's inputs, timed, into OUT/out_<row>_<tag>; the manifest's verdicts to
    OUT/convert_<tag>.json."""
    exe = Path(sys.executable).with_name("edgekit")
    done: dict[str, Any] = {}
    path = out / f"convert_{tag}.json"
    if path.is_file():
        done = json.loads(path.read_text())
    for row in rows:
        args = edgekit_args(row, recipe, tag, budget, precision)
        t0 = time.perf_counter()
        proc = subprocess.run([str(exe), "convert", *args], cwd=out, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        (out / f"convert_{row}_{tag}.log").write_text(proc.stdout + proc.stderr)
        manifest = out / f"out_{row}_{tag}" / "manifest.json"
        arts = json.loads(manifest.read_text()).get("artifacts", []) if manifest.is_file() else []
        done[row] = {"command": "edgekit convert " + " ".join(args), "exit": proc.returncode,
                     "seconds": round(seconds, 1), "artifacts": [_verdict(a) for a in arts]}
        print(f"{row}: exit {proc.returncode}, {seconds:.0f} s", flush=True)
        for a in done[row]["artifacts"]:
            print("   ", json.dumps(a)[:600], flush=True)
        path.write_text(json.dumps(done, indent=1))


FIGURES = {  # what each kind's user reads, from an output's fidelity record
    "landmarks": ("landmark_error_px", "landmark_error_share", "landmark_p95_px", "landmark_p95_share"),
    "score": ("score_agreement", "score_change"),
    "detection": ("detection_recall", "detection_precision", "keypoint_error_px", "keypoint_error_share",
                  "detections"),
    "mask": ("mask_iou", "mask_agreement", "region_recall", "region_precision", "regions"),
    "regression": ("cosine", "relative_error"),
}


def _verdict(a: dict[str, Any]) -> dict[str, Any]:
    """An artifact's manifest record, shortened to each output's kind, figures and verdict."""
    fid = a.get("fidelity") or {}
    recipe = ((a.get("extra") or {}).get("int8_recipe") or {})
    outs = []
    for o in fid.get("outputs") or [fid]:
        f = o.get("fidelity") or o
        kind = str(o.get("kind") or f.get("kind"))
        outs.append({"output": o.get("name") or f.get("output"), "kind": kind, "passed": f.get("passed"),
                     **{k: f.get(k) for k in FIGURES.get(kind, ("cosine",)) if f.get(k) is not None},
                     "failures": f.get("failures"), "notes": f.get("notes")})
    return {"path": Path(str(a.get("path", ""))).name, "status": a.get("status"), "passed": fid.get("passed"),
            "recipe": recipe.get("chosen"), "met_in_search": recipe.get("met"),
            "trials": [(t.get("recipe"), t.get("passed")) for t in recipe.get("trials") or []], "outputs": outs}


def run_all(path: Path, x: np.ndarray, signed: bool) -> dict[str, np.ndarray]:
    """Every output of the .tflite at PATH on the uint8 samples X, dequantized, by tensor name in the order the graph
    lists them (edgekit's own runner: float in, float out)."""
    from edgekit.quantize.tflite.run import run_tflite_outputs

    got = run_tflite_outputs([path], scaled(x, signed))[0]
    if got is None:
        raise SystemExit(f"LiteRT could not run {path}")
    return got


def _by_order(ref: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """REF's outputs paired with GOT's of the same shape, nearest in value (the quantizer renames outputs)."""
    pairs = []
    for a in ref.values():
        same = [b for b in got.values() if b.shape == a.shape]
        pairs.append((a, min(same, key=lambda b: float(np.abs(b - a).mean()))))
    return pairs


def count_row(row: str, out: Path, tag: str) -> dict[str, Any]:
    """Direct counts on ROW's held-out samples for each int8 artifact of OUT/out_<row>_<tag>: anchors over 0.5
    kept by index (docs/results/mediapipe.md's count), mask IoU per sample, landmarks where the hand/face is."""
    size, signed, _ = ROWS[row]
    x = np.load(out / f"{row}.npy", mmap_mode="r")
    _, val_idx = split_indices(len(x), len(x), len(x))
    xv = np.asarray(x[val_idx])
    ref = run_all(out / f"{row}.tflite", xv, signed)
    res: dict[str, Any] = {"samples": len(xv)}
    for art in sorted(p for p in (out / f"out_{row}_{tag}").glob("*.tflite") if "int8" in p.name or "w8a16" in p.name):
        pairs = _by_order(ref, run_all(art, xv, signed))
        res[art.name] = _counts(row, pairs, size)
    return res


def _counts(row: str, pairs: list[tuple[np.ndarray, np.ndarray]], size: int) -> dict[str, Any]:
    if row in ("mp_palm_detection_full", "mp_face_detection_short", "mp_pose_detection"):
        (fa, qa) = next(p for p in pairs if p[0].shape[-1] == 1)
        r, q = fa[..., 0] > 0, qa[..., 0] > 0
        both = int((r & q).sum())
        return {"float_anchors": int(r.sum()), "int8_anchors": int(q.sum()), "kept": both / max(1, int(r.sum())),
                "precision": both / max(1, int(q.sum())), "logit_shift": float(np.abs(fa - qa).mean())}
    if row == "mp_selfie_segmentation":
        fm, qm = pairs[0][0] > 0.5, pairs[0][1] > 0.5
        axes = tuple(range(1, fm.ndim))
        inter, union = (fm & qm).sum(axis=axes), (fm | qm).sum(axis=axes)
        iou = np.where(union > 0, inter / np.maximum(union, 1), 1.0)
        pooled = float((fm & qm).sum() / max(1, (fm | qm).sum()))
        return {"mask_iou_pooled": pooled, "mask_iou_mean": float(iou.mean()), "mask_iou_median": float(np.median(iou)),
                "mask_iou_p10": float(np.percentile(iou, 10)), "agreement": float((fm == qm).mean())}
    lm_f, lm_q = pairs[0]
    pres = pairs[1][0].reshape(len(lm_f))
    present = (1 / (1 + np.exp(-pres)) if pres.min() < 0 or pres.max() > 1 else pres) > 0.5
    d = np.linalg.norm((lm_f.reshape(len(lm_f), -1, 3) - lm_q.reshape(len(lm_q), -1, 3))[..., :2], axis=-1)
    res: dict[str, Any] = {"present": int(present.sum())}
    for name, m in (("all", np.ones(len(d), bool)), ("present", present)):
        if m.any():
            res[name] = {"mean_px": float(d[m].mean()), "p95_px": float(np.percentile(d[m], 95)),
                         "mean_share": float(d[m].mean() / size), "p95_share": float(np.percentile(d[m], 95) / size)}
    if len(pairs) == 4:  # the hand model's world landmarks (metres) and handedness
        wf, wq = pairs[3]
        we = np.linalg.norm((wf - wq).reshape(len(wf), -1, 3), axis=-1)
        res["world_error_m"] = {"all": float(we.mean()),
                                "present": float(we[present].mean()) if present.any() else None}
        hf, hq = pairs[2][0].ravel() > 0.5, pairs[2][1].ravel() > 0.5
        res["handedness_flips_present"] = int((hf != hq)[present].sum())
    return res


def count(out: Path, rows: list[str], tag: str) -> None:
    path = out / f"count_{tag}.json"
    done = json.loads(path.read_text()) if path.is_file() else {}
    for row in rows:
        done[row] = count_row(row, out, tag)
        print(row, json.dumps(done[row]), flush=True)
        path.write_text(json.dumps(done, indent=1))


def floated(out: Path, row: str) -> dict[str, Any]:
    """Where ROW's int8 loss is: the plain int8 model (one calibration on 200 of the calibration photos' samples, as
    edgekit's) with each op kind, and the first and last ops, left float by the quantizer's denylist; `_counts` on
    the held-out samples for each. Written to OUT/floated_<row>.json."""
    import tensorflow as tf

    from edgekit.quantize.tflite.recipes import TfliteJob, calibrated, quantized
    from edgekit.tflite.custom_ops import rewrite_custom_ops
    from edgekit.tflite.float_weights import dense_weights, float32_weights
    from edgekit.tflite.model import read_tflite

    size, signed, _ = ROWS[row]
    x = np.load(out / f"{row}.npy", mmap_mode="r")
    cal_idx, _ = split_indices(len(x), 200, len(x))
    _, val_idx = split_indices(len(x), len(x), len(x))
    blob, _ = float32_weights(dense_weights(rewrite_custom_ops((out / f"{row}.tflite").read_bytes()).blob)[0])
    work = out / f"floated_{row}"
    work.mkdir(exist_ok=True)
    (work / "float32.tflite").write_bytes(blob)
    job = TfliteJob(tf, Path(), "serving_default", scaled(np.asarray(x[cal_idx]), signed), 1, "float32", work, print,
                    cache=work / "cache", float_tflite=blob)
    cal = calibrated(job)
    ops = [(op.op, fm.tensors[op.outputs[0]].name) for fm in [read_tflite(work / "float32.tflite")] for op in fm.ops
           if op.outputs]
    variants: dict[str, tuple[str, ...]] = {"plain": ()}
    for kind in sorted({k for k, _ in ops}):
        variants[f"every {kind}"] = tuple(n for k, n in ops if k == kind)
    for k in (3, 9, 19):
        variants[f"the first {k} ops"] = tuple(n for _, n in ops[:k])
    for k in (22, 42):
        variants[f"the last {k} ops"] = tuple(n for _, n in ops[-k:])
    xv = np.asarray(x[val_idx])
    ref = run_all(out / f"{row}.tflite", xv, signed)
    res: dict[str, Any] = {"ops": len(ops)}
    for label, deny in variants.items():
        (work / "q.tflite").write_bytes(quantized(job, cal, deny))
        res[label] = {"float_ops": len(deny), **_counts(row, _by_order(ref, run_all(work / "q.tflite", xv, signed)),
                                                          size)}
        print(label, json.dumps(res[label]), flush=True)
    (out / f"floated_{row}.json").write_text(json.dumps(res, indent=1))
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("inputs")
    a.add_argument("photos", type=Path)
    a.add_argument("out", type=Path)
    a.add_argument("--variants", type=int, default=12)
    a.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("convert")
    c.add_argument("out", type=Path)
    c.add_argument("--rows", default=",".join(ROWS))
    c.add_argument("--recipe", default="auto")
    c.add_argument("--budget", type=float, help="--int8-budget (default: edgekit's)")
    c.add_argument("--tag", help="names the run's folders (default: the recipe)")
    c.add_argument("--precision", choices=("int8", "w8a16"), default="int8")
    n = sub.add_parser("count")
    n.add_argument("out", type=Path)
    n.add_argument("--rows", default=",".join(ROWS))
    n.add_argument("--tag", default="auto")
    f = sub.add_parser("floated")
    f.add_argument("out", type=Path)
    f.add_argument("--row", default="mp_palm_detection_full")
    args = ap.parse_args()
    if args.cmd == "inputs":
        make_inputs(args.photos, args.out, args.variants, args.seed)
    elif args.cmd == "convert":
        convert(args.out, [r for r in args.rows.split(",") if r], args.recipe, args.tag or args.recipe, args.budget,
                args.precision)
    elif args.cmd == "floated":
        floated(args.out, args.row)
    else:
        count(args.out, [r for r in args.rows.split(",") if r], args.tag)


if __name__ == "__main__":
    main()
