"""w8a16 (int8 weights, int16 activations) against int8 and fp32: size, latency, fidelity, ONNX and TFLite (issue 29).

Each model is converted by `edgekit.convert` (the code users run) to onnx + tflite at fp32, int8 and w8a16, every
artifact validated as usual; each artifact is then timed in its default runtime (onnxruntime, LiteRT with
XNNPACK), one thread, batch 1, median of RUNS runs after WARMUP, the artifacts of one model interleaved round
by round so that machine noise falls on all of them alike.

--defaults-vs-old (issue 40) converts each model twice, with today's defaults (`--int8-recipe auto`, `--for host`)
and with the old int8 flags (`--int8-recipe plain --for arm64`: signed activations, no search; bench/openvino_speed.py's
FORMS, whose docstring says why that is the old form), and times every artifact of both conversions of a model, ONNX
and TFLite, in one interleaved run (the order shuffled each round), so each row's old time over the defaults' is a ratio
of one run. fp32 and w8a16 rows are timed both ways too: files that are byte for byte the same (sha256) are the
noise floor of a ratio; w8a16 reads `--for` only for per-channel weights, which every row of the table keeps.

Models: the bundled MNIST CNN (calibrated and validated on the bundled digits) and a Keras MobileNetV2 (alpha 0.35,
96x96, random weights: keras.applications builds it without a download), calibrated and validated on crops of
scikit-image's sample photos.

    python bench/w8a16.py [--json bench/results/w8a16.json] [--runs 200] [--models mnist,mobilenetv2]
    python bench/w8a16.py --defaults-vs-old --json bench/results/w8a16_defaults.json [--runs 200]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
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


def _input(fmt: str, path: Path) -> np.ndarray:
    """The float input the artifact at PATH (of FMT) is timed on: uniform in [-1, 1], its own layout (NCHW / NHWC)."""
    from edgekit.runtimes import runtime_for_format

    rt = runtime_for_format(fmt)()
    rt.load(path)
    x = np.random.default_rng(0).uniform(-1, 1, [1, *[d if d > 0 else 1 for d in rt.inputs[0].shape[1:]]])
    rt.close()
    return x.astype(np.float32)


def _timed(items: list[tuple[str, str, Path, np.ndarray]], runs: int, warmup: int) -> dict[str, list[float]]:
    """ms of every run per (key, format, path, input), one thread, interleaved run by run, in an order shuffled each
    round (seeded) so that no artifact always follows the same one."""
    from edgekit.runtimes import runtime_for_format
    from edgekit.runtimes.base import quantize

    loaded = {}
    for key, fmt, path, x in items:
        rt = runtime_for_format(fmt)()
        rt.load(path, threads=1)
        spec = rt.inputs[0]
        feed = {spec.name: x if spec.dtype == "float32" else quantize(x, spec)}  # an int8 input takes int8
        call = rt.bind(feed)
        for _ in range(warmup):
            call()
        loaded[key] = (rt, call)
    times: dict[str, list[float]] = {k: [] for k in loaded}
    order, rng = list(loaded.items()), np.random.default_rng(0)
    for _ in range(runs):
        for i in rng.permutation(len(order)):
            name, (_, call) = order[i]
            t0 = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - t0) * 1e3)
    for rt, _ in loaded.values():
        rt.close()
    return times


def _latencies(paths: list[tuple[str, Path]], x: np.ndarray, runs: int, warmup: int) -> dict[str, float]:
    """Median ms per artifact (by file name), one thread, interleaved round by round."""
    times = _timed([(path.name, fmt, path, x) for fmt, path in paths], runs, warmup)
    return {k: statistics.median(v) for k, v in times.items()}


def _convert(source: Path, calib: str, out: Path, flags: dict[str, Any] | None = None) -> tuple[dict[str, Any], float]:
    """SOURCE converted by edgekit to onnx + tflite at PRECISIONS in OUT, with FLAGS (convert's options); its manifest
    and the seconds it took."""
    from edgekit.conversion.pipeline import convert
    from edgekit.core.filedoc import read_json

    t0 = time.perf_counter()
    result = convert(source, "onnx,tflite", PRECISIONS, calib=calib, out=out, force=True, val_size=300, **(flags or {}))
    return read_json(result.manifest_path, what="manifest"), time.perf_counter() - t0


def _fidelity(a: dict[str, Any]) -> dict[str, Any]:
    fid = a.get("fidelity") or {}
    return {"top1_agreement": fid.get("top1_agreement"), "cosine": fid.get("cosine"), "passed": fid.get("passed"),
            "validated_on": fid.get("inputs"), "validation_samples": fid.get("samples")}


def bench_model(label: str, source: Path, calib: str, out: Path, runs: int, warmup: int) -> list[dict[str, Any]]:
    manifest, seconds = _convert(source, calib, out)
    arts = [a for a in manifest["artifacts"] if a.get("status", "ok") == "ok"]
    paths = [(a["format"], out / a["path"]) for a in arts]
    rows = []
    for fmt in ("onnx", "tflite"):  # the layouts differ (NCHW / NHWC): timed per format, on that format's input
        group = [(f, p) for f, p in paths if f == fmt]
        lat = _latencies(group, _input(fmt, group[0][1]), runs, warmup)
        for a in (a for a in arts if a["format"] == fmt):
            rows.append({"model": label, "format": fmt, "precision": a["precision"], "path": a["path"],
                         "size_bytes": a["size_bytes"], "latency_ms_p50": round(lat[Path(a["path"]).name], 4),
                         **_fidelity(a)})
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


def defaults_vs_old(label: str, source: Path, calib: str, work: Path, runs: int, warmup: int) -> dict[str, Any]:
    """SOURCE converted with each of FORMS' flags; every artifact of both conversions timed in one interleaved run.
    Per (format, precision): each form's p50, the old form's p50 over the defaults' (> 1: the defaults run faster)
    and the median of the rounds' paired ratios, whether the two files are byte for byte the same, and each
    conversion's own validation; per form, the conversion's int8 record and onnxruntime's optimized graph and per-op
    profile of its ONNX int8 file at 1 thread, after the timing (bench/openvino_speed.py's: what fused)."""
    from openvino_speed import FORMS, conversion_record, onnx_int8_graph

    arts: dict[str, dict[tuple[str, str], tuple[Path, dict[str, Any]]]] = {}
    doc: dict[str, Any] = {"model": label, "conversions": {}, "seconds": {}}
    for form, flags in FORMS.items():
        out = work / f"{label}-{form}"
        manifest, seconds = _convert(source, calib, out, flags)
        doc["seconds"][form] = round(seconds, 1)
        doc["conversions"][form] = conversion_record(out)
        arts[form] = {(a["format"], a["precision"]): (out / a["path"], a) for a in manifest["artifacts"]
                      if a.get("status", "ok") == "ok"}
        print(f"{label}, {form}: converted and validated in {seconds:.0f} s")
    both = [k for k in arts["defaults"] if k in arts["old"]]
    inputs = {fmt: _input(fmt, arts["defaults"][(fmt, p)][0]) for fmt, p in both}
    items = [(f"{fmt} {p} {form}", fmt, arts[form][(fmt, p)][0], inputs[fmt]) for fmt, p in both for form in FORMS]
    doc["loadavg_before_timing"] = os.getloadavg()
    times = _timed(items, runs, warmup)
    doc["loadavg_after_timing"] = os.getloadavg()
    rows = []
    for fmt, p in both:
        new, old = times[f"{fmt} {p} defaults"], times[f"{fmt} {p} old"]
        (new_path, new_a), (old_path, old_a) = arts["defaults"][(fmt, p)], arts["old"][(fmt, p)]
        rows.append({"format": fmt, "precision": p, "defaults_ms_p50": round(statistics.median(new), 4),
                     "old_ms_p50": round(statistics.median(old), 4),
                     "old_over_defaults": round(statistics.median(old) / statistics.median(new), 3),
                     "paired": round(statistics.median(o / n for o, n in zip(old, new, strict=True)), 3),
                     "same_file": _sha256(new_path) == _sha256(old_path),
                     "size_bytes": {"defaults": new_a["size_bytes"], "old": old_a["size_bytes"]},
                     "fidelity": {"defaults": _fidelity(new_a), "old": _fidelity(old_a)}})
    missing = sorted({*arts["defaults"], *arts["old"]} - set(both))
    doc["not_in_both"] = [f"{fmt} {p}" for fmt, p in missing]
    doc["rows"] = rows
    doc["onnx_int8_graph"] = {form: onnx_int8_graph(arts[form][("onnx", "int8")][0], work / f"ort-{label}-{form}")
                              for form in FORMS if ("onnx", "int8") in arts[form]}
    return doc


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def show_defaults_vs_old(doc: dict[str, Any]) -> None:
    print(f"\n{doc['model']}: load {doc['loadavg_before_timing'][0]:.1f} -> {doc['loadavg_after_timing'][0]:.1f}")
    print(f"{'format':6} {'precision':9} {'defaults':>9} {'old':>9} {'old/def':>7} {'paired':>7} same  "
          "fidelity: top-1 / cosine / passed (defaults; old)")
    for r in doc["rows"]:
        fid = "; ".join(
            " / ".join("-" if v is None else format(v, spec) for v, spec in ((f["top1_agreement"], ".2%"),
                                                                           (f["cosine"], ".6f"), (f["passed"], "")))
            for f in (r["fidelity"]["defaults"], r["fidelity"]["old"]))
        print(f"{r['format']:6} {r['precision']:9} {r['defaults_ms_p50']:>9.3f} {r['old_ms_p50']:>9.3f} "
              f"{r['old_over_defaults']:>7.2f} {r['paired']:>7.2f} {'yes ' if r['same_file'] else 'no  '}  {fid}")
    for form, rec in doc["conversions"].items():
        print(f"  {form}: onnx form {rec['onnx_form']}, "
              + ", ".join(f"{fmt} int8 kept {a['chosen']} (tried {[t[0] for t in a['trials']]})"
                          for fmt, a in rec["artifacts"].items()))
    for form, g in doc["onnx_int8_graph"].items():
        ops = g["graph_ops"]
        print(f"  {form} ONNX int8 in onnxruntime (1 thread): "
              + ", ".join(f"{n} {k}" for k, n in ops.items() if k.startswith("QLinear") or k.endswith("Linear")
                          or k in ("Conv", "Gemm", "MatMul", "ConvInteger", "MatMulInteger"))
              + f"; {g['kernel_ms_per_run']} kernel ms per profiled run")
    if doc["not_in_both"]:
        print(f"  not made by both conversions: {', '.join(doc['not_in_both'])}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--models", default="mnist,mobilenetv2")
    ap.add_argument("--defaults-vs-old", action="store_true",
                    help="convert each model with today's defaults and with the old int8 flags (issue 40) and time "
                         "every artifact of both in one interleaved run")
    args = ap.parse_args(argv)
    if args.defaults_vs_old:
        return main_defaults_vs_old(args, argv)
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
        _write(args, argv, {"rows": rows})
    return 0


def main_defaults_vs_old(args: argparse.Namespace, argv: list[str] | None) -> int:
    """--defaults-vs-old: per model, both conversions and the side-by-side (defaults_vs_old)."""
    from openvino_speed import FORM_FLAGS

    models = []
    with tempfile.TemporaryDirectory(prefix="w8a16-") as tmp:
        work = Path(tmp)
        for label, source, calib in _models(args.models.split(","), work):
            models.append(defaults_vs_old(label, source, calib, work, args.runs, args.warmup))
            show_defaults_vs_old(models[-1])
    if args.json:
        _write(args, argv, {"form_flags": FORM_FLAGS, "models": models})
    return 0


def _write(args: argparse.Namespace, argv: list[str] | None, body: dict[str, Any]) -> None:
    import onnxruntime

    doc = {"bench": "w8a16", "command": "python bench/w8a16.py " + " ".join(argv or sys.argv[1:]),
           "date": time.strftime("%Y-%m-%d"),
           "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                       "python": platform.python_version(), "loadavg_end": os.getloadavg()},
           "versions": {"onnxruntime": onnxruntime.__version__, "litert": _litert_version()},
           "timing": f"1 thread, batch 1, median of {args.runs} runs after {args.warmup}, artifacts interleaved",
           **body}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}")


def _litert_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("ai-edge-litert")
    except Exception:  # noqa: BLE001 - a figure's label, not a reason to fail
        return None


if __name__ == "__main__":
    raise SystemExit(main())
