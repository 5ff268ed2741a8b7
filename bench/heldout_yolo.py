"""A held-out trained YOLO through `edgekit convert` int8 (issue 37): boxes kept, precision and score drift at the cut,
by recipe, on photos split by photo.

Why: the project's own trained detector is the digits YOLO it was tuned on; the issue's drift was seen on a COCO YOLO
from Ultralytics. This takes any such detector file (an Ultralytics YOLOv5/YOLOv8 .tflite or .onnx export, trained on
COCO) and real photos, builds calibration and held-out inputs as Ultralytics' predict feeds the model (letterboxed to
the input, gray 114), splitting the photos, not their views, into the two sets (each photo whole and as random
crops, half of them flipped: near-duplicates that a random split would put on both sides), and converts with the real
CLI, `--val` naming the held-out views. Per recipe it prints and writes (JSON) what the manifest's validation says:
the kind and head edgekit read, box recall and precision at the 0.25 cut against the float model, the mean score
drift of the kept boxes, the verdict, the recipe kept, the conversion's time and peak RSS.

    python bench/heldout_yolo.py MODEL.tflite --photos DIR [--photos DIR2] [--recipes auto,plain,mixed]
        [--views 3] [--work DIR] [--json FILE]

Besides the folders given, it adds the photos scikit-image, scikit-learn and matplotlib ship (no download).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PHOTO_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")


def bundled_photos() -> dict[str, np.ndarray]:
    """The colour photos scikit-image, scikit-learn and matplotlib ship, by name (RGB uint8)."""
    import matplotlib.cbook as cbook
    from PIL import Image
    from skimage import color, data
    from sklearn.datasets import load_sample_images

    photos: dict[str, np.ndarray] = {}
    for name in ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry", "retina",
                 "cat", "page", "camera"):
        im = getattr(data, name)()
        photos[name] = (color.gray2rgb(im) if im.ndim == 2 else im[..., :3]).astype(np.uint8)
    photos.update(zip(("china", "flower"), load_sample_images().images, strict=True))
    with cbook.get_sample_data("grace_hopper.jpg") as f:
        photos["grace_hopper"] = np.asarray(Image.open(f).convert("RGB"))
    return photos


def folder_photos(folders: list[Path]) -> dict[str, np.ndarray]:
    from PIL import Image

    out = {}
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.suffix.lower() in PHOTO_SUFFIXES):
            out[f"{folder.name}/{path.relative_to(folder)}"] = np.asarray(Image.open(path).convert("RGB"))
    return out


def letterbox(im: np.ndarray, h: int, w: int) -> np.ndarray:
    """IM letterboxed to H x W as edgekit serve's /detect does it (Ultralytics' LetterBox, gray 114), uint8."""
    from PIL import Image

    from edgekit.serve.detect import letterbox as serve_letterbox

    return serve_letterbox(Image.fromarray(im), w, h)[0].astype(np.uint8)


def views(im: np.ndarray, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """The photo whole, then N - 1 random crops (55-90% of each side), half of them flipped."""
    out = [im]
    for _ in range(n - 1):
        s = rng.uniform(0.55, 0.9)
        ch, cw = int(im.shape[0] * s), int(im.shape[1] * s)
        y, x = rng.integers(0, im.shape[0] - ch + 1), rng.integers(0, im.shape[1] - cw + 1)
        crop = im[y:y + ch, x:x + cw]
        out.append(np.ascontiguousarray(crop[:, ::-1]) if rng.random() < 0.5 else crop)
    return out


def input_size(model: Path) -> tuple[int, int, str]:
    """(height, width, layout) of the detector's image input."""
    if model.suffix.lower() == ".tflite":
        from ai_edge_litert.interpreter import Interpreter

        shape = [int(d) for d in Interpreter(model_path=str(model)).get_input_details()[0]["shape"]]
        return shape[1], shape[2], "NHWC"
    import onnx

    graph = onnx.load(str(model), load_external_data=False).graph
    dims = [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim]
    return dims[2], dims[3], "NCHW"


