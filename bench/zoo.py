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
    python bench/zoo.py run --tasks                                     # the non-classifiers (issue 15)
    python bench/zoo.py report                                          # docs/zoo.md from the results
    python bench/zoo.py list

Non-classifiers (issue 15, `TASKS`): a 3-head proposal detector, a U-Net, a CTC digit-string recognizer
and a third-party-style dynamic-shape ONNX, built and trained briefly on MNIST scenes by bench/zoo_tasks.py,
each with its own calibration .npz (label masks for the U-Net) and flags (--output-kind, --input-shape);
their section of docs/zoo.md shows every artifact's worst output judged as its kind.

Per-model results: bench/results/zoo/<model>.json (the run can be stopped and continued).
Needs `pip install -e '.[convert,dev,zoo]'` (transformers); it is a benchmark, not part of `make test`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "zoo"
DOC = ROOT / "docs" / "zoo.md"
SIZE = 160
N_HEAD = 500  # training digits the head is fitted on (never in the .npz)
N_BN = 64  # training digits the BatchNorm statistics are taken from
TARGETS, PRECISIONS = "onnx,tflite,edgetpu", "fp32,int8"
CALIB_SIZE, VAL_SIZE = 100, 200
COLUMNS = ("onnx fp32", "onnx int8", "tflite fp32", "tflite int8", "edgetpu int8")
MAX_SECONDS, MAX_RSS = 180, 4 * 2**30  # issue 8's bounds for the whole matrix on this 2-core machine
PIXELS = {"0-1": [], "0-255": ["--mean", "0", "--std", repr(1 / 255)]}  # edgekit: (x/255 - mean) / std
OK_CODES = {0: "ok", 10: "ok (Edge TPU model pre-flighted, no compiler here)", 8: "some artifacts failed"}


@dataclass(frozen=True)
class ZooModel:
    """One zoo entry: where it comes from and how it is built."""

    name: str
    package: str  # keras | transformers | edgekit
    cls: str  # keras.applications function, or transformers <Family> (Config / ForImageClassification)
    kwargs: dict[str, Any] = field(default_factory=dict)  # config overrides (transformers)
    note: str = ""


def _k(cls: str) -> ZooModel:
    return ZooModel(f"keras_{cls.lower()}", "keras", cls)


def _t(name: str, family: str, note: str = "", **kwargs: Any) -> ZooModel:
    return ZooModel(f"hf_{name}", "transformers", family, kwargs, note)


# Ordered small and cheap first, so that a run cut short has covered the most families. Every keras.applications
# family under 30 M parameters (RegNet is not in Keras 3's applications; VGG and InceptionResNetV2 are over 30 M).
ZOO: tuple[ZooModel, ...] = (
    ZooModel("mnist_cnn", "edgekit", "models/mnist_cnn.pt2", note="bundled, trained"),
    _k("MobileNetV3Small"),
    _t("mobilenet_v2", "MobileNetV2", "1.0, 224 config"),
    _t("resnet18", "ResNet", "ResNet-18", layer_type="basic", depths=[2, 2, 2, 2],
       hidden_sizes=[64, 128, 256, 512]),
    _t("convnextv2_atto", "ConvNextV2", "atto", depths=[2, 2, 6, 2], hidden_sizes=[40, 80, 160, 320]),
    _k("EfficientNetB0"),
    _t("efficientnet_b0", "EfficientNet", "B0", width_coefficient=1.0, depth_coefficient=1.0,
       image_size=SIZE, hidden_dim=1280, dropout_rate=0.2),
    _k("MobileNetV2"),
    _t("mobilenet_v1", "MobileNetV1", "1.0"),
    _t("regnet_y_400mf", "RegNet", "RegNetY-400MF", hidden_sizes=[48, 104, 208, 440], depths=[1, 3, 6, 6],
       groups_width=8, layer_type="y"),
    _k("MobileNet"),
    _k("MobileNetV3Large"),
    _t("mobilevit_s", "MobileViT", "small", image_size=SIZE),
    _k("EfficientNetV2B0"),
    _t("levit_128s", "Levit", "128S", image_size=SIZE),
    _t("hgnetv2", "HGNetV2", "HGNetV2Config defaults"),
    _k("NASNetMobile"),
    _k("DenseNet121"),
    _t("bit_resnetv2_50", "Bit", "BiT-ResNetV2-50 defaults"),
    _t("poolformer_s12", "PoolFormer", "S12 defaults"),
    _k("ResNet50"),
    _k("ResNet50V2"),
    _k("Xception"),
    _k("InceptionV3"),
    _t("convnext_tiny", "ConvNext", "tiny defaults"),
    _k("ConvNeXtTiny"),
)
# Issue 15: what people deploy besides classifiers, built and trained in code (bench/zoo_tasks.py)
TASKS: tuple[ZooModel, ...] = (
    ZooModel("det_faceproposal", "task", "torch .pt2", note="3-head proposal net: obj, cls, box per 8x8 cell"),
    ZooModel("unet_seg", "task", "torch .pt2", note="U-Net, 11 classes per pixel, label masks"),
    ZooModel("crnn_digits", "task", "torch .pt2", note="CTC recognizer of 4-digit strings, (N,T,C) output"),
    ZooModel("east_dyn_onnx", "task", "ONNX opset 12, dynamic N,H,W", note="EAST-style, TorchScript exporter"),
    # trained third-party ONNX from the rapidocr-onnxruntime wheel (Paddle2ONNX exports), on text rendered with PIL
    ZooModel("ppocr_det", "task", "PP-OCRv4 det ONNX, dynamic N,H,W", note="DB text detector, trained"),
    ZooModel("ppocr_rec", "task", "PP-OCRv4 rec ONNX, dynamic N,W", note="text-line CTC recogniser, trained"),
    ZooModel("ppocr_cls", "task", "PP-OCR v2.0 cls ONNX, dynamic N,H,W", note="0/180 orientation, trained"),
)
BY_NAME = {m.name: m for m in (*ZOO, *TASKS)}


