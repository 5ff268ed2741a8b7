"""Train the bundled YOLOv8-style digits detector and write it as edgekit's detector test model.

Why: edgekit converts object detectors and judges them by their boxes; the tests need a real, trained
detector with the real YOLOv8 graph (models/yolo.py) and held-out canvases with ground-truth boxes
(models/detection_data.py), offline. Training canvases are drawn fresh every epoch from the 4,000
training digits; the held-out canvases use only the 1,000 test digits (never trained on).

    python models/train_detector.py                  # from the repo root; minutes on 2 CPU cores
    python models/train_detector.py --out-dir /tmp/d --epochs 2

Writes (atomically) digits_yolo.pt2 (torch.export at 1x3x128x128, static), digits_yolo.onnx (opset 17,
Ultralytics-style metadata_props), digits_detect_val.npz (the first held-out canvases with boxes) and
digits_yolo.json (mAP, settings, timings, sha256 of each file), after checking that both model files
reload and reproduce the trained model's output.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python models/train_detector.py` puts models/, not the root, on sys.path
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from edgekit.core.fsutil import atomic_write_bytes, atomic_write_json, sha256_file  # noqa: E402
from models import detection_data as dd  # noqa: E402
from models.train_mnist import without_stack_traces  # noqa: E402
from models.yolo import YOLOv8, yolov8_tiny  # noqa: E402
from models.yolo_loss import detection_loss  # noqa: E402

NAMES = {i: str(i) for i in range(10)}
SEED = 0
EPOCHS = 32
EPOCH_CANVASES = 2048
BATCH = 32
LR = 2e-3  # AdamW peak, cosine to LR * 0.01 after a one-epoch warm-up
WEIGHT_DECAY = 5e-4
EMA_DECAY = 0.999
VAL_CANVASES = 500  # held-out canvases scored for the README (mAP)
NPZ_CANVASES = 64  # the first of them, committed: 3-channel float32 noise does not compress (~35 KB each)
CONF, NMS_IOU, MAX_DET = 0.001, 0.7, 300  # Ultralytics' validation settings
MIN_MAP50 = 0.8
AGREE_ATOL = 1e-3
THREADS = 1  # one intra-op thread: on 2 shared cores, 2 spinning OpenMP threads ran 10x slower under load


def train(epochs: int, log: bool = True) -> tuple[YOLOv8, float]:
    """Train from SEED; the EMA model (eval mode) and seconds taken."""
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_num_threads(THREADS)
    model = yolov8_tiny().train()
    model.detect.bias_init(dd.CANVAS)
    ema = copy.deepcopy(model).eval()
    decay_params = [p for n, p in model.named_parameters() if p.ndim > 1]
    other_params = [p for n, p in model.named_parameters() if p.ndim <= 1 and p.requires_grad]
    opt = torch.optim.AdamW([{"params": decay_params, "weight_decay": WEIGHT_DECAY},
                             {"params": other_params, "weight_decay": 0.0}], lr=LR, betas=(0.937, 0.999))
    steps_per_epoch = EPOCH_CANVASES // BATCH
    total, warm = epochs * steps_per_epoch, steps_per_epoch
    images, labels = dd.digits("train")
    order = torch.Generator().manual_seed(SEED)
    start, step = time.perf_counter(), 0
    for epoch in range(epochs):
        x, gt = _batches(images, labels, SEED * 100_000 + epoch)
        perm = torch.randperm(len(x), generator=order)
        sums = torch.zeros(3)
        for i in range(0, steps_per_epoch * BATCH, BATCH):
            cosine = 0.5 * (1 + math.cos(math.pi * (step - warm) / max(total - warm, 1)))
            lr = LR * (step / warm if step < warm else 0.01 + 0.99 * cosine)
            for g in opt.param_groups:
                g["lr"] = lr
            idx = perm[i:i + BATCH]
            loss, parts = detection_loss(model(x[idx]), gt[idx], model.nc)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
            opt.step()
            step += 1
            d = EMA_DECAY * (1 - math.exp(-step / 2000))  # Ultralytics' EMA ramp
            with torch.no_grad():
                for e, m in zip(ema.state_dict().values(), model.state_dict().values(), strict=True):
                    if e.dtype.is_floating_point:
                        e.mul_(d).add_(m.detach(), alpha=1 - d)
                    else:
                        e.copy_(m)
            sums += parts
        if log:
            box, cls, dfl = (sums / steps_per_epoch).tolist()
            print(f"epoch {epoch + 1}/{epochs}: box {box:.3f} cls {cls:.3f} dfl {dfl:.3f} "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)
    return ema.eval(), time.perf_counter() - start


def _batches(images: np.ndarray, labels: np.ndarray, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One epoch of fresh training canvases: x (n, 3, 128, 128) and padded targets (n, MAX_DIGITS, 5)."""
    x, boxes = dd.make_canvases(EPOCH_CANVASES, "train", seed)
    gt = np.full((EPOCH_CANVASES, dd.MAX_DIGITS, 5), -1.0, np.float32)
    for k in range(EPOCH_CANVASES):
        b = dd.boxes_of(boxes, k)
        gt[k, :len(b)] = b
    return torch.from_numpy(x), torch.from_numpy(gt)


def evaluate(out: np.ndarray, gts: np.ndarray, n_images: int) -> dict[str, float]:
    """mAP50 and mAP50-95 of raw outputs OUT (N, 4 + C, A) against GTS (M, 6) [image, class, x1, y1, x2, y2]:
    decoded and NMS'd as edgekit's fidelity does it (Ultralytics' validation cuts), scored by pycocotools."""
    from edgekit.fidelity.coco import mean_ap
    from edgekit.fidelity.detection import Head, decode, labelled_boxes

    head = Head("yolov8", len(NAMES), confidence=CONF, nms_iou=NMS_IOU)
    m50, m5095 = mean_ap(decode([out], head), labelled_boxes(gts, n_images))
    return {"mAP50": m50, "mAP50-95": m5095}


