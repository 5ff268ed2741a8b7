"""Trained non-classifier rows of bench/int8_recovery.py (issue 29): each model's inputs, its held-out splits in
two input distributions, and the figures its user reads.

Models (trained weights from public wheels, no download at run time beyond `pip download` of the wheel):
- `ppocr_rec`: PP-OCRv4's text-line recognizer (rapidocr-onnxruntime 1.4.4's ONNX, CTC output (N, 40, 6625)),
  pinned to 3x48x320. Judged by the per-step argmax agreement (what greedy CTC decoding reads; the `sequence`
  kind) and by whole lines read the same.
- `ppocr_det`: PP-OCRv4's DB text detector (same wheel, a (N, 1, H, W) sigmoid map), pinned to 3x320x320. Its
  user thresholds the map at 0.3 and takes the connected regions: judged as the `mask` kind judges it
  (edgekit.fidelity.mask, `--mask-threshold 0.3`): the thresholded mask's pixel agreement and the fp32 regions
  matched by an int8 region at IoU >= 0.5 (recall and precision), cosine recorded.
- `mtcnn_pnet`: MTCNN's P-Net (facenet-pytorch's weights, bench/zoo_mtcnn.py), 64x64 scenes. Its user keeps the
  cells with p(face) > 0.6 as proposals: judged by those cells' agreement and IoU, cosine recorded.

Inputs: distribution A is what the zoo renders (bench/zoo_tasks.py: PIL's default font, dark ink on a light
page; bench/zoo_mtcnn.py: scenes cut from scikit-image's photos); distribution B is another font, size,
background and noise (DejaVu Serif/Mono/Sans Bold where the system has them, grey textured or dark backgrounds,
light ink on some, Gaussian noise and blur; for P-Net the same kind of scenes under another exposure, contrast and
sensor noise). The calibration .npz holds distribution A only (calibration seeds); the held-out sets are other
seeds of A and B, which neither the recipes nor the search ever see.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HELD_OUT = {"ppocr_rec": 300, "ppocr_det": 60, "mtcnn_pnet": 300}  # per distribution; --held-out N asks for more
BOOTSTRAP_DRAWS = 2000  # resamples of the held-out inputs for the paired ONNX - TFLite interval
CALIB = 200  # the --calib-size: auto judges on half of them and calibrates on the other half
FONTS_B = ("DejaVuSerif.ttf", "DejaVuSansMono.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerifCondensed-Italic.ttf")
FONT_DIRS = (Path("/usr/share/fonts/truetype/dejavu"), Path("/usr/share/fonts/dejavu"))
DET_THRESHOLD = 0.3  # DB's binarisation threshold
PNET_THRESHOLD = 0.6  # MTCNN's first-stage threshold


# ----------------------------------------------------------------------------- distribution B


def _font_b(rng: np.random.Generator, size: int) -> Any:
    from PIL import ImageFont

    found = [d / f for d in FONT_DIRS for f in FONTS_B if (d / f).is_file()]
    if not found:  # no DejaVu here: PIL's default font, at other sizes; B still differs by background and noise
        return ImageFont.load_default(size=size)
    return ImageFont.truetype(str(found[int(rng.integers(len(found)))]), size)


def _background(rng: np.random.Generator, h: int, w: int) -> tuple[np.ndarray, tuple[int, int, int]]:
    """A grey or dark textured background (h, w, 3) float, and an ink colour that reads on it."""
    dark = rng.random() < 0.3
    base = rng.integers(15, 70) if dark else rng.integers(120, 200)
    grad = np.linspace(0, rng.uniform(-40, 40), w)[None, :, None]
    tex = rng.normal(0, 6, (h // 4 + 1, w // 4 + 1, 1)).repeat(4, 0).repeat(4, 1)[:h, :w]
    bg = base + grad + tex + rng.integers(-12, 12, 3)[None, None, :]
    ink = tuple(int(v) for v in (rng.integers(200, 256, 3) if dark else rng.integers(0, 60, 3)))
    return bg, ink


def _finish(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Sensor noise and a slight blur on a float image: uint8."""
    from PIL import Image, ImageFilter

    noisy = np.clip(img + rng.normal(0, rng.uniform(4, 10), img.shape), 0, 255).astype(np.uint8)
    return np.asarray(Image.fromarray(noisy).filter(ImageFilter.GaussianBlur(rng.uniform(0.2, 0.9))))


