"""edgekit on arm64, proven under emulation: install edgekit[serve] from aarch64 wheels and run it.

Builds an arm64 Debian userland with Debian's own tools (`debootstrap` + `qemu-user-static`, binfmt_misc
running its aarch64 binaries), installs edgekit's wheel with the `serve` extra there from the package index
(pip resolves aarch64 wheels: onnxruntime, ai-edge-litert, numpy ...), then inside it runs `edgekit --version`,
`edgekit inspect` and `edgekit profile` on the bundled model's int8 TFLite and ONNX artifacts, and
`edgekit serve`, which a tritonclient on this (x86-64) host asks to classify real MNIST digits.

What ran and what did not goes to --json and a dated Markdown page (--docs). Timings measured under qemu are
emulated: they say nothing about a real Arm CPU and are recorded only as "emulated", never as device figures.

Needs root (debootstrap, chroot, mounting /proc in the userland) and Debian's packages:
    apt-get install debootstrap qemu-user-static binfmt-support
Usage:
    python bench/arm64.py --artifacts edgekit-out/mnist_cnn --json bench/results/arm64.json --docs docs/results/arm64.md
Without --artifacts it converts models/mnist_cnn.pt2 (onnx,tflite at int8) first.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from arm64_steps import Log, chroot, install_edgekit, mounted, serve_and_ask, userland  # noqa: E402


def artifacts(folder: Path | None, log: Log) -> Path:
    """The conversion folder to run: FOLDER, or the bundled model converted to onnx,tflite int8 now."""
    if folder is not None:
        return folder
    out = Path(tempfile.mkdtemp(prefix="edgekit-arm64-")) / "mnist_cnn"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    log.run("convert the bundled model on this host (x86-64)", [sys.executable, "-m", "edgekit.cli", "convert",
            str(REPO / "models" / "mnist_cnn.pt2"), "--target", "onnx,tflite", "--quantize", "int8", "--calib",
            "mnist", "--out", str(out), "--force"], env=env, timeout=900)
    return out


def pick(folder: Path, fmt: str) -> Path | None:
    manifest = json.loads((folder / "manifest.json").read_text())
    for a in manifest.get("artifacts", []):
        if a.get("format") == fmt and a.get("precision") == "int8" and a.get("path"):
            return folder / a["path"]
    return None


def run_inside(root: Path, folder: Path, log: Log) -> None:
    """edgekit's commands inside the arm64 userland, on the artifacts copied there."""
    dest = root / "work" / "artifacts"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(folder, dest)
    ek = "/opt/edgekit/bin/edgekit"
    log.run("python reports aarch64 inside", chroot(root, ["/opt/edgekit/bin/python", "-c",
            "import platform, sys; print(platform.machine(), sys.version.split()[0])"]), expect="aarch64")
    log.run("edgekit --version (arm64)", chroot(root, [ek, "--version"]), expect="edgekit ")
    for fmt in ("tflite", "onnx"):
        art = pick(folder, fmt)
        if art is None:
            log.skip(f"{fmt} int8: no such artifact in {folder}")
            continue
        inside = f"/work/artifacts/{art.relative_to(folder)}"
        ok = log.run(f"edgekit inspect {fmt} int8 (arm64)", chroot(root, [ek, "inspect", inside, "--json"]),
                     as_json=True) is not None
        # reading .onnx files takes the onnx package, which edgekit[serve] does not bring
        needs_onnx = not ok and fmt == "onnx" and "'onnx'" in str(log.steps[-1].get("output"))
        if needs_onnx and log.run("pip install onnx (aarch64 wheel)", chroot(root, ["/opt/edgekit/bin/pip", "install",
                                  "-q", "--disable-pip-version-check", "onnx"]), timeout=1800) is not None:
            log.run("edgekit inspect onnx int8 (arm64, with onnx)", chroot(root, [ek, "inspect", inside, "--json"]),
                    as_json=True)
        log.run(f"edgekit profile {fmt} int8 (arm64, emulated)", chroot(root, [ek, "profile", inside, "--json",
                "--runs", "20", "--min-seconds", "0", "--warmup", "2"]), as_json=True, emulated=True, timeout=600)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path.home() / ".cache" / "edgekit" / "arm64-rootfs",
                    help="where the arm64 userland is built (reused when it is there)")
    ap.add_argument("--suite", default="bookworm")
    ap.add_argument("--mirror", default="http://deb.debian.org/debian")
    ap.add_argument("--artifacts", type=Path, default=None, help="an `edgekit convert` output folder with int8 "
                    "onnx and tflite artifacts (default: convert the bundled model now)")
    ap.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "arm64.json")
    ap.add_argument("--docs", type=Path, default=None, help="also write the dated Markdown page here")
    args = ap.parse_args()
    log = Log()
    started = time.perf_counter()
    try:
        if userland(args.root, args.suite, args.mirror, log):
            with mounted(args.root):
                if install_edgekit(args.root, REPO, log):
                    run_inside(args.root, artifacts(args.artifacts, log), log)
                    serve_and_ask(args.root, log)
    finally:
        from arm64_steps import QEMU_CPU

        report = {"date": dt.date.today().isoformat(), "host": f"{platform.machine()} {platform.system()} "
                  f"{platform.release()}", "root": str(args.root), "suite": args.suite, "qemu_cpu": QEMU_CPU,
                  "seconds": round(time.perf_counter() - started, 1), "steps": log.steps,
                  "note": "Timings inside the userland ran under qemu-aarch64 emulation on an x86-64 host: they "
                  "are not Arm device timings and must not be read as such."}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        if args.docs:
            from arm64_steps import markdown

            args.docs.write_text(markdown(report))
        print(f"{sum(s['ok'] for s in log.steps)}/{len(log.steps)} steps ran; written {args.json}")
    return 0 if all(s["ok"] for s in log.steps) else 1


if __name__ == "__main__":
    sys.exit(main())