# ----------------------------------------------------------------------------- data


def _digits(split: str, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 (N, SIZE, SIZE, 3), int64 labels) from the bundled MNIST split ("train" or "test")."""
    from PIL import Image

    from edgekit.calibration import mnist_split

    x_train, y_train, x_test, y_test = mnist_split()
    x, y = (x_train, y_train) if split == "train" else (x_test, y_test)
    x, y = x[:n], y[:n]
    big = np.stack([np.asarray(Image.fromarray(d).resize((SIZE, SIZE), Image.Resampling.BILINEAR)) for d in x])
    return np.repeat(big[..., None], 3, axis=3), np.asarray(y, np.int64)


def calibration_npz(layout: str) -> Path:
    """The 1,000 MNIST test digits at SIZE x SIZE x 3, uint8, in LAYOUT: edgekit scales them by 1/255."""
    path = RESULTS / "data" / f"mnist{SIZE}_{layout.lower()}.npz"
    if not path.is_file():
        x, y = _digits("test")
        if layout == "NCHW":
            x = x.transpose(0, 3, 1, 2)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, x=np.ascontiguousarray(x), y=y)
        os.replace(tmp, path)
    return path


def fit_head(feats: np.ndarray, y: np.ndarray, classes: int = 10) -> tuple[np.ndarray, np.ndarray, float]:
    """Ridge regression of one-hot labels on features: (W (F, classes), b (classes,), train accuracy).

    Features are standardised and the ridge strength is picked on a held-out fifth; the
    standardisation is folded back into W and b so the head is one plain linear layer.
    """
    f = feats.reshape(len(feats), -1).astype(np.float64)
    mu, sd = f.mean(0), f.std(0) + 1e-6
    z = (f - mu) / sd
    t = np.eye(classes)[y] * 4.0 - 2.0  # +-2 targets: logits with a usable spread

    def solve(zz: np.ndarray, tt: np.ndarray, lam: float) -> np.ndarray:
        za = np.hstack([zz, np.ones((len(zz), 1))])
        reg = lam * np.eye(za.shape[1])
        reg[-1, -1] = 0.0
        return np.linalg.solve(za.T @ za + reg, za.T @ tt)

    cut = len(z) * 4 // 5
    best = max((10.0 ** p for p in range(-1, 5)),
               key=lambda lam: np.mean((np.hstack([z[cut:], np.ones((len(z) - cut, 1))])
                                        @ solve(z[:cut], t[:cut], lam)).argmax(1) == y[cut:]))
    wa = solve(z, t, best)
    w = wa[:-1] / sd[:, None]
    b = wa[-1] - mu @ w
    acc = float(np.mean((f @ w + b).argmax(1) == y))
    return w.astype(np.float32), b.astype(np.float32), acc


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
    bns = [mod for mod in model.modules() if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        if bns:
            for bn in bns:
                bn.reset_running_stats()
                bn.momentum = None  # cumulative average over the batches below
            model.train()
            for i in range(0, N_BN, 32):
                model(pixel_values=xt[i:i + 32])
            model.eval()
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

    wrapped = Logits(model).eval()
    example = (torch.zeros(2, 3, SIZE, SIZE),)
    try:  # a dynamic batch, as the bundled model has; static batch 1 where the model specialises on it
        ep = torch.export.export(wrapped, example, dynamic_shapes=({0: torch.export.Dim("batch", max=1024)},))
        batch = "dynamic"
    except Exception as exc:  # noqa: BLE001 - any export failure: record it and fall back
        ep = torch.export.export(wrapped, (torch.zeros(1, 3, SIZE, SIZE),))
        batch = f"static 1 (dynamic export failed: {type(exc).__name__})"
    path = out / f"{m.name}.pt2"
    torch.export.save(ep, path)
    return {"file": path, "params": int(sum(p.numel() for p in model.parameters())), "layout": "NCHW",
            "pixels": "0-1",
            "bn_layers": len(bns), "head": f"Linear {head.in_features}->10", "head_train_accuracy": acc,
            "batch": batch}


def build(name: str) -> None:
    """Child process: build model NAME and write its build record (JSON) next to the source file."""
    m = BY_NAME[name]
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
    while status is None:
        pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status, usage = st, ru
            continue
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
            "peak_tree_rss_bytes": tree_peak}  # sampled every 0.5 s: PSS of the child and its live children


def _tail(path: Path, n: int = 1500) -> str:
    text = path.read_text(errors="replace") if path.is_file() else ""
    return text[-n:]


def convert_command(src: str, calib: str, out: Path, pixels: str = "0-1", extra: list[str] | None = None
                    ) -> list[str]:
    """The CLI call; uint8 digits are scaled to [0, 1], or kept at 0-255 with mean 0, std 1/255 (PIXELS).
    EXTRA: a task model's own flags (--output-kind, --input-shape)."""
    return [sys.executable, "-m", "edgekit.cli", "convert", src, "--target", TARGETS, "--quantize", PRECISIONS,
            "--calib", calib, "--calib-size", str(CALIB_SIZE), "--val-size", str(VAL_SIZE), "--out", str(out),
            *PIXELS[pixels], *(extra or []), "--force", "--json"]


