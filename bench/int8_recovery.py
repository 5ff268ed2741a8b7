"""int8 recovery (issue 9): plain int8 vs each recipe vs auto, on MobileNet- and ResNet-class models.

Why: plain post-training int8 collapses on some real architectures (issue 9: MobileNetV2 at 17% top-1
agreement). This benchmark measures what edgekit's recipes (edgekit.quantize) recover, with the same
code the convert steps run, and says where the targets are missed:
  `auto` >= 97% top-1 agreement with <= 10% of MACs left in float (ONNX, TFLite); the Edge TPU artifact
  (float-free recipes, graph fixes) at least plain's fidelity with every op predicted on the TPU.

Models (no downloads; small inputs, the machine has 2 cores):
- keras.applications MobileNetV2 and MobileNetV3Small (weights=None, SIZE x SIZE): BatchNorm statistics
  set from real photos (scikit-image samples, random crops) by forward passes in training mode, then the
  classifier fitted by ridge regression on the frozen backbone's features of 500 real MNIST digits;
- resnet10: a ResNet-class network built here (7x7 stem, padded max-pool, four stages of one basic
  block each, BatchNorm, identity/projection shortcuts), prepared the same way;
- mnist_mobilenet: a small MobileNetV2 (alpha 0.35, 32 x 32) trained to convergence on the first 2,000 bundled
  MNIST training digits (60 epochs, shifted/rotated/zoomed copies): the realistic case, a model a user ships;
- mnist_mobilenet_short: the same network stopped after 8 epochs without augmentation, BatchNorm statistics then
  set from 512 digits: an undertrained model whose top-1 margins are small, kept as the hard case (the benchmark's
  only trained model until 2026-11-25, then trained on all 4,000 digits for 4 epochs, 82% test accuracy).
Neither saw the calibration digits: a trained model is surer of its training samples, so judged on them (auto
judges on held-out calibration samples) it looks better than on new data (the short model's TFLite
equalize+bias: 97.9% on 1,000 of its training digits, 96.0% on the test digits).
Calibration: CALIB MNIST training digits (2000..3999; the head of the random-weight models never saw them; auto
calibrates on half of them and judges on the other half, then rebuilds its choice on all); validation: VAL MNIST
test digits (labelled), all of the bundled ones: one standard error of an agreement near 97% is 0.5 points on
1,000 samples, 1.2 on the 200 this benchmark used until 2026-11-25 (too few to tell 96% from 98%).
Figures per recipe: top-1 agreement and cosine against the float model of the same format, accuracy
(and the float model's), size, latency (1 thread, batch 1, median of RUNS), ops left in float and their
share of MACs, whether the search judged it to meet the thresholds, seconds.

Trained non-classifiers (issue 29; bench/int8_tasks.py): PP-OCRv4's text-line recognizer and text detector and
MTCNN's P-Net, converted by `edgekit convert` with plain and auto int8, judged by what their users read (CTC steps,
the thresholded mask and its regions, the proposal cells) on held-out inputs of two distributions:

    python bench/int8_recovery.py --only ppocr_rec,ppocr_det,mtcnn_pnet

    python bench/int8_recovery.py [--only mobilenet_v2,...] [--out bench/results/int8_recovery.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import int8_tasks  # noqa: E402  (beside this file: the trained non-classifier rows)

SIZE, CALIB, VAL, RUNS = 96, 2000, 1000, 30
# entropy and mixed precision: in auto's trials (mixed on its own is auto's last step on plain)
ONNX_RECIPES = ("plain", "uint8", "bias", "equalize", "equalize+bias", "percentile", "mse", "auto")
TFLITE_RECIPES = ("plain", "bias", "equalize", "equalize+bias", "percentile", "mse", "auto")
TARGET_AGREEMENT, TARGET_MACS = 0.97, 0.10
# where auto misses the target: auto again with no cap on the MACs left in float (edgekit.quantize.search's is 50%),
# so that the table says how much float the model needs, not only that it needs more than the cap
UNCAPPED = "auto_uncapped"


# ----------------------------------------------------------------------------- data


def digits(split: str, size: int, start: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 (n, size, size, 3) in [0, 1] and labels, from the bundled MNIST split."""
    from PIL import Image

    from edgekit.data.calibration import mnist_split

    x_train, y_train, x_test, y_test = mnist_split()
    x, y = (x_train, y_train) if split == "train" else (x_test, y_test)
    x, y = x[start:start + n], y[start:start + n]
    big = np.stack([np.asarray(Image.fromarray(d).resize((size, size), Image.Resampling.BILINEAR)) for d in x])
    return np.repeat(big[..., None], 3, axis=3).astype(np.float32) / 255.0, np.asarray(y, np.int64)


