"""The model-zoo coverage table (issue 8): standard architectures through the real `edgekit convert`.

Why: edgekit worked on the models it was written with and failed on the ones users bring. This
benchmark builds standard image classifiers with random weights (no download) from
`keras.applications` and `transformers`, plus the bundled MNIST CNN, converts each one with the
real CLI in a child process (onnx,tflite,edgetpu x fp32,int8, real labelled calibration data),
and writes what happened, failures as failures, to docs/zoo.md.

So that accuracy means something on random weights, each model is prepared first (in its own child
process): BatchNorm statistics are set from real images (a random init with running stats 0/1 gives
degenerate activations), then the classifier head is fitted by ridge regression on the frozen
backbone's penultimate features of 500 MNIST training digits (resized to SIZE, 3 channels). The
calibration/validation .npz holds the 1,000 MNIST test digits, uint8, in the layout the source reads.

    python bench/zoo.py run [--only a,b] [--skip-done] [--timeout 600]   # one model at a time, resumable
    python bench/zoo.py run --only timm_fastvit_t8 --timm-python PATH    # issue 41's timm rows (bench/zoo_timm.py)
    python bench/zoo.py run --tasks                                     # the non-classifiers (issue 15)
    python bench/zoo.py report                                          # docs/zoo.md from the results
    python bench/zoo.py list

Non-classifiers (issue 15, `TASKS`): a 3-head proposal detector, a U-Net, a CTC digit-string recognizer
and a third-party-style dynamic-shape ONNX, built and trained briefly on MNIST scenes by bench/zoo_tasks.py,
each with its own calibration .npz (label masks for the U-Net) and flags (--output-kind, --input-shape);
their section of docs/zoo.md shows every artifact's worst output judged as its kind. MediaPipe's trained fp16
.tflite graphs (issue 37, bench/zoo_mediapipe.py; the wheel at $MEDIAPIPE_WHEEL or /tmp/mp) ask for their own
targets and precisions (tflite,edgetpu x fp16,int8) and split, and show every output's kind figure.

Per-model results: bench/results/zoo/<model>.json (the run can be stopped and continued). The catalogue and
bounds are in bench/zoo_models.py, the page is written by bench/zoo_report.py.
Needs `pip install -e '.[convert,dev,zoo]'` (transformers); it is a benchmark, not part of `make test`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from zoo_models import (
    BY_NAME,
    CALIB_SIZE,
    CLASSIFIER_FLAGS,
    N_BN,
    N_HEAD,
    PRECISIONS,
    RESULTS,
    ROOT,
    SIZE,
    TARGETS,
    TASKS,
    TIMM_ENV,
    VAL_SIZE,
    ZOO,
    ZooModel,
    edgekit_revision,
    machine,
)
from zoo_prepare import export_pt2, fit_head, set_bn_stats
from zoo_report import report, report_tasks
from zoo_timm import NEEDS, TimmPythonError, probe, timm_python
from zoo_timm import build_command as timm_build_command

BUILD_MAX_RSS = 12 * 2**30
# The builds import TensorFlow without edgekit: the same default as edgekit's (tensorflow/tensorflow#117700, see
# edgekit/__init__.py), so that a Keras Dense on a 4-D tensor (ConvNeXt) cannot corrupt the build's heap.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
PIXELS = {"0-1": [], "0-255": ["--mean", "0", "--std", repr(1 / 255)]}  # edgekit: (x/255 - mean) / std
OK_CODES = {0: "ok", 10: "ok (Edge TPU model pre-flighted, no compiler here)", 8: "some artifacts failed"}



# ----------------------------------------------------------------------------- data


def _digits(split: str, n: int | None = None, size: int = SIZE) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 (N, size, size, 3), int64 labels) from the bundled MNIST split ("train" or "test")."""
    from PIL import Image

    from edgekit.data.calibration import mnist_split

    x_train, y_train, x_test, y_test = mnist_split()
    x, y = (x_train, y_train) if split == "train" else (x_test, y_test)
    x, y = x[:n], y[:n]
    big = np.stack([np.asarray(Image.fromarray(d).resize((size, size), Image.Resampling.BILINEAR)) for d in x])
    return np.repeat(big[..., None], 3, axis=3), np.asarray(y, np.int64)