def run_one(m: ZooModel, timeout: float, max_rss: float) -> dict[str, Any]:
    """Build (a child) then convert (a child) model M; the result record, written to RESULTS/<name>.json."""
    logs = RESULTS / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    rec: dict[str, Any] = {"name": m.name, "package": m.package, "class": m.cls, "note": m.note,
                           "config": m.kwargs, "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "machine": machine()}
    if m.package == "edgekit":
        src, calib = m.cls, "mnist"
        rec["source"] = {"file": m.cls, "params": 0, "layout": "NCHW", "input": "1x28x28"}
    else:
        b = _child([sys.executable, str(Path(__file__).resolve()), "build", m.name], logs / f"{m.name}.build.log",
                   timeout, max_rss)
        rec["build"] = b
        info = RESULTS / "src" / f"{m.name}.build.json"
        if b["exit_code"] != 0 or not info.is_file():
            rec["status"] = ("build timed out" if b["timed_out"] else "build over the RSS cap"
                             if b["killed_over_rss"] else "build failed")
            rec["build"]["log_tail"] = _tail(logs / f"{m.name}.build.log")
            return _save(rec)
        rec["source"] = json.loads(info.read_text())
        if m.package == "task":  # its own scenes, input size and flags
            src, calib = rec["source"]["file"], rec["source"]["calib"]
        else:
            rec["source"]["input"] = f"{SIZE}x{SIZE}x3"
            src, calib = rec["source"]["file"], str(calibration_npz(rec["source"]["layout"]).relative_to(ROOT))
    out = RESULTS / "out" / m.name
    cmd = convert_command(src, calib, out, (rec.get("source") or {}).get("pixels", "0-1"),
                          (rec.get("source") or {}).get("args"))
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


def _head() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def machine() -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").is_file() else ""
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores, {mem:.0f} GiB"


# ----------------------------------------------------------------------------- the report


def _column(a: dict[str, Any]) -> str:
    if "edgetpu" in a.get("extra", {}) or "uint8io" in a["path"] or a["format"] == "edgetpu":
        return "edgetpu int8"
    return f"{a['format']} {a['precision']}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _cell(a: dict[str, Any] | None) -> str:
    if a is None:
        return "not made"
    if a.get("status") == "failed":
        f = a.get("failure") or {}
        return f"**FAILED** at {f.get('step') or '?'}" + (f" (`{f['op']}`)" if f.get("op") else "")
    fid = a.get("fidelity") or {}
    mark = "ok" if fid.get("passed") else "ok, **fidelity miss**"
    return f"{mark}: agree {_pct(fid.get('top1_agreement'))}, acc {_pct(fid.get('accuracy'))}"


def _size(n: float | None, unit: str = "B") -> str:
    if not n:
        return "-"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.1f} {suffix}{unit}"
    return f"{n:.0f} {unit}"


