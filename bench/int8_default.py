"""What the default int8 recipe (`auto`, within `--int8-budget`) costs (issue 40): a benchmark, not a test.

    python bench/int8_default.py cnn [--runs 2]                # bundled CNN: --int8-recipe plain vs the default
    python bench/int8_default.py mobilenet_v2 [--size 224]    # a MobileNetV2's whole conversion with the defaults
    python bench/int8_default.py mobilenet_v2 --extra=--int8-budget=inf   # the same, the search unbounded

Each conversion is one `edgekit convert --target onnx,tflite --quantize fp32,int8` in its own process, as a user
runs it, timed from start to exit. `cnn` runs the bundled MNIST CNN (where plain int8 passes) with `--int8-recipe
plain` and with the default, interleaved RUNS times, and prints each int8 step's seconds: where plain holds, auto
tries plain first and stops. `mobilenet_v2` builds Keras's MobileNetV2 (weights=None: no download; BatchNorm
statistics set from crops of scikit-image's photos, as tests/test_mobilenetv2.py does), converts it calibrated on
those crops with the defaults (plain int8 of random weights misses, so the search runs into its budget), and prints
the wall time and, per int8 artifact, every candidate tried with its seconds and the budget's record.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
EDGEKIT = Path(sys.executable).parent / "edgekit"


def convert(source: Path, calib: str, out: Path, extra: list[str]) -> tuple[float, dict]:
    """(wall seconds, manifest) of one `edgekit convert` of SOURCE to ONNX and TFLite at fp32 and int8."""
    cmd = [str(EDGEKIT), "convert", str(source), "--target", "onnx,tflite", "--quantize", "fp32,int8",
           "--calib", calib, "--out", str(out), "--force", *extra]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 8):  # 8: some artifact missed or failed, the others published
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return wall, json.loads((out / "manifest.json").read_text())


def int8_rows(manifest: dict) -> list[dict]:
    """Per int8 artifact: its step's seconds, its validation's, the recipe chosen, the candidates and the budget."""
    rows = []
    for a in manifest["artifacts"]:
        if a["precision"] != "int8":
            continue
        rec = a["extra"].get("int8_recipe") or {}
        steps = [t for t in a["extra"].get("steps", []) if not t.get("shared")]
        rows.append({"artifact": a["path"], "step_seconds": round(sum(t["seconds"] for t in steps), 2),
                     "validation_seconds": a["extra"].get("validation_seconds"),
                     "passed": (a.get("fidelity") or {}).get("passed"), "requested": rec.get("requested"),
                     "chosen": rec.get("chosen"), "met": rec.get("met"),
                     "trials": [(t["recipe"], t.get("seconds"), t.get("passed")) for t in rec.get("trials", [])],
                     "budget": rec.get("budget")})
    return rows


def cnn(runs: int, extra: list[str]) -> dict:
    source = REPO / "models" / "mnist_cnn.pt2"
    out: dict[str, list] = {"plain": [], "default": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):
            for label, flags in (("plain", ["--int8-recipe", "plain"]), ("default", [])):
                wall, manifest = convert(source, "mnist", Path(tmp) / f"{label}{i}", flags + extra)
                rows = int8_rows(manifest)
                out[label].append({"wall_seconds": round(wall, 1), "int8": rows})
                steps = ", ".join(f"{r['artifact']} {r['step_seconds']:.2f} s ({r['chosen']})" for r in rows)
                print(f"run {i + 1} {label:<8} wall {wall:6.1f} s; int8 steps: {steps}", flush=True)
    return out


def mobilenet_v2(size: int, crops: int, extra: list[str]) -> dict:
    import keras

    import tests.test_mobilenetv2
    from edgekit.data.calibration import load_samples
    from tests.test_mobilenetv2 import PHOTOS, write_crops

    with tempfile.TemporaryDirectory() as tmp:
        photos = Path(tmp) / "photos"
        tests.test_mobilenetv2.CROPS_PER_PHOTO = crops  # enough crops that the search judges on 100 (200 calibrate)
        write_crops(photos)
        keras.utils.set_random_seed(0)
        model = keras.applications.MobileNetV2(weights=None, input_shape=(size, size, 3), classifier_activation=None)
        x = load_samples(str(photos), [1, size, size, 3], "NHWC").x[:64]  # BatchNorm statistics of 64 crops
        for layer in model.layers:
            if isinstance(layer, keras.layers.BatchNormalization):
                layer.momentum = 0.0
        model(x, training=True)  # moving mean/variance := the photos' batch statistics
        path = Path(tmp) / f"mobilenetv2_{size}.keras"
        model.save(path)
        load = os.getloadavg()[0]
        wall, manifest = convert(path, str(photos), Path(tmp) / "out", extra)
    rows = int8_rows(manifest)
    print(f"MobileNetV2 {size}x{size}, {len(PHOTOS) * crops} photo crops, flags {extra or 'default'}: "
          f"whole conversion {wall:.1f} s (load average before: {load:.1f})")
    for a in manifest["artifacts"]:
        secs = a['extra'].get('validation_seconds')
        print(f"  {a['path']:<32} {a.get('seconds')} s (its own steps), validation {secs} s")
    for t in manifest.get("timeline") or []:
        print(f"  step {t}")
    for r in rows:
        print(f"  {r['artifact']}: step {r['step_seconds']:.1f} s, validation {r['validation_seconds']} s, chosen "
              f"{r['chosen']} (met {r['met']}), budget {r['budget']}")
        for name, secs, passed in r["trials"]:
            print(f"    {name:<24}{secs:>8} s  {'passed' if passed else 'missed'}")
    return {"model": f"mobilenet_v2_{size}", "flags": extra, "wall_seconds": round(wall, 1), "int8": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=("cnn", "mobilenet_v2"))
    ap.add_argument("--runs", type=int, default=2, help="cnn: interleaved runs of each")
    ap.add_argument("--size", type=int, default=224, help="mobilenet_v2: input side")
    ap.add_argument("--crops", type=int, default=50, help="mobilenet_v2: crops per photo (8 photos)")
    ap.add_argument("--extra", action="append", default=[], help="a convert flag to add (--extra=--int8-budget=60)")
    ap.add_argument("--json", dest="json_path", help="write the figures here as JSON")
    args = ap.parse_args()
    extra = [part for flag in args.extra for part in flag.split("=", 1)]
    figures = cnn(args.runs, extra) if args.model == "cnn" else mobilenet_v2(args.size, args.crops, extra)
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
