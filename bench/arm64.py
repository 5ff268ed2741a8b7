"""Every bundled artifact on each Raspberry Pi generation's core, under qemu user mode: the compatibility table.

Builds (or reuses) the arm64 userland edgekit's emulated runs use (`edgekit emulate setup`: Debian bookworm's arm64
python3 and the aarch64 wheels of edgekit[serve]), converts the bundled models on this host (the MNIST CNN to
ONNX and TFLite at fp32/fp16/dynamic/int8, the digits detector at fp32/int8), then on emulated Cortex-A53 (Pi 3 /
Zero 2 W), A72 (Pi 4) and A76 (Pi 5):
- runs every artifact and compares its outputs with this host's run of the same file (edgekit.emulate.compat);
- `edgekit profile` of the int8 TFLite and ONNX (the device facts read back; the emulated timing is never a figure);
- `edgekit serve` of both folders, asked by tritonclient from this host (20 real MNIST digits).
Writes --json and the dated page --docs (docs/results/arm64.md).

Needs root, debootstrap, qemu-user-static + binfmt-support (apt-get install debootstrap qemu-user-static
binfmt-support), Debian's archive and the package index (for the userland's first build).
Usage:
    python bench/arm64.py --json bench/results/arm64.json --docs docs/results/arm64.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CORES = ["pi3", "pi4", "pi5"]
HAND = "## Read by hand"


def convert(out: Path, model: str, quantize: str, calib: str) -> Path:
    run = subprocess.run([sys.executable, "-m", "edgekit.cli", "convert", str(REPO / "models" / model), "--target",
                          "onnx,tflite", "--quantize", quantize, "--calib", calib, "-o", str(out), "--force"],
                         capture_output=True, text=True, check=False)
    if run.returncode not in (0, 5):  # 5: an artifact below its bar is still one to run
        raise SystemExit(f"converting {model} failed: {run.stderr[-2000:]}")
    return out


def profile(folder: Path, fmt: str, pi: str) -> dict[str, Any]:
    art = next(a for a in json.loads((folder / "manifest.json").read_text())["artifacts"]
               if a["format"] == fmt and a["precision"] == "int8")
    p = subprocess.run([sys.executable, "-m", "edgekit.cli", "emulate", "run", "--on", pi, "profile",
                        str(folder / art["path"]), "--json", "--runs", "50", "--min-seconds", "0.2"],
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        return {"ok": False, "error": p.stderr.strip()[-600:]}
    r = json.loads(p.stdout)
    return {"ok": True, "artifact": art["path"], "runtime": f"{r['runtime']['name']} {r['runtime'].get('version')}",
            "machine": r["device"]["machine"], "emulated": r["device"].get("emulated"),
            "kernels": r["runtime"].get("details", {}).get("kernels"),
            "emulated_p50_ms": round(r["latency_ms"]["p50"], 3)}


def serve(folders: list[Path], pi: str, log: Path) -> dict[str, Any]:
    from edgekit.testing.server import ServerProcess, mnist_digits_right

    t0 = time.perf_counter()
    try:
        server = ServerProcess([*map(str, folders), "--precision", "int8"], log, timeout=600, on=pi)
    except Exception as exc:  # a server that never came up: recorded as this core's row
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    ready = time.perf_counter() - t0
    try:
        right = mnist_digits_right(server.url, "mnist_cnn", 20, timeout=300)
    finally:
        code = server.stop()
    return {"ok": code == 0 and right >= 19, "ready_s_emulated": round(ready, 1), "right": f"{right}/20",
            "exit_on_sigterm": code}


def markdown(report: dict[str, Any]) -> str:
    from edgekit.emulate.compat import Row
    from edgekit.emulate.compat import markdown as table

    rows = [Row.from_dict(r) for r in report["rows"]]
    land = report["userland"]
    lines = [f"# Raspberry Pi CPUs under emulation ({report['date']})", "",
             "Every artifact the bundled models make, run by the aarch64 runtimes a Pi installs (`edgekit[serve]`: "
             + ", ".join(f"{k} {v}" for k, v in land["packages"].items() if k in ("onnxruntime", "ai-edge-litert",
                                                                                  "numpy"))
             + f"; Debian {land['suite']}'s python {land['python']}) on each Pi generation's core as qemu "
             f"{report['qemu']} emulates it, and compared with this x86-64 host's run of the same file on the same "
             f"inputs. Host: {report['host']}. Whole run {report['seconds']} s. Rerun: `sudo python bench/arm64.py "
             "--json bench/results/arm64.json --docs docs/results/arm64.md`.", "",
             "!!! warning \"Emulated timings are not device timings\"",
             "    qemu translates Arm instructions on an x86-64 CPU: it shows what each core computes and which "
             "instructions it lacks, never how fast a Pi is. Measure a board with `edgekit profile --remote`.", "",
             "## What each artifact computes on each core", "",
             "\"agrees\": every output within 1e-3 (relative) of this host's; \"differs\": further, with the figure; "
             "SIGILL: an instruction the core does not have, named.", "", table(rows), "",
             "## profile and serve on each core", "",
             "| core | profile int8 TFLite | profile int8 ONNX | serve (mnist_cnn + digits_yolo, int8): tritonclient "
             "| exit on SIGTERM |", "|---|---|---|---|---|"]
    for pi, got in report["cores"].items():
        cells = []
        for fmt in ("tflite", "onnx"):
            p = got["profile"][fmt]
            cells.append(f"{p['runtime']} ({p.get('kernels') or 'default kernels'}), machine {p['machine']}, "
                         f"core {p['emulated']['core']}" if p["ok"] else f"**failed**: {p['error'][:200]}")
        s = got["serve"]
        serve_cell = (f"ready after {s['ready_s_emulated']} s (emulated), {s['right']} digits right" if "right" in s
                      else f"**failed**: {s.get('error', '')[:200]}")
        lines.append(f"| {pi} | {cells[0]} | {cells[1]} | {serve_cell} | {s.get('exit_on_sigterm', '-')} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--docs", type=Path)
    ap.add_argument("--root", type=Path, help="the userland (default: edgekit's, built where missing)")
    args = ap.parse_args()
    from edgekit.emulate.compat import check
    from edgekit.emulate.cpus import emulated_cpus
    from edgekit.emulate.launch import enable_binfmt
    from edgekit.emulate.userland import build

    t0 = time.perf_counter()
    land = build(args.root, progress=print)
    enable_binfmt()
    os.environ["EDGEKIT_ARM64_ROOT"] = str(land.root)
    work = Path(tempfile.mkdtemp(prefix="edgekit-arm64-"))
    mnist = convert(work / "mnist_cnn", "mnist_cnn.pt2", "fp32,fp16,dynamic,int8", "mnist")
    calib = str(REPO / "models" / "digits_detect_val.npz")
    detector = convert(work / "digits_yolo", "digits_yolo.onnx", "fp32,int8", calib)
    cpus = emulated_cpus(CORES)
    rows = [*check([mnist], cpus, inputs="mnist", progress=print, land=land),
            *check([detector], cpus, inputs=calib, progress=print, land=land)]
    cores = {}
    for pi in CORES:
        print(f"{pi}: profile and serve ...", flush=True)
        cores[pi] = {"profile": {fmt: profile(mnist, fmt, pi) for fmt in ("tflite", "onnx")},
                     "serve": serve([mnist, detector], pi, work / f"serve-{pi}.log")}
    qemu = subprocess.run(["qemu-aarch64-static", "--version"], capture_output=True, text=True, check=False)
    report = {"date": dt.date.today().isoformat(), "host": f"{platform.machine()} {platform.release()}",
              "qemu": (qemu.stdout.split("\n")[0].split("version")[-1].strip() or "?"),
              "userland": land.to_dict(), "rows": [r.to_dict() for r in rows], "cores": cores,
              "seconds": round(time.perf_counter() - t0, 1)}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    text = markdown(report)
    if args.docs:  # the page's hand-written reading, from its "## Read by hand" heading on, is kept
        old = args.docs.read_text() if args.docs.exists() else ""
        kept = old[old.index(HAND):] if HAND in old else ""
        args.docs.write_text(text + ("\n" + kept if kept else ""))
    print(text)
    ok = all(r.status in ("agrees", "differs") for r in rows) and all(
        c["serve"]["ok"] and all(p["ok"] for p in c["profile"].values()) for c in cores.values())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