def _save_npz(path: Path, x: np.ndarray, y: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, x=np.ascontiguousarray(x), y=y)
    os.replace(tmp, path)
    return path


def calibration_npz(layout: str, size: int = SIZE) -> Path:
    """The 1,000 MNIST test digits at size x size x 3, uint8, in LAYOUT: edgekit scales them by 1/255."""
    path = RESULTS / "data" / f"mnist{size}_{layout.lower()}.npz"
    if not path.is_file():
        x, y = _digits("test", size=size)
        _save_npz(path, x.transpose(0, 3, 1, 2) if layout == "NCHW" else x, y)
    return path


def head_digits_npz(size: int) -> Path:
    """The N_HEAD training digits a row's head is fitted on (its first N_BN set the BatchNorms), NHWC uint8, for a
    builder in another interpreter (bench/zoo_timm.py), which cannot import edgekit's MNIST."""
    path = RESULTS / "data" / f"mnist{size}_train{N_HEAD}_nhwc.npz"
    return path if path.is_file() else _save_npz(path, *_digits("train", N_HEAD, size))


# ----------------------------------------------------------------------------- building (child process)


def build_keras(m: ZooModel, out: Path) -> dict[str, Any]:
    import keras

    keras.utils.set_random_seed(0)
    ctor = getattr(keras.applications, m.cls)
    model = ctor(weights=None, input_shape=(SIZE, SIZE, 3), classes=10, classifier_activation=None)
    x, y = _digits("train", N_HEAD)
    # Applications with their own preprocessing layers (Rescaling/Normalization) expect raw 0-255 pixels;
    # fed [0, 1] they squeeze the image into a sliver of the range (MobileNetV3: [-1, -0.992]).
    raw = any(isinstance(la, (keras.layers.Rescaling, keras.layers.Normalization)) for la in model.layers)
    xf = x.astype(np.float32) / (1.0 if raw else 255.0)  # what the convert command feeds (see PIXELS)
    bns = [la for la in model.layers if isinstance(la, keras.layers.BatchNormalization)]
    for la in bns:
        la.momentum = 0.0
    if bns:
        model(xf[:N_BN], training=True)  # moving mean/variance := real images' batch statistics
    head = next(la for la in reversed(model.layers) if getattr(la, "kernel", None) is not None)
    feats = keras.Model(model.inputs, head.input).predict(xf, batch_size=50, verbose=0)
    w, b, acc = fit_head(feats, y)
    head.set_weights([w.reshape(head.kernel.shape), b])
    path = out / f"{m.name}.keras"
    model.save(path)
    return {"file": path, "params": int(model.count_params()), "layout": "NHWC", "bn_layers": len(bns),
            "pixels": "0-255" if raw else "0-1",
            "head": f"{type(head).__name__} {head.name}", "head_train_accuracy": acc}


