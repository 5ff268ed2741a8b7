"""One tiny CNN, the same weights, in every format a runtime loads: the runtimes' shared test bench.

The conformance suite, `bench/overhead.py` and anyone checking an install need real models in
each format that are known to compute the same function. It lives in `edgekit.testing`, not in
`edgekit.runtimes`, because no runtime uses it: only tests and benchmarks do. This module writes them from one set of
weights, with a numpy forward pass as the ground truth that depends on no framework:
conv 1->4 3x3 + ReLU, max-pool 2, conv 4->8 3x3 + ReLU, global average pool, dense 8->10, on a
28x28 one-channel image in [0, 1].

Formats: torch `.pt2` (ExportedProgram, dynamic batch) and TorchScript, ONNX (torch's dynamo
exporter, single file, dynamic batch), a Keras `.keras` file and SavedModel, TFLite fp32 and full-integer int8
with int8 I/O, an OpenVINO IR (fp32, converted from that ONNX by `openvino.convert_model`) and an ncnn model (fp32,
from that ONNX by pnnx). Formats whose
converter is not installed are skipped with the reason. Building is idempotent: a folder that already holds a
complete set is reused.
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core._deps import available
from edgekit.core.fsutil import atomic_write_json

INPUT_SHAPE_NCHW = (1, 1, 28, 28)
INDEX = "testmodels.json"
FORMAT_VERSION = 4  # 2: the OpenVINO IR; 3: the .keras file; 4: the ncnn model


def weights(seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic He-initialised weights in PyTorch's layouts (O, I, kH, kW) and (out, in)."""
    rng = np.random.default_rng(seed)

    def he(shape: tuple[int, ...], fan_in: int) -> np.ndarray:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    return {
        "c1.weight": he((4, 1, 3, 3), 9), "c1.bias": (rng.standard_normal(4) * 0.1).astype(np.float32),
        "c2.weight": he((8, 4, 3, 3), 36), "c2.bias": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "fc.weight": he((10, 8), 8) * 4, "fc.bias": (rng.standard_normal(10) * 0.1).astype(np.float32),
    }


def _conv_relu(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    win = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))  # N,C,H',W',3,3
    y = np.einsum("nchwij,ocij->nohw", win, w, optimize=True) + b[None, :, None, None]
    return np.maximum(y, 0.0)