def over_time(rec: dict[str, Any]) -> bool:
    return float((rec.get("convert") or {}).get("seconds") or 0) > MAX_SECONDS


def peak_rss(rec: dict[str, Any]) -> int:
    """The largest RSS seen for the convert child: its own (wait4), the sampled tree, the manifest's `run`."""
    run = (rec.get("manifest") or {}).get("run") or {}
    conv = rec.get("convert") or {}
    return max(conv.get("peak_rss_bytes") or 0, conv.get("peak_tree_rss_bytes") or 0, run.get("peak_rss_bytes") or 0,
               run.get("peak_rss_children_bytes") or 0)


def over_rss(rec: dict[str, Any]) -> bool:
    return peak_rss(rec) > MAX_RSS


def _bound(text: str, over: bool) -> str:
    return f"**{text}** (over)" if over else text


def _row(rec: dict[str, Any]) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
    """A table row for REC and the failures to list under the table."""
    src = rec.get("source") or {}
    man = rec.get("manifest") or {}
    arts = {_column(a): a for a in man.get("artifacts", [])}
    ref = next((a["fidelity"].get("reference_accuracy") for a in arts.values() if a.get("fidelity")), None)
    tpu = (arts.get("edgetpu int8") or {}).get("extra", {}).get("edgetpu") or {}
    tpu_s = "-"
    if tpu.get("ops_total"):
        first = tpu.get("first_unsupported") or {}
        tpu_s = (f"{tpu['ops_on_tpu']}/{tpu['ops_total']} ops, {_size(tpu.get('macs_on_tpu'), '')}MAC "
                 f"({_pct(tpu.get('macs_on_tpu_fraction'))})" + (f", stops at `{first.get('op')}`" if first else ""))
    conv = rec.get("convert") or {}
    rss = peak_rss(rec)
    status = rec.get("status", "?")
    cells = [_cell(arts.get(c)) if man else f"**{status}**" for c in COLUMNS]
    origin = f"{rec['package']} `{rec['class']}`" + (f" ({rec['note']})" if rec.get("note") else "")
    row = [f"`{rec['name']}`", origin, _size(src.get("params"), ""), str(src.get("input", "-")), _pct(ref), *cells,
           tpu_s, _bound(f"{conv.get('seconds', '-')} s", over_time(rec)), _bound(_size(rss), over_rss(rec))]
    fails = [(c, a["failure"]) for c, a in arts.items() if a.get("status") == "failed"]
    if not man and status != "?":
        child = conv or rec.get("build") or {}
        tail = [ln for ln in child.get("log_tail", "").strip().splitlines() if ln.strip()]
        fails.append((f"{'convert' if conv else 'build'}: {status} after {child.get('seconds')} s",
                      {"message": f"last line of its log: {tail[-1] if tail else '(none)'}"}))
    return "| " + " | ".join(row) + " |", fails