def build_transformers(m: ZooModel, out: Path) -> dict[str, Any]:
    import torch
    import transformers

    torch.manual_seed(0)
    config = getattr(transformers, f"{m.cls}Config")(num_labels=10, **m.kwargs)
    model = getattr(transformers, f"{m.cls}ForImageClassification")(config).eval()
    x, y = _digits("train", N_HEAD)
    xt = torch.from_numpy(x.transpose(0, 3, 1, 2).astype(np.float32) / 255.0)
    bn_layers = set_bn_stats(model, lambda xb: model(pixel_values=xb), xt, N_BN)
    with torch.no_grad():
        head = [mod for mod in model.modules() if isinstance(mod, torch.nn.Linear) and mod.out_features == 10][-1]
        feats: list[np.ndarray] = []
        hook = head.register_forward_hook(lambda _m, inp, _o: feats.append(inp[0].reshape(len(inp[0]), -1).numpy()))
        for i in range(0, len(xt), 50):
            model(pixel_values=xt[i:i + 50])
        hook.remove()
        w, b, acc = fit_head(np.concatenate(feats), y)
        head.weight.copy_(torch.from_numpy(w.T))
        head.bias.copy_(torch.from_numpy(b))

    class Logits(torch.nn.Module):
        """The classifier as users export it: image tensor in, logits out."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
            return self.inner(pixel_values=pixel_values).logits

    path = out / f"{m.name}.pt2"
    batch = export_pt2(Logits(model).eval(), SIZE, path)
    return {"file": path, "params": int(sum(p.numel() for p in model.parameters())), "layout": "NCHW",
            "pixels": "0-1",
            "bn_layers": bn_layers, "head": f"Linear {head.in_features}->10", "head_train_accuracy": acc,
            "batch": batch}


def build(name: str) -> None:
    """Child process: build model NAME and write its build record (JSON) next to the source file."""
    m = BY_NAME[name]
    if m.package == "timm":
        raise SystemExit(f"{name} is built by bench/zoo_timm.py in a Python with timm (`run --timm-python PATH`)")
    out = RESULTS / "src"
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if m.package == "task":
        from zoo_tasks import build as build_task  # bench/zoo_tasks.py, beside this file

        rec = build_task(name, out)
        rec["calib"] = str(Path(rec["calib"]).relative_to(ROOT))
    else:
        rec = (build_keras if m.package == "keras" else build_transformers)(m, out)
    rec["file"] = str(Path(rec["file"]).relative_to(ROOT))
    rec["seconds"] = round(time.perf_counter() - t0, 1)
    (out / f"{name}.build.json").write_text(json.dumps(rec, indent=1))


# ----------------------------------------------------------------------------- running (parent)


def _tree_rss(pid: int) -> int:
    """Memory of process PID and all its descendants now: the sum of their PSS (proportional set size), so
    pages a forked child shares with its parent count once; RSS where PSS cannot be read. 0 once it is gone."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            try:
                total += p.memory_full_info().pss
            except (AttributeError, psutil.AccessDenied):
                total += p.memory_info().rss
    return total


def _child(cmd: list[str], log: Path, timeout: float, max_rss: float) -> dict[str, Any]:
    """Run CMD with stdout+stderr to LOG under a wall-clock TIMEOUT and a cap on its process tree's RSS.

    The machine is shared: a conversion that balloons (13 GB was seen) is killed at MAX_RSS bytes and
    recorded as such, rather than pushing the other work on the machine out of memory.
    """
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    with log.open("wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, env=env, start_new_session=True)
    timed_out, over_rss, status, usage, tree_peak = False, False, None, None, 0
    loads: list[float] = []  # the machine's 1-minute load average, sampled: the page states it beside the times
    while status is None:
        pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status, usage = st, ru
            continue
        loads.append(os.getloadavg()[0])
        tree = _tree_rss(proc.pid)
        tree_peak = max(tree_peak, tree)
        if not (timed_out or over_rss) and (time.perf_counter() - t0 > timeout or tree > max_rss):
            timed_out, over_rss = tree <= max_rss, tree > max_rss
            os.killpg(proc.pid, signal.SIGKILL)  # the child's own process group: it and its helpers
        time.sleep(0.5)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"exit_code": proc.returncode, "timed_out": timed_out, "killed_over_rss": over_rss,
            "seconds": round(time.perf_counter() - t0, 1),
            "peak_rss_bytes": usage.ru_maxrss * 1024,  # Linux: KiB; the child and its waited-for children
            "peak_tree_rss_bytes": tree_peak,  # sampled every 0.5 s: PSS of the child and its live children
            "load_avg": {"mean": round(sum(loads) / len(loads), 2), "max": round(max(loads), 2),
                         "cores": os.cpu_count()} if loads else None}


def _tail(path: Path, n: int = 1500) -> str:
    text = path.read_text(errors="replace") if path.is_file() else ""
    return text[-n:]