def render_b(text: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """TEXT in distribution B (another font, background, ink, noise): (h, w, 3) uint8 RGB, cropped to the ink."""
    from PIL import Image, ImageDraw

    font = _font_b(rng, size)
    x0, y0, x1, y1 = font.getbbox(text)
    pad = max(3, size // 4)
    h, w = y1 - y0 + 2 * pad, x1 - x0 + 2 * pad
    bg, ink = _background(rng, h, w)
    mask = Image.new("L", (w, h), 0)
    ImageDraw.Draw(mask).text((pad - x0, pad - y0), text, font=font, fill=255)
    a = np.asarray(mask, np.float32)[..., None] / 255.0
    return _finish(bg * (1 - a) + np.asarray(ink, np.float32) * a, rng)


# ----------------------------------------------------------------------------- the recognizer


def rec_lines(n: int, seed: int, dist: str) -> np.ndarray:
    """N text lines as PP-OCR rec tensors (N, 3, 48, 320) of distribution DIST (A: the zoo's, B: `render_b`)."""
    from zoo_tasks import _line_tensor, _line_text, _render

    rng = np.random.default_rng(seed)
    texts = [_line_text(rng) for _ in range(n)]
    if dist == "A":
        crops = [_render(t, int(rng.integers(20, 40)), rng) for t in texts]
    else:
        crops = [render_b(t, int(rng.integers(16, 48)), rng) for t in texts]
    return np.stack([_line_tensor(c, 320) for c in crops])


def rec_figures(y_ref: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Per-step argmax agreement, and the share of lines whose greedy CTC reading is the same."""
    from zoo_tasks import greedy

    a, b = y_ref.argmax(-1), y.argmax(-1)
    same = [greedy(r, blank=0) == greedy(q, blank=0) for r, q in zip(a, b, strict=True)]
    return {"step_agreement": round(float((a == b).mean()), 4), "lines_same": round(float(np.mean(same)), 4),
            "cosine": _cosine(y_ref, y)}


# ----------------------------------------------------------------------------- the text detector


def det_pages(n: int, seed: int, dist: str) -> np.ndarray:
    """N 320x320 pages of 3-6 lines (BGR uint8, NCHW) of distribution DIST."""
    from PIL import Image
    from zoo_tasks import _line_text, _render

    rng = np.random.default_rng(seed)
    pages = np.zeros((n, 320, 320, 3), np.uint8)
    for i in range(n):
        if dist == "A":
            pages[i] = rng.integers(215, 256, 3)
        else:
            bg, _ = _background(rng, 320, 320)
            pages[i] = _finish(bg, rng)
        y = int(rng.integers(4, 30))
        for _ in range(int(rng.integers(3, 7))):
            size = int(rng.integers(14, 31))
            line = _render(_line_text(rng), size, rng) if dist == "A" else render_b(_line_text(rng), size, rng)
            h, w = line.shape[:2]
            if w > 310:
                line, w = np.asarray(Image.fromarray(line).resize((310, h))), 310
            if y + h > 316:
                break
            x = int(rng.integers(2, 320 - w - 1))
            pages[i, y:y + h, x:x + w] = line
            y += h + int(rng.integers(4, 24))
    return np.ascontiguousarray(pages[:, :, :, ::-1].transpose(0, 3, 1, 2))


def det_normalise(x: np.ndarray) -> np.ndarray:
    """PP-OCR det's input: BGR uint8 NCHW -> float, ImageNet mean/std (what --mean/--std make of the .npz)."""
    mean, std = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)
    return ((x / np.float32(255) - mean[:, None, None]) / std[:, None, None]).astype(np.float32)


def det_figures(y_ref: np.ndarray, y: np.ndarray) -> dict[str, float | None]:
    """The mask kind's figures (edgekit.fidelity.mask, what validation judges) at DB's threshold: thresholded-mask
    agreement (all pixels) and IoU, regions matched at IoU >= 0.5 (recall and precision), cosine."""
    from edgekit.fidelity.mask import compare_masks

    m = compare_masks(y_ref, y, DET_THRESHOLD)
    r = lambda v: None if v is None else round(v, 4)  # noqa: E731
    return {"mask_agreement": round(m.agreement, 5), "mask_iou": r(m.iou), "region_recall": r(m.region_recall),
            "region_precision": r(m.region_precision), "regions": m.regions, "cosine": _cosine(y_ref, y)}


# ----------------------------------------------------------------------------- P-Net


def pnet_scenes(n: int, seed: int, dist: str) -> np.ndarray:
    """N P-Net inputs (N, 3, 64, 64): the zoo's scenes (A), or the same kind of scenes under another exposure,
    contrast and sensor noise (B)."""
    import torch
    from zoo_mtcnn import astronaut_face, nets, normalise, scenes

    torch.set_num_threads(2)
    face, _ = astronaut_face(nets()["onet"])
    rgb = scenes(face, n, seed).astype(np.float32)
    if dist == "B":
        rng = np.random.default_rng(seed)
        gain, shift = rng.uniform(0.6, 1.3, (n, 1, 1, 1)), rng.uniform(-40, 40, (n, 1, 1, 1))
        rgb = np.clip((rgb - 128) * gain + 128 + shift + rng.normal(0, 6, rgb.shape), 0, 255)
    return normalise(rgb.astype(np.uint8))


def pnet_cells(y_ref: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per input: the cells both propose (p(face) > 0.6) and the cells either proposes; their sums' ratio is the
    proposal IoU."""
    a, b = y_ref[:, 1] > PNET_THRESHOLD, y[:, 1] > PNET_THRESHOLD
    return (a & b).reshape(len(a), -1).sum(1), (a | b).reshape(len(a), -1).sum(1)


def pnet_figures(y_ref: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Proposal cells (p(face) > 0.6): their agreement over all cells, and the IoU of the proposed cells."""
    a, b = y_ref[:, 1] > PNET_THRESHOLD, y[:, 1] > PNET_THRESHOLD
    both, either = pnet_cells(y_ref, y)
    return {"cell_agreement": round(float((a == b).mean()), 5),
            "proposal_iou": round(float(both.sum() / max(either.sum(), 1)), 4),
            "proposals": int(a.sum()), "cosine": _cosine(y_ref, y)}


def paired_difference(one: tuple[np.ndarray, np.ndarray], other: tuple[np.ndarray, np.ndarray],
                      draws: int = BOOTSTRAP_DRAWS, seed: int = 0) -> dict[str, Any]:
    """ONE's ratio of sums (per-input numerators and denominators, as `pnet_cells` gives) minus OTHER's, in points,
    with its 95% interval from DRAWS paired resamples of the inputs (the same inputs drawn for both, so what the two
    share, the inputs, does not widen the interval)."""
    (n1, d1), (n2, d2) = one, other
    if len(n1) != len(n2):
        raise ValueError(f"paired inputs differ in number: {len(n1)} and {len(n2)}")
    ratio = lambda n, d: n.sum(-1) / np.maximum(d.sum(-1), 1)  # noqa: E731
    rng, diffs = np.random.default_rng(seed), []
    for start in range(0, draws, 100):  # 100 resamples at a time: 10,000 inputs x 2,000 draws would hold GBs
        pick = rng.integers(0, len(n1), (min(100, draws - start), len(n1)))
        diffs.append(100 * (ratio(n1[pick], d1[pick]) - ratio(n2[pick], d2[pick])))
    lo, hi = np.percentile(np.concatenate(diffs), [2.5, 97.5])
    return {"points": round(float(100 * (ratio(n1, d1) - ratio(n2, d2))), 2), "ci95": [round(float(lo), 2),
                                                                                      round(float(hi), 2)],
            "inputs": len(n1), "draws": draws}


def _cosine(y_ref: np.ndarray, y: np.ndarray) -> float:
    a, b = y_ref.reshape(len(y_ref), -1).astype(np.float64), y.reshape(len(y), -1).astype(np.float64)
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)
    return round(float(cos.mean()), 5)


# ----------------------------------------------------------------------------- the table


class Task:
    """One model: where its source comes from, its calibration and held-out inputs, what is judged."""

    def __init__(self, name: str, source: Callable[[Path], Path], data: Callable[[int, int, str], np.ndarray],
                 figures: Callable[[np.ndarray, np.ndarray], dict[str, float]], output: int, args: list[str],
                 targets: dict[str, float],
                 per_input: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None) -> None:
        self.name, self.source, self.data, self.figures, self.output = name, source, data, figures, output
        self.args, self.targets = args, targets
        self.per_input = per_input  # the headline figure per input (numerator, denominator): ONNX - TFLite, paired


def _ocr_source(name: str) -> Callable[[Path], Path]:
    def get(work: Path) -> Path:
        import shutil

        from zoo_tasks import ocr_model

        dst = work / f"{name}.onnx"
        shutil.copyfile(ocr_model(name), dst)
        return dst

    return get


def _pnet_source(work: Path) -> Path:
    import torch
    from zoo_mtcnn import PNET_SIZE, _export, nets

    torch.set_num_threads(2)
    dst = work / "mtcnn_pnet.pt2"
    _export(nets()["pnet"], (1, 3, PNET_SIZE, PNET_SIZE), dst)
    return dst


TASKS = {
    "ppocr_rec": Task("ppocr_rec", _ocr_source("ppocr_rec"), rec_lines, rec_figures, 0,
                      ["--input-shape", "1,3,48,320"], {"step_agreement": 0.95}),
    "ppocr_det": Task("ppocr_det", _ocr_source("ppocr_det"), det_pages, det_figures, 0,
                      ["--input-shape", "1,3,320,320", "--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225",
                       "--mask-threshold", str(DET_THRESHOLD)],
                      {"mask_agreement": 0.98, "region_recall": 0.95, "region_precision": 0.95}),
    "mtcnn_pnet": Task("mtcnn_pnet", _pnet_source, pnet_scenes, pnet_figures, 1, [], {}, pnet_cells),
}
SEEDS = {"calib": 1, "A": 2, "B": 3}  # added to a per-model base: calibration and held-out never share a seed
BASE_SEED = {"ppocr_rec": 2200, "ppocr_det": 2100, "mtcnn_pnet": 3100}


def inputs(task: Task, work: Path, log: Callable[[str], None], held_out: int | None = None, calib_draw: int = 0
           ) -> tuple[Path, dict[str, np.ndarray]]:
    """(the calibration .npz of distribution A, {"A": held-out x, "B": held-out x}: HELD_OUT inputs of each, or
    HELD_OUT[task.name]); the model's own input form (uint8 pages for the detector: --mean/--std normalise them,
    `det_normalise` for running it here). CALIB_DRAW k > 0: the calibration inputs of another seed (k thousands
    on), so that int8 artifacts calibrated on other draws of A can be judged on the same held-out inputs."""
    base = BASE_SEED[task.name]
    n = held_out or HELD_OUT[task.name]
    size = "" if n == HELD_OUT[task.name] else f"-{n}"  # the default sets keep their earlier names
    calib = work / (f"{task.name}.calib.npz" if not calib_draw else f"{task.name}.calib-{calib_draw}.npz")
    if not calib.is_file():
        log(f"{task.name}: rendering {CALIB} calibration inputs")  # 50 more: convert's own validation
        np.savez(calib, x=task.data(CALIB + 50, base + SEEDS["calib"] + 1000 * calib_draw, "A"))
    held = {}
    for dist in ("A", "B"):
        f = work / f"{task.name}.heldout-{dist}{size}.npy"
        if not f.is_file():
            log(f"{task.name}: rendering {n} held-out inputs, distribution {dist}")
            np.save(f, task.data(n, base + SEEDS[dist], dist))
        held[dist] = np.load(f)
    return calib, held




# ----------------------------------------------------------------------------- running


def outputs(path: Path, fmt: str, x: np.ndarray, output: int) -> np.ndarray:
    """Output OUTPUT (by channel count for several: P-Net's probabilities are its 2-channel map) of the artifact
    at PATH on X (NCHW float), in NCHW, dequantized."""
    from edgekit.runtimes import runtime_for_format
    from edgekit.validation.artifact import _outputs

    rt = runtime_for_format(fmt)()
    rt.load(path)
    try:
        layout = "NCHW" if fmt in ("onnx", "openvino") else "NHWC"  # an IR keeps its ONNX's layout
        ys = list(_outputs(rt, {rt.inputs[0].name: x}, "NCHW", layout).values())
    finally:
        rt.close()
    if len(ys) == 1:
        return ys[0]
    return next(y for y in ys if y.ndim == 4 and y.shape[1] == 2) if output else ys[0]


# runs that are not one recipe (issue 40): today's defaults (no --int8-recipe: auto within the default --int8-budget,
# --for host) and the old ones (plain, and the ONNX form edgekit made before --for: S8S8 with 7-bit weights, which no
# row of edgekit.quantize.cpu_forms makes any more, so that run patches the x86-64 row to it: OLD_FORM)
DEFAULTS: dict[str, list[str]] = {"default": [], "old": ["--int8-recipe", "plain", "--for", "x86-64"]}
OLD_FORM = ("import dataclasses, sys; import edgekit.quantize.cpu_forms as f; "
            "f.FORMS['x86-64'] = dataclasses.replace(f.FORMS['x86-64'], activations='int8', reduce_range=True); "
            "from edgekit.cli import main; sys.argv[0] = 'edgekit'; main()")


def convert_args(task: Task, src: Path, calib: Path, recipe: str, targets: str, out: Path) -> list[str]:
    how = DEFAULTS.get(recipe, ["--int8-recipe", recipe])
    return [str(src), "--target", targets, "--quantize", "fp32,int8", "--calib", str(calib), "--calib-size",
            str(CALIB), "--val-size", "50", *how, "--out", str(out), "--force", *task.args]


def run_recipe(task: Task, src: Path, calib: Path, held: dict[str, np.ndarray], recipe: str, targets: str,
               work: Path, log: Callable[[str], None], tag: str = "") -> dict[str, Any]:
    """Convert SRC with RECIPE to TARGETS (int8 and fp32 each) through `edgekit convert` as a user runs it, then
    judge each int8 artifact against the fp32 artifact of its format on the held-out inputs: {format: row}. TAG
    ends the output folder's name (another calibration draw's artifacts beside the first)."""
    import json
    import subprocess
    import sys
    import time

    out = work / f"out-{recipe}{tag}"
    launch = ["-c", OLD_FORM] if recipe == "old" else ["-m", "edgekit.cli"]
    cmd = [sys.executable, *launch, "convert", *convert_args(task, src, calib, recipe, targets, out)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    try:
        manifest = json.loads((out / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError):
        log(f"  {task.name} {recipe}: convert failed, exit {done.returncode}: {done.stderr[-800:]}")
        return {"error": f"convert exit {done.returncode}: {done.stderr[-800:]}"}
    arts = {(a["format"], a["precision"], a.get("io_dtype")): a for a in manifest["artifacts"]}
    rows: dict[str, Any] = {}
    cells: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}  # (format, dist): the task's per-input figure
    for fmt in targets.split(","):
        fp32 = arts.get((fmt, "fp32", None))
        int8 = next((a for (f, p, _), a in arts.items() if f == fmt and p == "int8"), None)
        if fp32 is None or int8 is None or int8.get("failure") or fp32.get("failure"):
            rows[fmt] = {"error": "not made: " + json.dumps((int8 or {}).get("failure") or (fp32 or {}).get("failure"))}
            continue
        row: dict[str, Any] = {}
        for dist, x in held.items():
            xin = det_normalise(x) if task.name == "ppocr_det" else x
            y_ref = outputs(out / Path(fp32["path"]).name, fmt, xin, task.output)
            y = outputs(out / Path(int8["path"]).name, fmt, xin, task.output)
            row[dist] = task.figures(y_ref, y)
            if task.per_input is not None:
                cells[fmt, dist] = task.per_input(y_ref, y)
        r = (int8.get("extra") or {}).get("int8_recipe") or {}
        row.update(recipe=recipe, chosen=r.get("chosen"), met_in_search=r.get("met"),
                   macs_float_fraction=r.get("macs_float_fraction"), size_bytes=int8.get("size_bytes"),
                   trials=[f"{t['recipe']}: " + _trial_words(t) for t in r.get("trials", [])],
                   budget=r.get("budget"), form=(r.get("config") or {}).get("cpu"),
                   validation_passed=(int8.get("fidelity") or {}).get("passed"), seconds=round(seconds, 1))
        rows[fmt] = row
        log(f"  {task.name} {fmt} {recipe} -> {row['chosen']}: " + "; ".join(
            f"{d} " + ", ".join(f"{k} {v}" for k, v in row[d].items()) for d in held))
    for dist in held:  # both formats judged on the same inputs: their difference, paired over the inputs
        if ("onnx", dist) in cells and ("tflite", dist) in cells:
            diff = paired_difference(cells["onnx", dist], cells["tflite", dist])
            rows["onnx"][dist]["minus_tflite"] = diff
            log(f"  {task.name} {recipe} {dist}: ONNX - TFLite {diff['points']:+.2f} points, 95% interval "
                f"[{diff['ci95'][0]:+.2f}, {diff['ci95'][1]:+.2f}] over {diff['inputs']} inputs")
    return rows


def _trial_words(t: dict[str, Any]) -> str:
    words = "met" if t.get("passed") else "missed"
    if t.get("agreement") is not None:  # the measure the output's kind is judged by (steps, pixels, mask)
        words += f", agreement {t['agreement']}"
    fl = f", {t['float_nodes']} float ({100 * (t.get('macs_float_fraction') or 0):.1f}% MACs)" if t.get(
        "float_nodes") else ""
    return f"{words}, cosine {t.get('cosine')}{fl}, {t.get('seconds')} s"


RECIPES = (("plain", "onnx,tflite"), ("auto", "onnx,tflite"))  # (recipe, targets): each one `edgekit convert` run


def targets_of(recipe: str, formats: tuple[str, ...] = ("onnx", "tflite", "openvino")) -> str:
    """The formats of FORMATS that have RECIPE (a recipe of one format only is not asked of the others: they would
    run auto)."""
    from edgekit.quantize.onnx.search import NAMES
    from edgekit.quantize.openvino import RECIPES as OPENVINO_RECIPES
    from edgekit.quantize.tflite.recipes import TFLITE_RECIPES

    have = {"onnx": NAMES, "tflite": TFLITE_RECIPES, "openvino": OPENVINO_RECIPES}
    return ",".join(f for f in formats if recipe in (*have[f], "auto", *DEFAULTS))


def verdict(task: Task, res: dict[str, Any]) -> dict[str, Any]:
    """Where auto stands against the issue's targets on each held-out distribution, per format; for P-Net (no
    target of its own) whether the ONNX recipe trails the TFLite one."""
    out: dict[str, Any] = {}
    autos = {fmt: res.get("auto", {}).get(fmt) or {} for fmt in ("onnx", "tflite", "openvino")}
    for fmt, row in autos.items():
        if "A" not in row:
            continue
        gaps = {f"{d}.{k}": round(100 * (need - row[d][k]), 2) for d in ("A", "B") for k, need in task.targets.items()
                if row[d][k] < need}
        out[fmt] = {"met": not gaps, "chosen": row.get("chosen"), "short_by_points": gaps or None}
    if task.name == "mtcnn_pnet" and "A" in autos["onnx"] and "A" in autos["tflite"]:
        out["onnx_vs_tflite_points"] = {d: round(100 * (autos["onnx"][d]["proposal_iou"]
                                                        - autos["tflite"][d]["proposal_iou"]), 2) for d in ("A", "B")}
    if "A" in autos["onnx"] and "A" in autos["openvino"]:  # issue 30: OpenVINO's int8 at least the ONNX int8's
        key = "proposal_iou" if task.name == "mtcnn_pnet" else next(iter(task.targets))
        out["openvino_vs_onnx_points"] = {d: round(100 * (autos["openvino"][d][key] - autos["onnx"][d][key]), 2)
                                          for d in ("A", "B")}
    return out


def run_task(name: str, work: Path, log: Callable[[str], None], recipes: tuple[tuple[str, str], ...] = RECIPES,
             previous: dict[str, Any] | None = None, save: Callable[[dict[str, Any]], None] | None = None,
             held_out: int | None = None, calib_draw: int = 0) -> dict[str, Any]:
    """Every (recipe, targets) of RECIPES on task NAME, judged on both held-out distributions (HELD_OUT inputs of
    each, or HELD_OUT[name]), calibrated on draw CALIB_DRAW of distribution A (`inputs`); the verdict. SAVE is
    handed the results after each recipe (a long run keeps what it measured)."""
    task = TASKS[name]
    work.mkdir(parents=True, exist_ok=True)
    src = task.source(work)
    calib, held = inputs(task, work, log, held_out, calib_draw)
    tag = f"-calib{calib_draw}" if calib_draw else ""
    res: dict[str, Any] = dict(previous or {})
    res["facts"] = {"source": src.name, "calibration": f"{CALIB} of distribution A (auto judges on half)"
                    + (f", draw {calib_draw} ({calib.name})" if calib_draw else ""),
                    "held_out": {d: f"{len(x)} inputs of distribution {d}" for d, x in held.items()},
                    "convert": "edgekit convert " + " ".join(convert_args(task, Path(src.name), Path(calib.name),
                                                                          "RECIPE", "TARGETS", Path("out-RECIPE")))}
    for recipe, targets in recipes:
        res[recipe] = {**res.get(recipe, {}), **run_recipe(task, src, calib, held, recipe, targets, work, log,
                                                                tag)}
        res["targets"] = verdict(task, res)
        if save is not None:
            save(res)
    res["targets"] = verdict(task, res)
    return res


__all__ = ["TASKS", "Task", "det_figures", "inputs", "paired_difference", "pnet_cells", "pnet_figures", "rec_figures",
           "run_task", "verdict"]
