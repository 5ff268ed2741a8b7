"""ncnn beside onnxruntime and LiteRT: fidelity and latency of the same models through `--target onnx,tflite,ncnn`.

Models (issue 39):
- the bundled MNIST CNN (models/mnist_cnn.pt2), calibrated and validated on the bundled digits (`--calib mnist`);
- a MobileNetV2 (the torchvision architecture, written here in plain torch: torchvision does not import beside
  torch 2.13 here) at 224x224 with random weights whose BatchNorm statistics are set from crops of scikit-image's
  photos (one forward pass in training mode, momentum 1: the data-dependent initialisation
  tests/test_mobilenetv2.py gives Keras's MobileNetV2, so the outputs are not ~1e-11 and agreement means
  something), exported with torch.export to a .pt2, validated on those photos;
- the bundled detector (models/digits_yolo.pt2), validated on models/digits_detect_val.npz (boxes after NMS);
- the held-out architecture: Keras's own MobileNetV2 (keras.applications, weights=None, 160x160), which the
  project's ncnn work had not seen: it converts, or fails per artifact with the cause named.

Each is converted with `edgekit convert SRC --target onnx,tflite,ncnn --quantize fp32,fp16` and benched with
`edgekit bench OUT --no-source` (every artifact on every runtime here, 1 thread and the machine's threads), as a
user runs them. Writes bench/results/ncnn.json (or --out) and prints the table docs/results/ncnn.md quotes.

Usage (from the repository root, after `pip install -e '.[all]'`):
    python bench/ncnn_compare.py [--work bench/results/ncnn-work] [--reuse] [--models cnn,mobilenetv2,detector,keras]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TARGETS = "onnx,tflite,ncnn"
PRECISIONS = "fp32,fp16"


def log(msg: str) -> None:
    print(f"> {msg}", file=sys.stderr, flush=True)


# --- MobileNetV2 in plain torch (torchvision's layout: width 1.0, 1000 classes) ---------------------------------
def mobilenet_v2(num_classes: int = 1000) -> Any:
    from torch import nn

    def conv_bn(cin: int, cout: int, k: int, stride: int, groups: int = 1, act: bool = True) -> nn.Sequential:
        layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                                   nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, nn.ReLU6(inplace=True)) if act else nn.Sequential(*layers)

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, t: int) -> None:
            super().__init__()
            hidden = cin * t
            self.res = stride == 1 and cin == cout
            self.block = nn.Sequential(*([conv_bn(cin, hidden, 1, 1)] if t != 1 else []),
                                       conv_bn(hidden, hidden, 3, stride, groups=hidden),
                                       conv_bn(hidden, cout, 1, 1, act=False))

        def forward(self, x: Any) -> Any:
            return x + self.block(x) if self.res else self.block(x)

    config = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
              (6, 320, 1, 1)]
    layers: list[nn.Module] = [conv_bn(3, 32, 3, 2)]
    cin = 32
    for t, c, n, s in config:
        for i in range(n):
            layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
            cin = c
    layers.append(conv_bn(cin, 1280, 1, 1))
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2),
                         nn.Linear(1280, num_classes))


def build_mobilenet(work: Path, size: int = 224) -> tuple[Path, Path]:
    """(the .pt2, the folder of photo crops) of the module docstring's MobileNetV2."""
    import torch

    sys.path.insert(0, str(REPO))
    from edgekit.data.calibration import load_samples
    from tests.test_mobilenetv2 import write_crops

    photos = work / "photos"
    if not photos.is_dir():
        write_crops(photos)
    path = work / f"mobilenetv2_{size}.pt2"
    if path.is_file():
        return path, photos
    torch.manual_seed(0)
    model = mobilenet_v2()
    x = torch.from_numpy(load_samples(str(photos), [1, 3, size, size], "NCHW").x)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = 1.0  # running statistics := this batch's
    model.train()
    with torch.no_grad():
        model(x)
    model.eval()
    torch.export.save(torch.export.export(model, (x[:1],)), path)
    return path, photos


def build_keras_mobilenet(work: Path, photos: Path, size: int = 160) -> Path:
    path = work / f"keras_mobilenetv2_{size}.keras"
    if path.is_file():
        return path
    import keras

    from edgekit.data.calibration import load_samples

    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(weights=None, input_shape=(size, size, 3), classifier_activation=None)
    x = load_samples(str(photos), [1, size, size, 3], "NHWC").x
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.momentum = 0.0
    model(x, training=True)
    model.save(path)
    return path