def forward(x_nchw: np.ndarray, w: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """The reference logits (float64 arithmetic) for a float NCHW batch."""
    w = w or weights()
    x = np.asarray(x_nchw, dtype=np.float64)
    x = _conv_relu(x, w["c1.weight"], w["c1.bias"])
    n, c, h, wd = x.shape
    x = x[:, :, : h // 2 * 2, : wd // 2 * 2].reshape(n, c, h // 2, 2, wd // 2, 2).max(axis=(3, 5))
    x = _conv_relu(x, w["c2.weight"], w["c2.bias"]).mean(axis=(2, 3))
    return x @ w["fc.weight"].T.astype(np.float64) + w["fc.bias"]


def sample_inputs(n: int = 8, seed: int = 1) -> np.ndarray:
    """N float32 NCHW inputs in [0, 1)."""
    return np.random.default_rng(seed).random((n, *INPUT_SHAPE_NCHW[1:]), dtype=np.float32)


def torch_module(w: dict[str, np.ndarray] | None = None) -> Any:
    """The tiny CNN as an eval-mode torch.nn.Module holding W (default: `weights()`)."""
    import torch

    w = weights() if w is None else w

    class TinyCNN(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1 = torch.nn.Conv2d(1, 4, 3)
            self.c2 = torch.nn.Conv2d(4, 8, 3)
            self.fc = torch.nn.Linear(8, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
            return self.fc(torch.relu(self.c2(x)).mean(dim=(2, 3)))

    m = TinyCNN().eval()
    m.load_state_dict({k: torch.from_numpy(v) for k, v in w.items()})
    return m


def _build_torch(out: Path, w: dict[str, np.ndarray]) -> dict[str, Path]:
    import torch

    m = torch_module(w)
    example = torch.from_numpy(sample_inputs(2))  # batch 2: torch.export specialises a batch of 1
    batch = torch.export.Dim("batch", min=1, max=1024)
    ep = torch.export.export(m, (example,), dynamic_shapes=({0: batch},))
    paths = {"torch-pt2": out / "tiny.pt2", "torchscript": out / "tiny.torchscript.pt"}
    torch.export.save(ep, str(paths["torch-pt2"]))
    with warnings.catch_warnings():  # TorchScript is deprecated in torch 2.13, and still a source users have
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.save(torch.jit.trace(m, example), str(paths["torchscript"]))
    if available("onnxscript"):
        with contextlib.redirect_stdout(io.StringIO()):  # the exporter narrates its passes on stdout
            torch.onnx.export(m, (example,), str(out / "tiny.onnx"), dynamo=True, external_data=False,
                              input_names=["input"], output_names=["logits"], dynamic_shapes=({0: "batch"},))
        paths["onnx"] = out / "tiny.onnx"
    return paths


def _keras_model(w: dict[str, np.ndarray]) -> Any:
    import keras

    m = keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(4, 3, activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(8, 3, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    m.set_weights([
        w["c1.weight"].transpose(2, 3, 1, 0), w["c1.bias"],
        w["c2.weight"].transpose(2, 3, 1, 0), w["c2.bias"],
        w["fc.weight"].T, w["fc.bias"],
    ])
    return m


def _build_tf(out: Path, w: dict[str, np.ndarray]) -> dict[str, Path]:
    import tensorflow as tf

    sm = out / "tiny_savedmodel"
    model = _keras_model(w)
    with contextlib.redirect_stdout(io.StringIO()):  # Keras prints the exported endpoints
        model.export(str(sm), format="tf_saved_model")
    model.save(str(out / "tiny.keras"))
    paths = {"savedmodel": sm, "keras": out / "tiny.keras"}
    conv = tf.lite.TFLiteConverter.from_saved_model(str(sm))
    (out / "tiny.fp32.tflite").write_bytes(conv.convert())
    paths["tflite-fp32"] = out / "tiny.fp32.tflite"
    calib = sample_inputs(64, seed=2).transpose(0, 2, 3, 1)
    conv = tf.lite.TFLiteConverter.from_saved_model(str(sm))
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([calib[i : i + 1]] for i in range(len(calib)))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    (out / "tiny.int8.tflite").write_bytes(conv.convert())
    paths["tflite-int8"] = out / "tiny.int8.tflite"
    return paths


def _build_openvino(out: Path, onnx_path: Path) -> dict[str, Path]:
    """The ONNX model as an OpenVINO IR (tiny.xml + tiny.bin), weights kept in fp32."""
    from edgekit.core.vendor_telemetry import require_quiet

    ov = require_quiet("openvino")
    xml = out / "tiny.xml"
    ov.save_model(ov.convert_model(str(onnx_path)), str(xml), compress_to_fp16=False)
    return {"openvino-fp32": xml}


def _build_ncnn(out: Path, onnx_path: Path) -> dict[str, Path]:
    """The ONNX model as an ncnn model (tiny.ncnn.param + tiny.ncnn.bin) by pnnx, weights kept in fp32, its blobs
    named as the ONNX's tensors (what the ncnn target writes)."""
    import shutil

    from edgekit.targets.ncnn import onnx_io, run_pnnx

    work = out / "pnnx"
    work.mkdir(exist_ok=True)
    shutil.copyfile(onnx_path, work / "model.onnx")
    inputs, outputs = onnx_io(onnx_path)
    text, weights = run_pnnx(work / "model.onnx", inputs, outputs, "fp32", log=lambda _: None)
    param = out / "tiny.ncnn.param"
    param.write_text(text)
    shutil.copyfile(weights, out / "tiny.ncnn.bin")
    return {"ncnn-fp32": param}


# artifact key -> (format, precision, layout of the 4-D input)
KINDS: dict[str, tuple[str, str, str]] = {
    "torch-pt2": ("torch", "fp32", "NCHW"),
    "torchscript": ("torch", "fp32", "NCHW"),
    "onnx": ("onnx", "fp32", "NCHW"),
    "savedmodel": ("savedmodel", "fp32", "NHWC"),
    "keras": ("keras", "fp32", "NHWC"),
    "tflite-fp32": ("tflite", "fp32", "NHWC"),
    "tflite-int8": ("tflite", "int8", "NHWC"),
    "openvino-fp32": ("openvino", "fp32", "NCHW"),
    "ncnn-fp32": ("ncnn", "fp32", "NCHW"),
}


def build(out_dir: str | Path) -> dict[str, Any]:
    """Write every format whose converter is installed into OUT_DIR; return the index.

    The index ({"models": {key: path}, "skipped": {group: reason}}) is written last, so a folder
    with an index is complete and is reused as is.
    """
    out = Path(out_dir)
    index_path = out / INDEX
    if index_path.is_file():
        index = json.loads(index_path.read_text())
        if index.get("version") == FORMAT_VERSION and all(Path(p).exists() for p in index["models"].values()):
            return index
    out.mkdir(parents=True, exist_ok=True)
    w = weights()
    models: dict[str, Path] = {}
    skipped: dict[str, str] = {}
    if available("torch"):
        models.update(_build_torch(out, w))
    else:
        skipped["torch, torchscript, onnx"] = "torch is not installed"
    if available("tensorflow") and available("keras"):
        models.update(_build_tf(out, w))
    else:
        skipped["savedmodel, tflite"] = "tensorflow/keras are not installed"
    if "onnx" in models and available("openvino"):
        models.update(_build_openvino(out, models["onnx"]))
    else:
        skipped["openvino-fp32"] = "openvino (or the ONNX model it is converted from) is not here"
    if "onnx" in models and available("pnnx") and available("ncnn"):
        models.update(_build_ncnn(out, models["onnx"]))
    else:
        skipped["ncnn-fp32"] = "pnnx and ncnn (or the ONNX model it is converted from) are not here"
    index = {"version": FORMAT_VERSION, "models": {k: str(p) for k, p in models.items()}, "skipped": skipped}
    atomic_write_json(index_path, index)
    return index