def photos(size: int, n: int = 64, seed: int = 0) -> np.ndarray:
    """float32 (n, size, size, 3) in [0, 1]: random crops of scikit-image's sample photos."""
    from PIL import Image
    from skimage import data

    rng = np.random.default_rng(seed)
    imgs = [getattr(data, k)() for k in ("astronaut", "coffee", "chelsea", "rocket", "cat", "immunohistochemistry",
                                         "hubble_deep_field", "retina")]
    imgs = [np.stack([i] * 3, -1) if i.ndim == 2 else i[..., :3] for i in imgs]
    out = []
    for k in range(n):
        img = imgs[k % len(imgs)]
        h, w = img.shape[:2]
        s = int(rng.integers(min(h, w) // 3, min(h, w)))
        y0, x0 = int(rng.integers(0, h - s + 1)), int(rng.integers(0, w - s + 1))
        crop = Image.fromarray(img[y0:y0 + s, x0:x0 + s]).resize((size, size), Image.Resampling.BILINEAR)
        out.append(np.asarray(crop, np.float32) / 255.0)
    return np.stack(out)


def fit_head(feats: np.ndarray, y: np.ndarray, classes: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Ridge regression of +-2 one-hot targets on standardized features, folded into one linear layer."""
    f = feats.reshape(len(feats), -1).astype(np.float64)
    mu, sd = f.mean(0), f.std(0) + 1e-6
    z = np.hstack([(f - mu) / sd, np.ones((len(f), 1))])
    t = np.eye(classes)[y] * 4.0 - 2.0
    reg = 10.0 * np.eye(z.shape[1])
    reg[-1, -1] = 0.0
    wa = np.linalg.solve(z.T @ z + reg, z.T @ t)
    w = wa[:-1] / sd[:, None]
    return w.astype(np.float32), (wa[-1] - mu @ w).astype(np.float32)


# ----------------------------------------------------------------------------- models


def resnet10(size: int) -> Any:
    import keras
    from keras import layers

    def block(x: Any, ch: int, stride: int) -> Any:
        y = layers.Conv2D(ch, 3, stride, padding="same", use_bias=False)(x)
        y = layers.ReLU()(layers.BatchNormalization()(y))
        y = layers.BatchNormalization()(layers.Conv2D(ch, 3, padding="same", use_bias=False)(y))
        if stride != 1 or x.shape[-1] != ch:
            x = layers.BatchNormalization()(layers.Conv2D(ch, 1, stride, use_bias=False)(x))
        return layers.ReLU()(layers.Add()([x, y]))

    inp = keras.Input((size, size, 3))
    x = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(32, 7, 2, padding="same", use_bias=False)(inp)))
    x = layers.MaxPooling2D(3, 2, padding="same")(x)
    for ch, stride in ((32, 1), (64, 2), (128, 2), (256, 2)):
        x = block(x, ch, stride)
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, layers.Dense(10)(x), name="resnet10")


def prepared(name: str) -> tuple[Any, int, float, dict[str, Any]]:
    """(Keras model, input size, pixel scale it expects (1 or 255), facts)."""
    import keras

    keras.utils.set_random_seed(0)
    if name in ("mnist_mobilenet", "mnist_mobilenet_short"):
        return trained_mobilenet(converged=name == "mnist_mobilenet")
    size = SIZE
    if name == "mobilenet_v2":
        model = keras.applications.MobileNetV2(input_shape=(size, size, 3), weights=None, classes=10,
                                               classifier_activation=None)
    elif name == "mobilenet_v3_small":
        model = keras.applications.MobileNetV3Small(input_shape=(size, size, 3), weights=None, classes=10,
                                                    classifier_activation=None)
    else:
        model = resnet10(size)
    scale = 255.0 if any(isinstance(la, keras.layers.Rescaling) for la in model.layers) else 1.0
    bns = [la for la in model.layers if isinstance(la, keras.layers.BatchNormalization)]
    for la in bns:
        la.momentum = 0.0
    model(photos(size) * scale, training=True)  # moving statistics := the photos' batch statistics
    head = next(la for la in reversed(model.layers) if getattr(la, "kernel", None) is not None)
    x, y = digits("train", size, 0, 500)
    feats = keras.Model(model.inputs, head.input).predict(x * scale, batch_size=50, verbose=0)
    w, b = fit_head(feats, y)
    head.set_weights([w.reshape(head.kernel.shape), b])
    return model, size, scale, {"params": int(model.count_params()), "bn_layers": len(bns),
                                "prepared": "BN stats from 64 photo crops, ridge head on 500 MNIST digits"}


TRAIN = 2000  # training digits 0..TRAIN-1; calibration is 2000.. (digits the models never saw)
TRAINED = {True: f"60 epochs on {TRAIN} MNIST digits (random shifts, rotations, zooms), Adam 3e-3 with cosine decay",
           False: f"8 epochs on {TRAIN} MNIST digits, BN statistics then set from 512 of them"}


def trained_mobilenet(converged: bool = True) -> tuple[Any, int, float, dict[str, Any]]:
    """MobileNetV2 0.35 at 32 x 32 trained on the bundled training digits. CONVERGED: to convergence, as a user's
    shipped model is; else 8 epochs, the undertrained hard case."""
    import keras

    size = 32
    model = keras.applications.MobileNetV2(input_shape=(size, size, 3), alpha=0.35, weights=None, classes=10,
                                           classifier_activation=None)
    x, y = digits("train", size, 0, TRAIN)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    t0 = time.perf_counter()
    if converged:
        for la in model.layers:  # Keras's 0.99 leaves the moving statistics behind in 32 steps an epoch
            if isinstance(la, keras.layers.BatchNormalization):
                la.momentum = 0.9
        aug = keras.Sequential([keras.layers.RandomTranslation(0.1, 0.1, fill_mode="constant"),
                                keras.layers.RandomRotation(0.04, fill_mode="constant"),
                                keras.layers.RandomZoom(0.1, fill_mode="constant")])
        inp = keras.Input((size, size, 3))
        trainer = keras.Model(inp, model(aug(inp)))
        epochs = 60
        steps = epochs * -(-TRAIN // 64)
        trainer.compile(keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(3e-3, steps)), loss,
                        metrics=["accuracy"])
        hist = trainer.fit(x, y, batch_size=64, epochs=epochs, verbose=0)
    else:
        model.compile(keras.optimizers.Adam(2e-3), loss, metrics=["accuracy"])
        hist = model.fit(x, y, batch_size=64, epochs=8, verbose=0)
        # 8 epochs leave BatchNorm's moving statistics far from the data's (inference-mode accuracy near chance):
        # set them from the training digits, as for the other models
        for la in model.layers:
            if isinstance(la, keras.layers.BatchNormalization):
                la.momentum = 0.0
        model(x[:512], training=True)
    xt, yt = digits("test", size, 0, VAL)
    test_acc = float((model.predict(xt, batch_size=100, verbose=0).argmax(1) == yt).mean())
    return model, size, 1.0, {"params": int(model.count_params()), "trained": TRAINED[converged],
                              "train_accuracy": round(float(hist.history["accuracy"][-1]), 4),
                              "test_accuracy": round(test_acc, 4),
                              "train_seconds": round(time.perf_counter() - t0, 1)}


# ----------------------------------------------------------------------------- measuring


def judge(y_ref: np.ndarray, y: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    a, b = y_ref.reshape(len(y_ref), -1).astype(np.float64), y.reshape(len(y), -1).astype(np.float64)
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)
    return {"top1_agreement": round(float((a.argmax(1) == b.argmax(1)).mean()), 4),
            "cosine": round(float(cos.mean()), 5), "accuracy": round(float((b.argmax(1) == labels).mean()), 4)}


def onnx_latency(path: Path, x: np.ndarray) -> float:
    from edgekit.quantize.onnx.graph import latency_ms

    return round(latency_ms(path, x, RUNS), 3)


def tflite_latency(path: Path) -> float:
    from edgekit.quantize.tflite.run import latency_ms

    return round(latency_ms(str(path), RUNS), 3)


def met(r: dict[str, Any]) -> bool:
    """Whether a row meets the issue's target: the agreement on validation, the float share."""
    return r["top1_agreement"] >= TARGET_AGREEMENT and r["macs_float_fraction"] <= TARGET_MACS


@contextlib.contextmanager
def float_cap(cap: float | None) -> Iterator[None]:
    """edgekit.quantize.search.AUTO_FLOAT_CAP set to CAP for the block (None: left as it is)."""
    import edgekit.quantize.search as search

    old = search.AUTO_FLOAT_CAP
    search.AUTO_FLOAT_CAP = old if cap is None else cap
    try:
        yield
    finally:
        search.AUTO_FLOAT_CAP = old


def trial_words(t: Any) -> str:
    more = f"[{t.float_nodes} float, {100 * t.macs_float_fraction:.1f}% MACs]" if t.float_nodes else ""
    return f"{t.recipe}{more}: {t.top1_agreement}"


def row(choice: Any, fig: dict[str, float], size: int, latency: float, seconds: float) -> dict[str, Any]:
    return {**fig, "size_bytes": size, "latency_ms": latency, "chosen": choice.chosen, "met_in_search": choice.met,
            "judged_on": choice.judged_on, "ops_in_float": len(choice.float_nodes),
            "macs_float_fraction": round(choice.macs_float_fraction, 4),
            "macs_float_needed_over": choice.macs_float_needed_over, "cost": choice.cost,
            "float_input_noise_agreement": choice.float_input_noise_agreement, "top1_margins": choice.top1_margins,
            "worst_group_error_share": choice.worst_group_error_share, "why": choice.why_words() or None,
            "trials": [trial_words(t) for t in choice.trials],
            "seconds": round(seconds, 1)}


def run_onnx(model: Any, work: Path, xc: np.ndarray, xv: np.ndarray, yv: np.ndarray, log: Any) -> dict[str, Any]:
    import onnx

    from edgekit.quantize.onnx.diagnose import diagnose
    from edgekit.quantize.onnx.graph import name_nodes, run_batches, session
    from edgekit.quantize.onnx.recipes import QuantData
    from edgekit.quantize.onnx.search import quantize_onnx
    from edgekit.steps.onnx_quantize import _pre_process

    src = work / "model.onnx"
    model.export(str(src), format="onnx")
    pre = work / "model.pre.onnx"
    _pre_process(src, pre, log)
    m = onnx.load(str(pre))
    name_nodes(m)
    onnx.save(m, str(pre))
    name = m.graph.input[0].name
    y_float = run_batches(session(str(pre)), xv, batch=32)[0]
    out: dict[str, Any] = {"fp32": {**judge(y_float, y_float, yv), "size_bytes": pre.stat().st_size,
                                    "latency_ms": onnx_latency(pre, xv)}}
    for label in (*ONNX_RECIPES, UNCAPPED):
        if label == UNCAPPED and met(out["auto"]):
            continue
        recipe = "auto" if label == UNCAPPED else label
        rw = work / f"onnx-{label}"
        rw.mkdir(exist_ok=True)
        dst = work / f"model.{label}.int8.onnx"
        t0 = time.perf_counter()
        with float_cap(1.0 if label == UNCAPPED else None):
            choice = quantize_onnx(pre, dst, QuantData(name, xc, 1, rw), recipe, log)
        secs = time.perf_counter() - t0
        y = run_batches(session(str(dst)), xv, batch=32)[0]
        out[label] = row(choice, judge(y_float, y, yv), dst.stat().st_size, onnx_latency(dst, xv), secs)
        log(f"  onnx {label}: {out[label]['top1_agreement']:.1%} agreement, {choice.chosen}")
        if label in ("plain", "auto"):  # auto's with the why (what --explain shows)
            diag = diagnose(Path(choice.float_model or pre), dst, xv[:32], "mnist-test")
            out[f"{label}_diagnosis"] = {"summary": diag.summary + (f"; {choice.why_words()}" if choice.why_words()
                                                                      else ""),
                                          "worst": [f"{d.name} ({d.op}): {d.pattern}" for d in diag.layers[:3]]}
    return out


def run_tflite(model: Any, work: Path, xc: np.ndarray, xv: np.ndarray, yv: np.ndarray, log: Any) -> dict[str, Any]:
    import tensorflow as tf

    from edgekit.edgetpu.preflight import preflight
    from edgekit.quantize.tflite.recipes import TfliteJob, float_model
    from edgekit.quantize.tflite.run import run_tflite as run
    from edgekit.quantize.tflite.search import quantize_tflite
    from edgekit.steps.keras_to_savedmodel import ensure_static_batch

    exported = work / "saved_model"
    model.export(str(exported))  # Keras 3's export, as edgekit's keras_to_savedmodel step does
    saved = ensure_static_batch(exported, "serving_default", 1, work / "saved_model_static", list(xv.shape[1:]))

    def job(name: str, io: str = "int8", fixes: bool = False) -> TfliteJob:
        (work / name).mkdir(exist_ok=True)
        return TfliteJob(tf, saved, "serving_default", xc, 1, io, work / name, log, edgetpu_fixes=fixes)

    fpath = work / "model.fp32.tflite"
    fpath.write_bytes(float_model(job("float")))
    y_float = run([fpath], xv)[0]
    out: dict[str, Any] = {"fp32": {**judge(y_float, y_float, yv), "size_bytes": fpath.stat().st_size,
                                    "latency_ms": tflite_latency(fpath)}}
    for label in (*TFLITE_RECIPES, UNCAPPED):
        if label == UNCAPPED and met(out["auto"]):
            continue
        t0 = time.perf_counter()
        with float_cap(1.0 if label == UNCAPPED else None):
            blob, choice = quantize_tflite(job(f"tflite-{label}"), "auto" if label == UNCAPPED else label)
        secs = time.perf_counter() - t0
        path = work / f"model.{label}.int8.tflite"
        path.write_bytes(blob)
        y = run([path], xv)[0]
        out[label] = row(choice, judge(y_float, y, yv), len(blob), tflite_latency(path), secs)
        log(f"  tflite {label}: {out[label]['top1_agreement']:.1%} agreement, {choice.chosen}")
    for label, fixes in (("edgetpu_plain", False), ("edgetpu_auto", True)):  # float-free recipes only
        t0 = time.perf_counter()
        blob, choice = quantize_tflite(job(label, "uint8", fixes), "plain" if label == "edgetpu_plain" else "auto",
                                       float_free=True)
        secs = time.perf_counter() - t0
        path = work / f"model.{label}.tflite"
        path.write_bytes(blob)
        y = run([path], xv)[0]
        pf = preflight(path)
        out[label] = {**row(choice, judge(y_float, y, yv), len(blob), tflite_latency(path), secs),
                      "tpu_ops": f"{pf.ops_on_tpu} of {pf.ops_total}", "tpu_macs_fraction": pf.macs_on_tpu_fraction,
                      "first_unsupported": pf.summary if pf.ops_on_tpu != pf.ops_total else None,
                      "edgetpu_fixes": (choice.edgetpu_fixes or {}).get("applied")}
        log(f"  {label}: {out[label]['top1_agreement']:.1%} agreement, TPU ops {out[label]['tpu_ops']}")
    return out


def verdict(res: dict[str, Any]) -> dict[str, Any]:
    """Where `auto` stands against the issue's targets, per format, with the gap where it misses."""
    out = {}
    for fmt in ("onnx", "tflite"):
        a = res.get(fmt, {}).get("auto")
        if a:
            ok = met(a)
            gap = round(100 * max(0.0, TARGET_AGREEMENT - a["top1_agreement"]), 2)
            excess = round(100 * max(0.0, a["macs_float_fraction"] - TARGET_MACS), 2)
            out[fmt] = {"met": ok, "agreement": a["top1_agreement"], "macs_float_fraction": a["macs_float_fraction"],
                        "agreement_gap_points": gap, "macs_float_excess_points": excess, "why": a.get("why")}
            u = res[fmt].get(UNCAPPED)
            if u:  # how much float the model needs: auto with no cap
                out[fmt]["uncapped"] = {"agreement": u["top1_agreement"], "chosen": u["chosen"],
                                        "macs_float_fraction": u["macs_float_fraction"],
                                        "met_in_search": u["met_in_search"]}
    tpu, plain = res.get("tflite", {}).get("edgetpu_auto"), res.get("tflite", {}).get("edgetpu_plain")
    if tpu and plain:
        on, total = (int(v) for v in tpu["tpu_ops"].split(" of "))
        out["edgetpu"] = {"met": tpu["top1_agreement"] >= plain["top1_agreement"] - 1e-9 and on == total,
                          "agreement_vs_plain_points": round(100 * (tpu["top1_agreement"]
                                                                    - plain["top1_agreement"]), 2),
                          "all_ops_on_tpu": on == total}
    return out


def write(out: Path, results: dict[str, Any]) -> None:
    doc = {"benchmark": "int8_recovery", "issue": 9, "machine": {"cpu_count": os.cpu_count(),
                                                                 "platform": platform.platform()},
           "settings": {"size": SIZE, "calibration": f"{CALIB} MNIST training digits (2000..)",
                        "validation": f"{VAL} MNIST test digits", "latency": f"1 thread, batch 1, median of {RUNS}",
                        "targets": {"top1_agreement": TARGET_AGREEMENT, "macs_float_fraction": TARGET_MACS},
                        "trained_non_classifiers": "bench/int8_tasks.py: each row's facts say its inputs"},
           "command": "python bench/int8_recovery.py", "models": results}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default="mobilenet_v2,mobilenet_v3_small,resnet10,mnist_mobilenet,mnist_mobilenet_short")
    p.add_argument("--formats", default="onnx,tflite", help="a subset reruns those, keeping the others' results "
                   "(openvino: the trained non-classifiers' OpenVINO IR rows)")
    p.add_argument("--recipes", default="", help="trained non-classifiers: the int8 recipes to run (default "
                   "plain,auto), keeping the others' results; `default` and `old` are today's defaults and the old "
                   "ones (bench/int8_tasks.py DEFAULTS)")
    p.add_argument("--held-out", type=int, default=None, help="trained non-classifiers: held-out inputs per "
                   "distribution (default: bench/int8_tasks.py HELD_OUT, 300 for P-Net); P-Net's ONNX - TFLite "
                   "difference comes with a paired 95%% bootstrap interval, which narrows with more")
    p.add_argument("--calib-draw", type=int, default=0, help="trained non-classifiers: calibrate on the K-th other "
                   "draw of distribution A (0: the usual set), judged on the same held-out inputs: how much of a "
                   "difference between two int8 artifacts is the calibration set's luck")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "int8_recovery.json")
    p.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "edgekit-int8-recovery")
    args = p.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import logging

    logging.getLogger().setLevel(logging.ERROR)  # onnxruntime.quantization's pre-processing advice
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    results: dict[str, Any] = {}
    if args.out.is_file():
        results = json.loads(args.out.read_text()).get("models", {})
    for name in args.only.split(","):
        t0 = time.perf_counter()
        if name in int8_tasks.TASKS:  # a trained non-classifier: its own inputs, runs and figures (bench/int8_tasks.py)
            formats = tuple(args.formats.split(","))
            recipes = tuple((r, int8_tasks.targets_of(r, formats)) for r in (args.recipes or "plain,auto").split(","))
            def save(res: dict[str, Any], name: str = name) -> None:
                write(args.out, {**results, name: res})

            results[name] = {**int8_tasks.run_task(name, args.work / name, log, recipes, results.get(name), save,
                                                   args.held_out, args.calib_draw),
                             "seconds": round(time.perf_counter() - t0, 1)}
            write(args.out, results)
            log(f"{name}: done in {results[name]['seconds']} s: {json.dumps(results[name]['targets'])}")
            continue
        log(f"{name}: preparing ...")
        model, size, scale, facts = prepared(name)
        xc, _ = digits("train", size, 2000, CALIB)
        xv, yv = digits("test", size, 0, VAL)
        xc, xv = xc * scale, xv * scale
        work = args.work / name
        work.mkdir(parents=True, exist_ok=True)
        res: dict[str, Any] = {**results.get(name, {}),
                               "facts": {**facts, "input": [size, size, 3], "pixels": "0-255" if scale > 1 else "0-1"}}
        for fmt, fn in (("onnx", run_onnx), ("tflite", run_tflite)):
            if fmt not in args.formats.split(","):
                continue
            try:
                res[fmt] = fn(model, work, xc, xv, yv, log)
            except Exception as exc:  # noqa: BLE001 - a format that fails is a result, recorded as such
                res[fmt] = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
                log(f"  {fmt} FAILED: {res[fmt]['error']}")
        res["targets"] = verdict(res)
        res["seconds"] = round(time.perf_counter() - t0, 1)
        results[name] = res
        write(args.out, results)
        log(f"{name}: done in {res['seconds']} s: {json.dumps(res['targets'])}")
    print(json.dumps({k: v["targets"] for k, v in results.items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
