"""w8a16 (int8 weights, int16 activations) against int8 and fp32: size, latency, fidelity, ONNX and TFLite (issue 29).

Each model is converted by `edgekit.convert` (the code users run) to onnx + tflite at fp32, int8 and w8a16, every
artifact validated as usual; each artifact is then timed in its default runtime (onnxruntime, LiteRT with
XNNPACK), one thread, batch 1, median of RUNS runs after WARMUP, the artifacts of one model interleaved round
by round so that machine noise falls on all of them alike.

Models: the bundled MNIST CNN (calibrated and validated on the bundled digits) and a Keras MobileNetV2 (alpha 0.35,
96x96, random weights: keras.applications builds it without a download), calibrated and validated on crops of
scikit-image's sample photos.

    python bench/w8a16.py [--json bench/results/w8a16.json] [--runs 200] [--models mnist,mobilenetv2]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PRECISIONS = "fp32,int8,w8a16"


def _photos(size: int, n: int) -> np.ndarray:
    """N crops (NHWC, [-1, 1] as MobileNetV2 takes) of scikit-image's sample photos, resized to SIZE."""
    from PIL import Image
    from skimage import data

    pics = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket(), data.hubble_deep_field()]
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        pic = pics[i % len(pics)]
        h, w = pic.shape[:2]
        s = int(rng.integers(min(h, w) // 3, min(h, w)))
        r, c = int(rng.integers(0, h - s + 1)), int(rng.integers(0, w - s + 1))
        crop = Image.fromarray(pic[r:r + s, c:c + s]).resize((size, size))
        out.append(np.asarray(crop, np.float32) / 127.5 - 1.0)
    return np.stack(out)


def _mobilenetv2(work: Path) -> tuple[Path, str]:
    import keras

    model = keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=10)
    path = work / "mobilenetv2.keras"
    model.save(path)
    calib = work / "photos.npy"
    np.save(calib, _photos(96, 600))
    return path, str(calib)


def _models(names: list[str], work: Path) -> list[tuple[str, Path, str]]:
    out = []
    if "mnist" in names:
        out.append(("mnist_cnn", ROOT / "models" / "mnist_cnn.pt2", "mnist"))
    if "mobilenetv2" in names:
        path, calib = _mobilenetv2(work)
        out.append(("mobilenetv2_035_96", path, calib))
    return out


def _latencies(paths: list[tuple[str, Path]], x: np.ndarray, runs: int, warmup: int) -> dict[str, float]:
    """Median ms per artifact, one thread, interleaved round by round."""
    from edgekit.runtimes import runtime_for_format
    from edgekit.runtimes.base import quantize

    loaded = {}
    for fmt, path in paths:
        rt = runtime_for_format(fmt)()
        rt.load(path, threads=1)
        spec = rt.inputs[0]
        feed = {spec.name: x if spec.dtype == "float32" else quantize(x, spec)}  # an int8 input takes int8
        call = rt.bind(feed)
        for _ in range(warmup):
            call()
        loaded[path.name] = (rt, call)
    times: dict[str, list[float]] = {k: [] for k in loaded}
    for _ in range(runs):
        for name, (_, call) in loaded.items():
            t0 = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - t0) * 1e3)
    for rt, _ in loaded.values():
        rt.close()
    return {k: statistics.median(v) for k, v in times.items()}


def bench_model(label: str, source: Path, calib: str, out: Path, runs: int, warmup: int) -> list[dict[str, Any]]:
    from edgekit.conversion.pipeline import convert
    from edgekit.runtimes import runtime_for_format

    t0 = time.perf_counter()
    result = convert(source, "onnx,tflite", PRECISIONS, calib=calib, out=out, force=True, val_size=300)
    seconds = time.perf_counter() - t0
    manifest = json.loads(result.manifest_path.read_text())
    arts = [a for a in manifest["artifacts"] if a.get("status", "ok") == "ok"]
    paths = [(a["format"], out / a["path"]) for a in arts]
    rows = []
    for fmt in ("onnx", "tflite"):  # the layouts differ (NCHW / NHWC): timed per format, on that format's input
        group = [(f, p) for f, p in paths if f == fmt]
        rt = runtime_for_format(fmt)()
        rt.load(group[0][1])
        x = np.random.default_rng(0).uniform(-1, 1, [1, *[d if d > 0 else 1 for d in rt.inputs[0].shape[1:]]])
        x = x.astype(np.float32)
        rt.close()
        lat = _latencies(group, x, runs, warmup)
        for a in (a for a in arts if a["format"] == fmt):
            fid = a.get("fidelity") or {}
            rows.append({"model": label, "format": fmt, "precision": a["precision"], "path": a["path"],
                         "size_bytes": a["size_bytes"], "latency_ms_p50": round(lat[Path(a["path"]).name], 4),
                         "top1_agreement": fid.get("top1_agreement"), "cosine": fid.get("cosine"),
                         "passed": fid.get("passed"), "validated_on": fid.get("inputs"),
                         "validation_samples": fid.get("samples")})
    for a in manifest["artifacts"]:  # what did not convert or load is a row too, with the reason
        if a.get("status", "ok") != "ok":
            err = a.get("failure") or {}
            rows.append({"model": label, "format": a["format"], "precision": a["precision"], "path": a["path"],
                         "status": a.get("status"), "error": err.get("message") if isinstance(err, dict) else str(err)})
    for r in (r for r in rows if "size_bytes" in r):
        base = next(b for b in rows if b["format"] == r["format"] and b["precision"] == "fp32")
        r["size_vs_fp32"] = round(r["size_bytes"] / base["size_bytes"], 3)
        r["latency_vs_fp32"] = round(r["latency_ms_p50"] / base["latency_ms_p50"], 2)
    print(f"{label}: converted and validated in {seconds:.0f} s")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--models", default="mnist,mobilenetv2")
    args = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="w8a16-") as tmp:
        work = Path(tmp)
        for label, source, calib in _models(args.models.split(","), work):
            rows += bench_model(label, source, calib, work / label, args.runs, args.warmup)
    print(f"{'model':20} {'format':6} {'precision':9} {'size':>10} {'vs fp32':>7} {'p50 ms':>8} {'vs fp32':>7} "
          f"{'top-1':>7} {'cosine':>8} pass")
    for r in rows:
        if "size_bytes" not in r:
            print(f"{r['model']:20} {r['format']:6} {r['precision']:9} FAILED: {(r.get('error') or '')[:150]}")
            continue
        top1 = "-" if r["top1_agreement"] is None else f"{r['top1_agreement']:.2%}"
        print(f"{r['model']:20} {r['format']:6} {r['precision']:9} {r['size_bytes']:>10,} {r['size_vs_fp32']:>7.2f} "
              f"{r['latency_ms_p50']:>8.3f} {r['latency_vs_fp32']:>7.2f} {top1:>7} {r['cosine']:>8.5f} {r['passed']}")
    if args.json:
        import onnxruntime

        doc = {"bench": "w8a16", "command": "python bench/w8a16.py " + " ".join(argv or sys.argv[1:]),
               "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                           "python": platform.python_version()},
               "versions": {"onnxruntime": onnxruntime.__version__, "litert": _litert_version()},
               "timing": f"1 thread, batch 1, median of {args.runs} runs after {args.warmup}, artifacts interleaved",
               "rows": rows}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


def _litert_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("ai-edge-litert")
    except Exception:  # noqa: BLE001 - a figure's label, not a reason to fail
        return None


if __name__ == "__main__":
    raise SystemExit(main())
