"""Edge TPU coverage before and after the graph fixes of issue 29, and the float .tflite route, on real architectures.

Rows (each converted with `edgekit convert ... --target edgetpu --quantize int8`, once with --no-edgetpu-fixes and
once with the fixes; the pre-flight's predicted ops on the TPU and validation against the source are read from
manifest.json):
- shufflenet_v2: models/shufflenet_v2.py (torchvision's definition, 1.0x, random weights), 224x224 photo crops
  (scikit-image samples);
- convnextv2_atto: models/convnext_v2.py (transformers' definition, atto, random weights), 160x160 photo crops;
- ppocr_rec: the trained PP-OCRv4 recognizer ONNX from the rapidocr-onnxruntime wheel, on rendered text lines
  (bench/zoo_tasks.py), pinned to 1x3x48x320;
- face_detection_short_range: MediaPipe's fp16 face detector .tflite from the mediapipe 0.10.14 wheel, a float
  .tflite source (int8 and Edge TPU), calibrated on crops of scikit-image's astronaut photo (a face) and others.
Wheels are found with --wheels DIR (`pip download --no-deps rapidocr-onnxruntime==1.4.4 mediapipe==0.10.14 -d DIR`);
only their model files are read, never imported. Writes bench/results/edgetpu_fixes.json.

    python bench/edgetpu_fixes.py --wheels /tmp/wh [--only shufflenet_v2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "edgetpu_fixes.json"
IMAGENET = ["--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"]


def photos(size: int, n: int, seed: int, faces: bool = False) -> np.ndarray:
    """N uint8 (size, size, 3) crops of scikit-image's sample photos; FACES: mostly around the astronaut's face."""
    from PIL import Image
    from skimage import data

    rng = np.random.default_rng(seed)
    pool = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket(), data.cat()]
    out = []
    for k in range(n):
        im = pool[0] if faces and k % 4 != 3 else pool[k % len(pool)]
        h, w = im.shape[:2]
        s = int(rng.integers(min(h, w) // 3, min(h, w)))
        y, x = (int(rng.integers(0, h - s + 1)), int(rng.integers(0, w - s + 1))) if not faces or k % 4 == 3 else (
            int(np.clip(140 - s // 2, 0, h - s)), int(np.clip(240 - s // 2, 0, w - s)))
        out.append(np.asarray(Image.fromarray(np.ascontiguousarray(im[y:y + s, x:x + s])).resize((size, size))))
    return np.stack(out)


def _from_wheel(wheels: Path, pattern: str, member: str, dest: Path) -> Path:
    wheel = next(iter(sorted(wheels.glob(pattern))), None)
    if wheel is None:
        raise SystemExit(f"no {pattern} in {wheels}: pip download --no-deps it there")
    with zipfile.ZipFile(wheel) as z:
        dest.write_bytes(z.read(member))
    return dest


def sources(work: Path, wheels: Path) -> dict[str, tuple[Path, Path, list[str]]]:
    """name -> (source file, calibration .npy, extra convert flags)."""
    import torch

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    from zoo_tasks import _lines

    from models import convnext_v2, shufflenet_v2

    made: dict[str, tuple[Path, Path, list[str]]] = {}
    for name, mod, size in (("shufflenet_v2", shufflenet_v2, 224), ("convnextv2_atto", convnext_v2, 160)):
        model = mod.build("x1_0") if mod is shufflenet_v2 else mod.build()
        pt2 = work / f"{name}.pt2"
        torch.export.save(torch.export.export(model, (torch.zeros(1, 3, size, size),)), pt2)
        npy = work / f"{name}.npy"
        np.save(npy, photos(size, 64, 0).transpose(0, 3, 1, 2))
        made[name] = (pt2, npy, IMAGENET)
    rec = _from_wheel(wheels, "rapidocr_onnxruntime-*.whl", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                      work / "ppocr_rec.onnx")
    np.save(work / "ppocr_rec.npy", _lines(48, 22, 320)[0].astype(np.float32))
    made["ppocr_rec"] = (rec, work / "ppocr_rec.npy", ["--input-shape", "1,3,48,320"])
    face = _from_wheel(wheels, "mediapipe-0.10.14-*.whl",
                       "mediapipe/modules/face_detection/face_detection_short_range.tflite",
                       work / "face_detection_short_range.tflite")
    np.save(work / "faces.npy", photos(128, 96, 1, faces=True))
    made["face_detection_short_range"] = (face, work / "faces.npy",
                                          # a .tflite source is validated on its first output (the box regressors)
                                          ["--mean", "0.5", "--std", "0.5", "--output-kind", "regressors=regression"])
    return made


def convert(src: Path, calib: Path, extra: list[str], out: Path, fixes: bool) -> list[dict[str, Any]]:
    cmd = [sys.executable, "-m", "edgekit.cli", "convert", str(src), "--target", "tflite,edgetpu", "--quantize",
           "int8", "--calib", str(calib), "--calib-size", "32", "--val-size", "32", *extra, "--out", str(out),
           "--force", *([] if fixes else ["--no-edgetpu-fixes"])]
    subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    manifest = json.loads((out / "manifest.json").read_text())
    rows = []
    for a in manifest["artifacts"]:
        fid, tpu = a.get("fidelity") or {}, (a.get("extra") or {}).get("edgetpu") or {}
        rows.append({"artifact": Path(a["path"]).name, "status": a.get("status"), "passed": fid.get("passed"),
                     "kind": fid.get("kind"), "cosine": fid.get("cosine"), "top1_agreement": fid.get("top1_agreement"),
                     "step_agreement": fid.get("step_agreement"), "size_bytes": a.get("size_bytes"),
                     "ops_on_tpu": tpu.get("ops_on_tpu"), "ops_total": tpu.get("ops_total"),
                     "stops_at": (tpu.get("partition") or {}).get("op") if isinstance(tpu.get("partition"), dict)
                     else None, "fixes": ((a.get("extra") or {}).get("int8_recipe") or {}).get("edgetpu_fixes")})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wheels", type=Path, required=True)
    p.add_argument("--work", type=Path, default=Path("edgekit-out/bench-edgetpu-fixes"))
    p.add_argument("--only", default="")
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = json.loads(OUT.read_text()) if OUT.is_file() else {}
    for name, (src, calib, extra) in sources(args.work, args.wheels).items():
        if args.only and name not in args.only.split(","):
            continue
        before = convert(src, calib, extra, args.work / f"{name}-0", False)
        results[name] = {"source": src.name, "without_fixes": before,
                         "with_fixes": convert(src, calib, extra, args.work / f"{name}-1", True)}
        print(name, json.dumps(results[name], indent=1))
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