def convert_command(src: str, calib: str, out: Path, pixels: str = "0-1", extra: list[str] | None = None,
                    source: dict[str, Any] | None = None) -> list[str]:
    """The CLI call; uint8 digits are scaled to [0, 1], or kept at 0-255 with mean 0, std 1/255 (PIXELS).
    EXTRA: a task model's own flags (--output-kind, --input-shape), or a classifier row's (CLASSIFIER_FLAGS).
    SOURCE: a task's build record, which may name its own targets, precisions and split (a .tflite source: no ONNX
    target, its file's own float precision)."""
    src_rec = source or {}
    return [sys.executable, "-m", "edgekit.cli", "convert", src, "--target", src_rec.get("targets") or TARGETS,
            "--quantize", src_rec.get("precisions") or PRECISIONS, "--calib", calib,
            "--calib-size", str(src_rec.get("calib_size") or CALIB_SIZE),
            "--val-size", str(src_rec.get("val_size") or VAL_SIZE), "--out", str(out),
            *PIXELS[pixels], *(extra or []), "--force", "--json"]


def build_command(m: ZooModel, timm_py: Path | None = None) -> list[str]:
    """The build child of model M: this file's `build` in this interpreter, or for a timm row bench/zoo_timm.py in
    TIMM_PY (the Python the user named), fed the training digits written here."""
    if m.package != "timm":
        return [sys.executable, str(Path(__file__).resolve()), "build", m.name]
    if timm_py is None:
        raise TimmPythonError(f"{m.name}: {NEEDS}")
    return timm_build_command(timm_py, m.name, m.cls, m.size, head_digits_npz(m.size), RESULTS / "src")