def _clean(text: Any, limit: int) -> str:
    """One line of at most LIMIT characters, without terminal colours or this checkout's absolute path."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(text or "")).replace(str(ROOT) + os.sep, "")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def report() -> Path:
    """docs/zoo.md from every RESULTS/<model>.json; models without one are listed as planned, not run."""
    recs = {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))}
    done = [recs[m.name] for m in ZOO if m.name in recs]
    todo = [m for m in ZOO if m.name not in recs]
    full = [r for r in done if r.get("status", "").startswith("ok")]
    partial = [r for r in done if r.get("status") == "some artifacts failed"]
    aborted = [r for r in done if r not in full and r not in partial]
    misses = sum(1 for r in done for a in (r.get("manifest") or {}).get("artifacts", [])
                 if a.get("status") == "ok" and not (a.get("fidelity") or {}).get("passed"))
    tools = next(((r.get("manifest") or {}).get("tool_versions") for r in done if r.get("manifest")), {}) or {}
    lines = [
        "# Model-zoo coverage",
        "",
        "Generated by `python bench/zoo.py report` from `bench/results/zoo/*.json` (do not edit by hand).",
        "Standard architectures with random weights (no download), BatchNorm statistics set from real images and",
        f"a 10-class head fitted on {N_HEAD} real MNIST training digits (ridge regression on the frozen features),",
        f"converted by the real CLI in a child process, one model at a time. Input {SIZE}x{SIZE}x3: the MNIST test",
        "digits resized and replicated to 3 channels (a uint8 .npz in the source's layout; edgekit scales by 1/255;",
        "Keras applications with their own Rescaling/Normalization layers get 0-255 pixels: `--mean 0 --std 1/255`);",
        f"{CALIB_SIZE} calibrate, {VAL_SIZE} held-out validate. The bundled MNIST CNN uses `--calib mnist`.",
        "",
        f"**Summary: {len(done)} of {len(ZOO)} models run: {len(full)} fully converted, {len(partial)} with "
        f"per-artifact failures, {len(aborted)} aborted or timed out; {misses} artifact(s) made but below the "
        f"fidelity thresholds; {sum(over_time(r) or over_rss(r) for r in done)} over the resource bounds "
        f"({MAX_SECONDS} s, {MAX_RSS / 2**30:.0f} GiB); {len(todo)} planned, not run yet.**",
        "",
        f"- Date: {min((r['date'] for r in done), default='-')} to {max((r['date'] for r in done), default='-')}",
        f"- Machine: {done[0]['machine'] if done else machine()} (shared with other work while measuring)",
        f"- edgekit: the working tree at commit {_head()} when this page was written; edgekit/ was being changed "
        "by others while the zoo ran, so each row reflects the code at its own date (rerun with `--only NAME`)",
        "- Tools: " + ", ".join(f"{k} {v}" for k, v in sorted(tools.items())),
        f"- Command per model: `{next((r['command'] for r in done if r.get('command')), '')}`",
        "- Zoo: `python bench/zoo.py run [--only NAME,...] [--skip-done] [--timeout 600] [--max-rss-gb 8]`, then "
        "`python bench/zoo.py report`",
        "",
        "Cells: `agree` = top-1 agreement with the source on the held-out digits, `acc` = accuracy against the",
        "labels (`src acc` is the source model's own). `fidelity miss` = made and validated, below edgekit's",
        "thresholds (random weights quantize worse than trained ones). Edge TPU: ops and MACs the pre-flight",
        "predicts on the TPU (no `edgetpu_compiler` here). Time: wall seconds of the convert child; peak RSS: the",
        "largest of the child's own (wait4), its process tree's (PSS, sampled) and the manifest's `run` figures;",
        "**(over)** marks issue 8's bounds. A child is killed past `--timeout` (600 s) or past `--max-rss-gb`",
        "(default 8 GiB: the machine is shared); the status names the cap that applied.",
        "",
        "| model | source | params | input | src acc | " + " | ".join(COLUMNS) + " | Edge TPU (predicted) | time | "
        "peak RSS |",
        "|" + "---|" * (8 + len(COLUMNS)),
    ]
    failures: list[str] = []
    for r in done:
        row, fails = _row(r)
        lines.append(row)
        for col, f in fails:
            where = (f" at {f['step']}" + (f" (`{f['op']}`)" if f.get("op") else "")) if f.get("step") else ""
            hint = _clean(f.get("hint"), 300)
            failures.append(f"- `{r['name']}` {col}{where}: {_clean(f.get('message'), 400)}"
                            + (f" Hint: {hint}" if hint else ""))
    lines += ["", "## Failures", ""] + (failures or ["None among the models run."])
    lines += ["", "## Planned, not run yet", ""]
    lines += [f"- `{m.name}`: {m.package} `{m.cls}`" + (f" ({m.note})" if m.note else "") for m in todo] or [
        "None: every zoo model has a result."]
    if aborted:
        names = ",".join(r["name"] for r in aborted)
        lines += ["", "Aborted here, to run again where there is room (no result is known for them): "
                  + ", ".join(f"`{r['name']}` ({r.get('status')})" for r in aborted)
                  + f". For instance `python bench/zoo.py run --only {names} --max-rss-gb 16 --timeout 1800`."]
    lines += task_section(recs)
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text("\n".join(lines) + "\n")
    return DOC


_MEASURE = {"classes": ("top1_agreement", "top-1"), "dense": ("pixel_agreement", "px"),
            "sequence": ("step_agreement", "step"), "regression": ("cosine", "cos")}


def _task_cell(a: dict[str, Any] | None) -> str:
    """A task artifact: its worst output, judged as its kind (per-pixel, per-step, cosine), and mIoU if measured."""
    if a is None or a.get("status") == "failed":
        return _cell(a)
    fid = a.get("fidelity") or {}
    key, word = _MEASURE.get(fid.get("kind") or "regression", ("cosine", "cos"))
    v = fid.get(key)
    value = "-" if v is None else f"{v:.4f}" if key == "cosine" else f"{100 * v:.1f}%"
    n = len(fid.get("outputs") or []) or 1
    miou = f", mIoU {fid['miou']:.3f}" if fid.get("miou") is not None else ""
    mark = "ok" if fid.get("passed") else "ok, **fidelity miss**"
    return f"{mark}: `{fid.get('output') or '?'}` {word} {value}{miou}" + (f" (worst of {n})" if n > 1 else "")


TASKS_HEADING = "## Beyond classifiers (issue 15)"


N_TASK_SCENES = 400  # bench/zoo_tasks.N_CALIB: test scenes in each task model's .npz


def _held_out(done: list[dict[str, Any]]) -> str:
    """The held-out sample counts the task models were validated on, as their manifests say."""
    counts = {(a.get("fidelity") or {}).get("samples") for r in done for a in (r.get("manifest") or {}).get(
        "artifacts", [])} - {None}
    return "/".join(str(c) for c in sorted(counts)) or "-"


def _task_outputs(man: dict[str, Any]) -> str:
    """The source's outputs as the first validated artifact judged them: name, shape, kind."""
    for a in man.get("artifacts", []):
        outs = (a.get("fidelity") or {}).get("outputs") or []
        if outs and a["format"] == "onnx":
            return ", ".join(f"`{o['name']}` {'x'.join(map(str, o['shape'][1:]))} {o['kind']}" for o in outs)
    return "-"


