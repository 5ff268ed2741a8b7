"""The bench table for the bundled CNN and for a MobileNetV2-sized model, at batch 1 on this CPU.

1. models/mnist_cnn.pt2 converted as `make demo` does (ONNX and TFLite at fp32/fp16/dynamic/int8,
   calibrated on MNIST), then `edgekit bench` on it.
2. keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3)) (random weights: this is
   about speed, its accuracy means nothing) converted to ONNX and TFLite at fp32 and int8, calibrated
   on crops of scikit-image's sample photos, then benched the same way.

A benchmark, not a test: it takes minutes. Usage (from the repository root, after install):
    python bench/matrix.py [--out bench/results/matrix] [--reuse] [--skip-mobilenet]
Writes <out>/<model>/bench/bench.{json,md,png} per model and <out>/matrix.md with both tables.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def log(msg: str) -> None:
    print(f"> {msg}", file=sys.stderr, flush=True)


def calibration_photos(folder: Path, n: int = 48, size: int = 224) -> Path:
    """N RGB crops of scikit-image's sample photos as PNGs: real images for int8 calibration."""
    from PIL import Image
    from skimage import data

    folder.mkdir(parents=True, exist_ok=True)
    photos = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket(), data.immunohistochemistry(),
              data.retina()]
    rng = np.random.default_rng(0)
    for i in range(n):
        img = photos[i % len(photos)]
        h, w = img.shape[:2]
        side = int(rng.integers(min(h, w) // 2, min(h, w) + 1))
        y, x = int(rng.integers(0, h - side + 1)), int(rng.integers(0, w - side + 1))
        crop = Image.fromarray(img[y:y + side, x:x + side, :3]).resize((size, size), Image.BILINEAR)
        crop.save(folder / f"photo_{i:03d}.png")
    return folder


def convert_bundled(out: Path, reuse: bool) -> Path:
    if reuse and (out / "manifest.json").is_file():
        return out
    from edgekit.conversion.pipeline import convert

    log("converting models/mnist_cnn.pt2 (onnx, tflite x fp32, fp16, dynamic, int8)")
    convert(REPO / "models" / "mnist_cnn.pt2", "onnx,tflite", "fp32,fp16,dynamic,int8", calib="mnist", out=out,
            force=True)
    return out


def convert_mobilenet(out: Path, reuse: bool) -> Path:
    if reuse and (out / "manifest.json").is_file():
        return out
    import keras

    src = out.parent / "mobilenetv2_224.keras"
    if not src.is_file():
        log("building keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3))")
        keras.utils.set_random_seed(0)
        model = keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3))
        src.parent.mkdir(parents=True, exist_ok=True)
        model.save(src)
    calib = calibration_photos(out.parent / "mobilenet_calib")
    from edgekit.conversion.pipeline import convert

    log("converting MobileNetV2 (onnx, tflite x fp32, int8), calibrated on photo crops")
    convert(src, "onnx,tflite", "fp32,int8", calib=str(calib), calib_size=32, val_size=16, out=out, force=True,
            mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "matrix")
    ap.add_argument("--reuse", action="store_true", help="reuse conversions already in --out")
    ap.add_argument("--skip-mobilenet", action="store_true")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--min-seconds", type=float, default=1.0)
    args = ap.parse_args(argv)

    from edgekit.core.console import quiet_stdout
    from edgekit.measure.bench import BenchSettings, bench
    from edgekit.report.bench import markdown

    settings = BenchSettings(runs=args.runs, min_seconds=args.min_seconds, warmup=5, batch=1)
    sections = []
    runs = [("Bundled MNIST CNN (models/mnist_cnn.pt2)", convert_bundled, "mnist_cnn")]
    if not args.skip_mobilenet:
        runs.append(("MobileNetV2 224x224 (keras.applications, random weights)", convert_mobilenet, "mobilenetv2"))
    for title, make, name in runs:
        with quiet_stdout():
            folder = make(args.out / name, args.reuse)
            report = bench(folder, settings, log=log)
        body = markdown(report).split("\n", 2)[2]  # drop the "# edgekit bench" heading
        sections.append(f"## {title}\n\n{body}")
        print(f"\n## {title}\n\n{body}")
    from edgekit.core.fsutil import atomic_write_text

    atomic_write_text(args.out / "matrix.md", "# edgekit bench matrix (batch 1, this CPU)\n\n" + "\n".join(sections))
    log(f"written: {args.out / 'matrix.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