def run_one(m: ZooModel, timeout: float, max_rss: float, timm_py: Path | None = None) -> dict[str, Any]:
    """Build (a child) then convert (a child) model M; the result record, written to RESULTS/<name>.json.
    TIMM_PY: the Python a timm row is built in."""
    logs = RESULTS / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    rec: dict[str, Any] = {"name": m.name, "package": m.package, "class": m.cls, "note": m.note,
                           "config": m.kwargs, "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "machine": machine(), "edgekit": edgekit_revision()}
    if m.package == "edgekit":
        src, calib = m.cls, "mnist"
        rec["source"] = {"file": m.cls, "params": 0, "layout": "NCHW", "input": "1x28x28"}
    else:
        # the build is this benchmark's own preparation, not edgekit's work: issue 8's bounds are not its cap
        # (DenseNet121's BatchNorm pass in training mode holds 6.6 GB of activations)
        b = _child(build_command(m, timm_py), logs / f"{m.name}.build.log", timeout, max(max_rss, BUILD_MAX_RSS))
        rec["build"] = b
        info = RESULTS / "src" / f"{m.name}.build.json"
        if b["exit_code"] != 0 or not info.is_file():
            rec["status"] = ("build timed out" if b["timed_out"] else "build over the RSS cap"
                             if b["killed_over_rss"] else "build failed")
            rec["build"]["log_tail"] = _tail(logs / f"{m.name}.build.log")
            return _save(rec)
        rec["source"] = json.loads(info.read_text())
        if Path(rec["source"]["file"]).is_absolute():  # written by a builder in another interpreter
            rec["source"]["file"] = str(Path(rec["source"]["file"]).relative_to(ROOT))
        if m.package == "task":  # its own scenes, input size and flags
            src, calib = rec["source"]["file"], rec["source"]["calib"]
        else:
            rec["source"]["input"] = f"{m.size}x{m.size}x3"
            src = rec["source"]["file"]
            calib = str(calibration_npz(rec["source"]["layout"], m.size).relative_to(ROOT))
    out = RESULTS / "out" / m.name
    src_rec = rec.get("source") or {}
    cmd = convert_command(src, calib, out, src_rec.get("pixels", "0-1"),
                          src_rec.get("args") if m.package == "task" else list(CLASSIFIER_FLAGS),
                          src_rec if m.package == "task" else None)
    rec["command"] = " ".join(["python", *cmd[1:]]).replace(str(ROOT) + os.sep, "")
    c = _child(cmd, logs / f"{m.name}.convert.log", timeout, max_rss)
    rec["convert"] = c
    manifest = out / "manifest.json"
    fresh = manifest.is_file() and manifest.stat().st_mtime >= time.time() - c["seconds"] - 5
    rec["manifest"] = json.loads(manifest.read_text()) if fresh and c["exit_code"] in OK_CODES else None
    if c["timed_out"]:
        rec["status"] = f"timed out after {timeout:.0f} s"
    elif c["killed_over_rss"]:
        rec["status"] = f"killed at the {max_rss / 2**30:.0f} GiB RSS cap"
    elif c["exit_code"] in OK_CODES and rec["manifest"]:
        rec["status"] = OK_CODES[c["exit_code"]]
    else:
        rec["status"] = f"aborted (exit {c['exit_code']})"
    if rec["status"] != "ok":
        rec["convert"]["log_tail"] = _tail(logs / f"{m.name}.convert.log")
    return _save(rec)


def _save(rec: dict[str, Any]) -> dict[str, Any]:
    path = RESULTS / f"{rec['name']}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, indent=1, default=str))
    os.replace(tmp, path)
    return rec



# ----------------------------------------------------------------------------- CLI


def _timm_rows_python(ap: argparse.ArgumentParser, flag: str | None, models: list[ZooModel]) -> Path | None:
    """The Python the timm rows among MODELS are built in (--timm-python, else $ZOO_TIMM_PYTHON), checked once before
    any row runs; None where none is named or no timm row is asked for. A bad one ends the run with its reason."""
    if not any(m.package == "timm" for m in models):
        return None
    try:
        python = timm_python(flag, env_name=TIMM_ENV)
        if python is not None:
            versions = probe(python)
            print(f"timm rows: built in {python} (timm {versions['timm']}, torch {versions['torch']})", flush=True)
    except TimmPythonError as exc:
        ap.error(str(exc))
    return python


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="build and convert zoo models one at a time, then write docs/zoo.md")
    r.add_argument("--only", default="", help="comma-separated model names (see `list`)")
    r.add_argument("--tasks", action="store_true", help="run the non-classifier section (issue 15) instead")
    r.add_argument("--skip-done", action="store_true", help="skip models that already have a result JSON")
    r.add_argument("--timeout", type=float, default=600.0, help="wall-clock seconds per build and per convert")
    r.add_argument("--max-rss-gb", type=float, default=8.0,
                   help="kill a build or convert whose process tree holds more than this (GiB; the machine is shared)")
    r.add_argument("--timm-python", default=None, metavar="PATH",
                   help=f"a Python that imports timm and torch, to build the timm rows in (default: ${TIMM_ENV}; "
                        "without either they are skipped and stay planned)")
    b = sub.add_parser("build", help="(internal) build one model in this process")
    b.add_argument("name", choices=sorted(BY_NAME))
    rep = sub.add_parser("report", help="write docs/zoo.md from the results so far")
    rep.add_argument("--tasks", action="store_true", help="rewrite only the non-classifier section")
    sub.add_parser("list", help="the zoo's model names, in run order")
    args = ap.parse_args(argv)
    if args.cmd == "report" and args.tasks:
        print(report_tasks())
        return 0
    if args.cmd == "build":
        build(args.name)
        return 0
    if args.cmd == "list":
        print("\n".join(f"{m.name}\t{m.package}\t{m.cls}" for m in (*ZOO, *TASKS)))
        return 0
    if args.cmd == "run":
        names = [n.strip() for n in args.only.split(",") if n.strip()] or [m.name for m in (TASKS if args.tasks
                                                                                                else ZOO)]
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            ap.error(f"unknown model(s): {', '.join(unknown)}; see `python bench/zoo.py list`")
        timm_py = _timm_rows_python(ap, args.timm_python, [BY_NAME[n] for n in names])
        for n in names:
            if args.skip_done and (RESULTS / f"{n}.json").is_file():
                continue
            if BY_NAME[n].package == "timm" and timm_py is None:
                print(f"{n}: skipped, planned, not run: {NEEDS}", flush=True)
                continue
            rec = run_one(BY_NAME[n], args.timeout, args.max_rss_gb * 2**30, timm_py)
            print(f"{n}: {rec['status']} ({(rec.get('convert') or rec.get('build') or {}).get('seconds')} s)",
                  flush=True)
            (report_tasks if args.tasks else report)()
    print((report_tasks if args.tasks else report)())
    return 0


if __name__ == "__main__":
    sys.exit(main())