def make_sets(photos: dict[str, np.ndarray], model: Path, n_views: int, work: Path) -> dict[str, Any]:
    """calib.npy and val.npy under WORK: a third of the photos (by a fixed draw) held out with all their views."""
    h, w, layout = input_size(model)
    rng = np.random.default_rng(0)
    names = sorted(photos)
    held = {names[i] for i in rng.permutation(len(names))[:len(names) // 3]}
    sets: dict[str, list[np.ndarray]] = {"calib": [], "val": []}
    for name in names:
        for v in views(photos[name], n_views, rng):
            x = letterbox(v, h, w)
            sets["val" if name in held else "calib"].append(x if layout == "NHWC" else x.transpose(2, 0, 1))
    for key, xs in sets.items():
        np.save(work / f"{key}.npy", np.stack(xs))
    return {"photos": len(names), "held_out_photos": sorted(held), "calib": len(sets["calib"]),
            "val": len(sets["val"]), "input": [h, w], "layout": layout}


def convert(model: Path, recipe: str, work: Path) -> dict[str, Any]:
    out = work / f"out_{recipe}"
    cmd = [sys.executable, "-m", "edgekit.cli", "convert", str(model), "--target", "tflite" if model.suffix == ".tflite"
           else "onnx", "--quantize", "int8", "--int8-recipe", recipe, "--calib", str(work / "calib.npy"),
           "--val", str(work / "val.npy"), "--calib-size", "10000", "--val-size", "10000", "--out", str(out),
           "--force"]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    row: dict[str, Any] = {"recipe": recipe, "exit": run.returncode, "seconds": round(time.perf_counter() - t0, 1),
                           "command": " ".join(cmd[1:])}
    manifest = out / "manifest.json"
    if not manifest.is_file():
        row["error"] = run.stderr[-2000:]
        return row
    m = json.loads(manifest.read_text())
    art = next(a for a in m["artifacts"] if a.get("precision") == "int8")
    fid = art.get("fidelity") or {}
    outputs = fid.get("outputs") or []
    head = (outputs[0].get("fidelity") or {}).get("head") if outputs else None
    row.update(kind=fid.get("kind"), head=head, recall=fid.get("detection_recall"),
               precision=fid.get("detection_precision"), drift=fid.get("score_change"), boxes=fid.get("detections"),
               passed=fid.get("passed"), failures=fid.get("failures"),
               kept=((art.get("extra") or {}).get("int8_recipe") or {}).get("chosen"),
               peak_rss_gb=round((m.get("run") or {}).get("peak_tree_rss_bytes", 0) / 2**30, 1))
    return row


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--photos", type=Path, action="append", default=[], help="a folder of photos (repeatable)")
    ap.add_argument("--recipes", default="auto", help="comma list of --int8-recipe values (default: auto)")
    ap.add_argument("--views", type=int, default=3, help="views per photo: whole, then random crops")
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "results" / "heldout-yolo")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    photos = {**bundled_photos(), **folder_photos(args.photos)}
    report: dict[str, Any] = {"model": args.model.name, "sets": make_sets(photos, args.model, args.views, args.work)}
    print(f"{report['sets']['photos']} photos, {len(report['sets']['held_out_photos'])} held out: "
          f"{report['sets']['calib']} calibration views, {report['sets']['val']} held-out views")
    report["rows"] = []
    for recipe in args.recipes.split(","):
        row = convert(args.model, recipe, args.work)
        report["rows"].append(row)
        print(f"{recipe:>8}: {row.get('kind')} recall {_pct(row.get('recall'))} precision {_pct(row.get('precision'))} "
              f"drift {row.get('drift')} on {row.get('boxes')} boxes, kept {row.get('kept')}, "
              f"{'pass' if row.get('passed') else 'MISS'}, {row['seconds']} s, peak {row.get('peak_rss_gb')} GB")
    path = args.json or args.work / "heldout_yolo.json"
    path.write_text(json.dumps(report, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