@torch.no_grad()
def predict(fn, x: np.ndarray, batch: int = 100) -> np.ndarray:
    return np.concatenate([fn(torch.from_numpy(x[i:i + batch])).numpy() for i in range(0, len(x), batch)])


def onnx_bytes(model: YOLOv8, example: torch.Tensor) -> bytes:
    """The model as ONNX (opset 17, TorchScript exporter, inputs 'images', output 'output0' like Ultralytics),
    with Ultralytics' metadata_props, so tools that read YOLO metadata recognise it."""
    import onnx

    buf = io.BytesIO()
    torch.onnx.export(model, (example,), buf, dynamo=False, opset_version=17,
                      input_names=["images"], output_names=["output0"])
    proto = onnx.load_from_string(buf.getvalue())
    meta = {"description": "edgekit digits detector: YOLOv8-style (models/yolo.py) trained on MNIST canvases",
            "author": "edgekit", "version": f"edgekit models/yolo.py, torch {torch.__version__}",
            "license": "same as edgekit", "stride": int(max(model.detect.stride)), "task": "detect",
            "batch": 1, "imgsz": [dd.CANVAS, dd.CANVAS], "names": NAMES, "channels": dd.CHANNELS}
    for k, v in meta.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = k, str(v)
    return proto.SerializeToString()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path, default=ROOT / "models")
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    args = ap.parse_args(argv)

    model, seconds = train(args.epochs)
    x_val, gts = dd.make_canvases(VAL_CANVASES, "test", dd.VAL_SEED)
    reference = predict(model, x_val)
    metrics = evaluate(reference, gts, VAL_CANVASES)
    print(f"held-out {VAL_CANVASES} canvases, {len(gts)} digits: {metrics}")
    if metrics["mAP50"] < MIN_MAP50:
        print(f"error: mAP50 {metrics['mAP50']:.3f} is below {MIN_MAP50}; nothing written.", file=sys.stderr)
        return 1

    example = torch.from_numpy(x_val[:1].copy())
    exported = without_stack_traces(torch.export.export(model, (example,)))
    buf = io.BytesIO()
    torch.export.save(exported, buf)
    out = args.out_dir
    paths = {"pt2": atomic_write_bytes(out / "digits_yolo.pt2", buf.getvalue()),
             "onnx": atomic_write_bytes(out / "digits_yolo.onnx", onnx_bytes(model, example)),
             "npz": dd.write_npz(out / "digits_detect_val.npz", NPZ_CANVASES)}

    import onnxruntime as ort

    sess = ort.InferenceSession(str(paths["onnx"]), providers=["CPUExecutionProvider"])
    reloaded = torch.export.load(paths["pt2"]).module()
    check = x_val[:20]
    diffs = {"pt2": float(np.abs(predict(reloaded, check, 1) - reference[:20]).max()),
             "onnx": float(max(np.abs(sess.run(None, {"images": check[i:i + 1]})[0] - reference[i:i + 1]).max()
                               for i in range(len(check))))}
    print(f"reloaded vs trained, max |diff| on 20 canvases: {diffs}")
    if not all(d <= AGREE_ATOL for d in diffs.values()):
        print("error: a reloaded file disagrees with the trained model", file=sys.stderr)
        return 1

    t0 = time.perf_counter()
    with torch.no_grad():
        for _ in range(20):
            model(example)
    info = {
        "metrics": {**metrics, "by": "pycocotools (edgekit.fidelity.coco), boxes from edgekit.fidelity.detection",
                    "val_canvases": VAL_CANVASES, "val_digits": int(len(gts)), "val_seed": dd.VAL_SEED, "conf": CONF,
                    "nms_iou": NMS_IOU, "max_det": MAX_DET},
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "architecture": "models.yolo.yolov8_tiny: YOLOv8 width 0.125, depth 0.33, max_channels 256, 10 classes",
        "seed": SEED, "epochs": args.epochs, "canvases_per_epoch": EPOCH_CANVASES, "batch_size": BATCH,
        "optimizer": f"AdamW lr {LR} (1-epoch warm-up, cosine to 1%), weight decay {WEIGHT_DECAY}, EMA {EMA_DECAY}",
        "loss": "models.yolo_loss: task-aligned assigner (topk 10, alpha 0.5, beta 6), BCE + CIoU + DFL (7.5/0.5/1.5)",
        "train_seconds": round(seconds, 1),
        "fp32_cpu_ms_per_image": round((time.perf_counter() - t0) / 20 * 1000, 2),
        "torch_version": torch.__version__,
        "threads": THREADS,
        "input": {"shape": [1, dd.CHANNELS, dd.CANVAS, dd.CANVAS], "dtype": "float32", "layout": "NCHW",
                  "range": [0.0, 1.0], "mean": None, "std": None},
        "output": {"shape": [1, 14, int(reference.shape[2])],
                   "meaning": "cx, cy, w, h in input pixels, then 10 class probabilities (digits 0-9)"},
        "names": {str(k): v for k, v in NAMES.items()},
        "npz": {"canvases": NPZ_CANVASES, "digits": int((gts[:, 0] < NPZ_CANVASES).sum())},
        "reload_max_abs_diff": diffs,
        "sha256": {p.name: sha256_file(p) for p in paths.values()},
    }
    atomic_write_json(out / "digits_yolo.json", info)
    print(json.dumps({k: info[k] for k in ("metrics", "train_seconds", "parameters")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