def report_tasks() -> Path:
    """Rewrite only docs/zoo.md's non-classifier section (the classifier table stays as the last full run wrote it:
    its results may live on another machine)."""
    recs = {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))}
    text = DOC.read_text() if DOC.is_file() else "# Model-zoo coverage\n"
    head = text.split("\n" + TASKS_HEADING)[0].rstrip("\n")
    DOC.write_text(head + "\n" + "\n".join(task_section(recs)) + "\n")
    return DOC


def task_section(recs: dict[str, dict[str, Any]]) -> list[str]:
    """docs/zoo.md's section of non-classifiers (issue 15): one row per TASKS model that has a result."""
    done = [recs[m.name] for m in TASKS if m.name in recs]
    lines = ["", TASKS_HEADING, "",
             "Built and trained in code by `bench/zoo_tasks.py` (no download), briefly (a few hundred steps on the",
             "bundled MNIST training digits), with real inputs: scenes, lines and digits made of the 1,000 MNIST test",
             f"digits ({N_TASK_SCENES} per model: {CALIB_SIZE} calibrate, {_held_out(done)} held-out validate).",
             "The `ppocr_*` rows are trained third-party models (PP-OCR ONNX from the `rapidocr-onnxruntime` wheel,",
             "Paddle2ONNX exports) on text rendered with PIL (pages for det, word lines for rec, lines and their",
             "180-degree rotations, labelled, for cls), preprocessed as PP-OCR does.",
             "Each cell: the artifact's worst output,",
             "judged as its kind (edgekit.fidelity: `px` per-pixel argmax agreement of a dense map, `step` per-step",
             "argmax agreement of a sequence, `cos` cosine of a regression map; mIoU where the .npz has label masks);",
             "`--json` and the manifest hold every output. `task` is the source model's own figure on test data.",
             f"Bounds: {MAX_SECONDS} s and {MAX_RSS / 2**30:.0f} GiB per model for the whole matrix (`time`: wall",
             "seconds "
             "of the convert child; building and training each model is a separate child, "
             f"{', '.join(str((r.get('build') or {}).get('seconds')) for r in done) or '-'} s here).",
             f"Run {min((r['date'] for r in done), default='-')} to {max((r['date'] for r in done), default='-')} on "
             f"{done[0]['machine'] if done else machine()}, shared with five other engineers' builds and tests "
             "(load average about 9 on 2 cores): every time here is inflated by that load.", "",
             "| model | source | params | input | outputs | task (source) | " + " | ".join(COLUMNS)
             + " | time | peak RSS |", "|" + "---|" * (8 + len(COLUMNS))]
    failures: list[str] = []
    for r in done:
        src, man = r.get("source") or {}, r.get("manifest") or {}
        arts = {_column(a): a for a in man.get("artifacts", [])}
        status = r.get("status", "?")
        cells = [_task_cell(arts.get(c)) if man else f"**{status}**" for c in COLUMNS]
        tpu = (arts.get("edgetpu int8") or {}).get("extra", {}).get("edgetpu") or {}
        if tpu.get("ops_total"):  # the pre-flight's prediction (no edgetpu_compiler here)
            cells[-1] += f"; TPU (predicted) {tpu['ops_on_tpu']}/{tpu['ops_total']} ops"
        conv = r.get("convert") or {}
        lines.append("| " + " | ".join([f"`{r['name']}`", f"{r['class']} ({r.get('note', '')})",
                                         _size(src.get("params"), ""), str(src.get("input", "-")),
                                         _task_outputs(man), str(src.get("task", "-")), *cells,
                                         _bound(f"{conv.get('seconds', '-')} s", over_time(r)),
                                         _bound(_size(peak_rss(r)), over_rss(r))]) + " |")
        for col, a in arts.items():
            f = a.get("failure") or {}
            if a.get("status") == "failed":
                failures.append(f"- `{r['name']}` {col} at {f.get('step')}: {_clean(f.get('message'), 400)}")
            elif not (a.get("fidelity") or {}).get("passed"):
                why = "; ".join(a["fidelity"].get("failures") or [])
                failures.append(f"- `{r['name']}` {col}: {_clean(why, 400)}")
        if not man:
            tail = [ln for ln in (conv or r.get("build") or {}).get("log_tail", "").splitlines() if ln.strip()]
            failures.append(f"- `{r['name']}`: {status}: {_clean(tail[-1] if tail else '(no log)', 300)}")
    arts_all = [a for r in done for a in (r.get("manifest") or {}).get("artifacts", [])]
    passing = sum(1 for a in arts_all if a.get("status") == "ok" and (a.get("fidelity") or {}).get("passed"))
    lines.append(f"\n**{passing} of {len(arts_all)} artifacts of {len(done)} task models made and passing on every "
                 "output.**")
    for r in done:
        for change in ((r.get("manifest") or {}).get("source") or {}).get("changes") or []:
            failures.append(f"- `{r['name']}` pinned before any step: {change}")
    if done:
        lines.append(f"\nCommand per model, e.g.: `{done[-1].get('command', '')}`")
    lines += ["", "Failures, fidelity misses, and what pinning changed:", ""] + (failures or ["None."])
    todo = [m.name for m in TASKS if m.name not in recs]
    if todo:
        lines += ["", "Not run yet: " + ", ".join(f"`{n}`" for n in todo) + " (`python bench/zoo.py run --tasks`)."]
    return lines


# ----------------------------------------------------------------------------- CLI


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
        for n in names:
            if args.skip_done and (RESULTS / f"{n}.json").is_file():
                continue
            rec = run_one(BY_NAME[n], args.timeout, args.max_rss_gb * 2**30)
            print(f"{n}: {rec['status']} ({(rec.get('convert') or rec.get('build') or {}).get('seconds')} s)",
                  flush=True)
            (report_tasks if args.tasks else report)()
    print((report_tasks if args.tasks else report)())
    return 0


if __name__ == "__main__":
    sys.exit(main())