# --- convert and bench through the CLI -------------------------------------------------------------------------
def edgekit(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    log("edgekit " + " ".join(args))
    return subprocess.run([str(BIN / "edgekit"), *args], capture_output=True, text=True, env=env, check=False)


def run_model(name: str, src: Path, calib: str, work: Path, reuse: bool, threads: list[int]) -> dict[str, Any]:
    out = work / name
    manifest = out / "manifest.json"
    t0 = time.perf_counter()
    if not (reuse and manifest.is_file()):
        proc = edgekit("convert", str(src), "--target", TARGETS, "--quantize", PRECISIONS, "--calib", calib,
                       "--out", str(out), "--force")
        if not manifest.is_file():
            return {"source": str(src), "convert_rc": proc.returncode, "error": proc.stderr[-2000:]}
    convert_s = time.perf_counter() - t0
    arts = json.loads(manifest.read_text())["artifacts"]
    row: dict[str, Any] = {"source": src.name, "convert_s": round(convert_s, 1), "artifacts": [
        {k: a.get(k) for k in ("path", "format", "precision", "status", "size_bytes", "fidelity", "failure")}
        for a in arts]}
    row["bench"] = {}
    for n in threads:
        proc = edgekit("bench", str(out), "--no-source", "--json", "--threads", str(n),
                       "--out", str(out / f"bench-{n}"))
        row["bench"][str(n)] = slim(json.loads(proc.stdout)) if proc.returncode == 0 else {
            "rc": proc.returncode, "error": proc.stderr[-2000:].replace(str(work), "WORK")}
    return row


ROW_KEYS = ("label", "format", "precision", "runtime", "device", "size_bytes", "status", "note", "p50_ms", "p90_ms",
            "throughput_per_s")


def slim(report: dict[str, Any]) -> dict[str, Any]:
    """A bench report's rows and settings, files by name only (no folder of this machine in the results)."""
    rows = [{**{k: r.get(k) for k in ROW_KEYS}, "path": Path(r.get("path") or "").name} for r in report["rows"]]
    return {"settings": report.get("settings"), "host": report.get("host"), "rows": rows}


def table(results: dict[str, Any]) -> str:
    """Markdown: one line per (model, artifact, runtime), the fidelity figure and p50 at each thread count."""
    lines = ["| model | artifact | runtime | agreement | cosine | p50 ms (1 thread) | p50 ms (all) |",
             "|---|---|---|---|---|---|---|"]
    for model, row in results["models"].items():
        if "artifacts" not in row:
            lines.append(f"| {model} | (convert failed) | | | | | |")
            continue
        benches = {n: b.get("rows", []) for n, b in row["bench"].items()}
        for art in row["artifacts"]:
            fid = art.get("fidelity") or {}
            agree = fid.get("top1_agreement") if fid.get("top1_agreement") is not None else fid.get("detection_recall")
            name = Path(art["path"] or "").name
            if art.get("status") != "ok":
                failure = (art.get("failure") or {}).get("message", "")
                lines.append(f"| {model} | {name or art['format'] + ' ' + art['precision']} | failed | "
                             f"{failure[:160]} | | | |")
                continue
            p50 = {n: {r.get("runtime"): r.get("p50_ms") for r in rows if Path(r.get("path", "")).name == name}
                   for n, rows in benches.items()}
            for runtime in sorted({rt for per in p50.values() for rt in per}):
                cells = [p50[n].get(runtime) for n in sorted(p50, key=int)]
                lines.append(f"| {model} | {name} | {runtime} | {_pct(agree)} | {_num(fid.get('cosine'))} | "
                             + " | ".join(_num(c, 2) for c in cells) + " |")
    return "\n".join(lines)


def _pct(x: Any) -> str:
    return f"{100 * x:.1f}%" if isinstance(x, (int, float)) else "-"


def _num(x: Any, digits: int = 5) -> str:
    return f"{x:.{digits}f}" if isinstance(x, (int, float)) else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "results" / "ncnn-work",
                    help="where the conversions are kept (--reuse): beside the other bench outputs, ignored by git")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "ncnn.json")
    ap.add_argument("--reuse", action="store_true", help="keep conversions already in --work")
    ap.add_argument("--models", default="cnn,mobilenetv2,detector,keras")
    ap.add_argument("--table", action="store_true", help="print the table of --out's JSON and stop")
    args = ap.parse_args()
    if args.table:
        print(table(json.loads(args.out.read_text())))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    wanted = args.models.split(",")
    threads = sorted({1, os.cpu_count() or 1})
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "machine": platform.processor() or platform.machine(),
                               "cpus": os.cpu_count(), "targets": TARGETS, "precisions": PRECISIONS, "models": {}}
    from edgekit.core._deps import version_of

    results["versions"] = {d: version_of(d) for d in ("edgekit", "ncnn", "pnnx", "onnxruntime", "ai-edge-litert",
                                                       "torch", "tensorflow")}
    jobs: list[tuple[str, Any, str]] = []
    if "cnn" in wanted:
        jobs.append(("mnist_cnn", lambda: REPO / "models" / "mnist_cnn.pt2", "mnist"))
    mnv2: dict[str, Path] = {}

    def mobilenet() -> Path:
        mnv2["pt2"], mnv2["photos"] = build_mobilenet(args.work)
        return mnv2["pt2"]

    if "mobilenetv2" in wanted or "keras" in wanted:
        jobs.append(("mobilenetv2_224", mobilenet, str(args.work / "photos")))
    if "detector" in wanted:
        jobs.append(("digits_yolo", lambda: REPO / "models" / "digits_yolo.pt2",
                     str(REPO / "models" / "digits_detect_val.npz")))
    if "keras" in wanted:
        jobs.append(("keras_mobilenetv2_160", lambda: build_keras_mobilenet(args.work, args.work / "photos"),
                     str(args.work / "photos")))
    for name, make, calib in jobs:
        if name == "mobilenetv2_224" and "mobilenetv2" not in wanted:
            mobilenet()
            continue
        log(f"{name}: building / converting")
        results["models"][name] = run_model(name, make(), calib, args.work, args.reuse, threads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results, indent=1) + "\n"  # folders of this machine by role, not by path
    args.out.write_text(text.replace(str(args.work), "WORK").replace(str(REPO), "REPO"))
    print(table(results))
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
