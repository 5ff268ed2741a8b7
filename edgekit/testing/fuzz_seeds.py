"""The real files edgekit's fuzzing starts from (tests/fuzz/seeds/), and how they were made.

`make_seeds(folder)` converts the bundled model (ONNX and TFLite, fp32 and int8, calibrated on
MNIST), benches it briefly, writes its `edgekit check` baseline, and adds what the other parsers
read: calibration arrays and images of real MNIST digits and a real photo, decompression bombs,
and KServe v2 requests for the int8 model. The committed seeds were made by
`python bench/fuzz.py --make-seeds tests/fuzz/seeds` (the fp32 models, 0.9 MB each, left out of the
repository: the benchmark uses them where they are); every file is what edgekit or its users write.
"""

from __future__ import annotations

import json
import shutil
import struct
import tempfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
MODEL_FILES = ("mnist_cnn.int8.tflite", "mnist_cnn.fp32.tflite", "mnist_cnn.int8.onnx", "mnist_cnn.fp32.onnx")


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def header_bomb_png(width: int = 100_000, height: int = 100_000) -> bytes:
    """A PNG whose header claims WIDTH x HEIGHT grey pixels, with almost no data behind it."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", zlib.compress(b"\0" * 1024))
            + _png_chunk(b"IEND", b""))


def deflate_bomb_png(side: int = 10_000) -> bytes:
    """A real SIDE x SIDE grey PNG of zeros: 100 MP (beyond Pillow's bomb warning) in about 100 KB."""
    row = b"\0" * (side + 1)  # filter byte + pixels
    comp = zlib.compressobj(9)
    data = b"".join(comp.compress(row) for _ in range(side)) + comp.flush()
    ihdr = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", data) + _png_chunk(b"IEND", b"")


def _images(folder: Path, digits: np.ndarray) -> None:
    from PIL import Image

    Image.fromarray(digits[0]).save(folder / "digit.png")
    try:
        from skimage import data as skdata

        photo = Image.fromarray(skdata.coffee()).resize((64, 48))
    except ImportError:  # scikit-image is a dev extra; a synthetic gradient keeps the seed set whole
        photo = Image.fromarray(np.tile(np.arange(64, dtype=np.uint8), (48, 3)).reshape(48, 64, 3))
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotated, so exif_transpose has work to do
    photo.save(folder / "photo.jpg", quality=85, exif=exif)
    (folder / "bomb-header.png").write_bytes(header_bomb_png())
    (folder / "bomb-pixels.png").write_bytes(deflate_bomb_png())


def _arrays(folder: Path, digits: np.ndarray, labels: np.ndarray) -> None:
    np.save(folder / "digits.u8.npy", digits[:32], allow_pickle=False)
    np.save(folder / "digits.f32.npy", (digits[:8, None] / 255).astype(np.float32), allow_pickle=False)
    np.savez_compressed(folder / "digits.npz", x=digits[:32], y=labels[:32].astype(np.int64))
    np.savez(folder / "digits-plain.npz", digits[:16], labels[:16].astype(np.int64))


def requests_for(manifest: dict[str, Any], digit: np.ndarray) -> dict[str, bytes]:
    """KServe v2 /infer request files for the int8 TFLite artifact: the first line is the
    Inference-Header-Content-Length header ('-' for none), the rest the body."""
    art = next(a for a in manifest["artifacts"] if a["path"].endswith("int8.tflite"))
    name, shape = art["inputs"][0]["name"], art["inputs"][0]["shape"]
    x = (digit.astype(np.float32) / 255).reshape(shape)
    doc = {"id": "seed", "inputs": [{"name": name, "shape": shape, "datatype": "FP32",
                                     "data": [round(float(v), 4) for v in x.ravel()]}],
           "outputs": [{"name": art["outputs"][0]["name"], "parameters": {"binary_data": False}}]}
    as_json = json.dumps(doc).encode()
    head = json.dumps({"inputs": [{"name": name, "shape": shape, "datatype": "FP32",
                                   "parameters": {"binary_data_size": x.nbytes}}],
                       "parameters": {"binary_data_output": True}}).encode()
    return {"infer-json.req": b"-\n" + as_json, "infer-binary.req": f"{len(head)}\n".encode() + head + x.tobytes()}


def make_seeds(folder: Path, log: Any = print) -> list[Path]:
    """Write every seed file into FOLDER (converting the bundled model: about half a minute); the files."""
    from edgekit.conversion.pipeline import convert
    from edgekit.data.calibration import mnist_split

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="edgekit-fuzz-seeds-") as tmp:
        out = Path(tmp) / "mnist_cnn"
        log("converting the bundled model ...")
        convert(REPO / "models" / "mnist_cnn.pt2", "onnx,tflite", "fp32,int8", calib="mnist", calib_size=50,
                val_size=100, out=out)
        for name in (*MODEL_FILES, "manifest.json"):
            shutil.copyfile(out / name, folder / name)
        log("benching it briefly ...")
        from edgekit.measure.bench import bench
        from edgekit.measure.bench_report import BenchSettings

        bench(out, BenchSettings(runs=5, min_seconds=0, warmup=1, isolate=False), out_dir=out / "bench")
        shutil.copyfile(out / "bench" / "bench.json", folder / "bench.json")
        try:
            from edgekit.check import update_baseline

            update_baseline(out, str(folder / "baseline.json"))
        except ImportError:
            log("edgekit.check is not here: no baseline seed")
        for name in ("manifest.json", "bench.json", "baseline.json"):  # no machine paths in the seed files
            f = folder / name
            if f.is_file():
                f.write_text(f.read_text().replace(str(out), "edgekit-out/mnist_cnn").replace(f"{REPO}/", ""))
    x_train, y_train, _, _ = mnist_split()
    _arrays(folder, x_train, y_train)
    _images(folder, x_train)
    manifest = json.loads((folder / "manifest.json").read_text())
    for name, body in requests_for(manifest, x_train[0]).items():
        (folder / name).write_bytes(body)
    return sorted(folder.iterdir())


__all__ = ["MODEL_FILES", "deflate_bomb_png", "header_bomb_png", "make_seeds", "requests_for"]
