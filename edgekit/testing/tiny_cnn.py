"""One tiny CNN, the same weights, in every format a runtime loads: the runtimes' shared test bench.

The conformance suite, `bench/overhead.py` and anyone checking an install need real models in
each format that are known to compute the same function. It lives in `edgekit.testing`, not in
`edgekit.runtimes`, because no runtime uses it: only tests and benchmarks do. This module writes them from one set of
weights, with a numpy forward pass as the ground truth that depends on no framework:
conv 1->4 3x3 + ReLU, max-pool 2, conv 4->8 3x3 + ReLU, global average pool, dense 8->10, on a
28x28 one-channel image in [0, 1].

Which formats, and how each is written, is each format's record's to say: FormatSpec.tiny_model names a
TinyModels (below, for edgekit's own formats; in its own file for a format added outside), so a new format brings
its tiny model with its record. Today: torch `.pt2` (ExportedProgram, dynamic batch) and TorchScript, a Keras
`.keras` file and SavedModel, ONNX (torch's dynamo exporter, single file, dynamic batch), TFLite fp32 and
full-integer int8 with int8 I/O, an OpenVINO IR (fp32, converted from that ONNX by `openvino.convert_model`) and an
ncnn model (fp32, from that ONNX by pnnx). Formats whose converter is not installed are skipped with the reason.
Building is idempotent: a folder that already holds a complete set is reused.
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core._deps import available
from edgekit.core.fsutil import atomic_write_json
from edgekit.core.registry import check_choice

INPUT_SHAPE_NCHW = (1, 1, 28, 28)
INDEX = "testmodels.json"
FORMAT_VERSION = 5  # 2: the OpenVINO IR; 3: the .keras file; 4: the ncnn model; 5: written as the records say


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


class Unbuilt(Exception):
    """A format's tiny model cannot be written here; the message says why (its converter is not installed, or the
    model it is converted from was not written)."""


def need(*modules: str) -> None:
    """Unbuilt unless every one of MODULES imports here: a writer's first line."""
    missing = [m for m in modules if not available(m)]
    if missing:
        raise Unbuilt(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed")


def made_from(written: Mapping[str, Path], key: str) -> Path:
    """The tiny model KEY written before this one (the ONNX an OpenVINO IR is converted from), or Unbuilt."""
    if key not in written:
        raise Unbuilt(f"the {key} model it is converted from was not written")
    return written[key]


@dataclass(frozen=True)
class TinyModels:
    """The tiny CNN in one format, named by that format's record (FormatSpec.tiny_model, "module:attr"): the models
    it writes, key -> (precision, layout of the 4-D input), and `write` (the folder, the models written so far by
    key: formats are written in the table's order) -> {key: path}, raising Unbuilt where it cannot here."""

    models: Mapping[str, tuple[str, str]]
    write: Callable[[Path, Mapping[str, Path]], dict[str, Path]]


def _write_torch(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    need("torch")
    import torch

    m = torch_module()
    example = torch.from_numpy(sample_inputs(2))  # batch 2: torch.export specialises a batch of 1
    batch = torch.export.Dim("batch", min=1, max=1024)
    ep = torch.export.export(m, (example,), dynamic_shapes=({0: batch},))
    paths = {"torch-pt2": out / "tiny.pt2", "torchscript": out / "tiny.torchscript.pt"}
    torch.export.save(ep, str(paths["torch-pt2"]))
    with warnings.catch_warnings():  # TorchScript is deprecated in torch 2.13, and still a source users have
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.save(torch.jit.trace(m, example), str(paths["torchscript"]))
    return paths


def _write_onnx(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    """torch's dynamo exporter, single file, dynamic batch."""
    need("torch", "onnxscript")
    import torch

    with contextlib.redirect_stdout(io.StringIO()):  # the exporter narrates its passes on stdout
        torch.onnx.export(torch_module(), (torch.from_numpy(sample_inputs(2)),), str(out / "tiny.onnx"), dynamo=True,
                          external_data=False, input_names=["input"], output_names=["logits"],
                          dynamic_shapes=({0: "batch"},))
    return {"onnx": out / "tiny.onnx"}


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


def _write_keras(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    need("tensorflow", "keras")
    _keras_model(weights()).save(str(out / "tiny.keras"))
    return {"keras": out / "tiny.keras"}


def _write_savedmodel(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    need("tensorflow", "keras")
    with contextlib.redirect_stdout(io.StringIO()):  # Keras prints the exported endpoints
        _keras_model(weights()).export(str(out / "tiny_savedmodel"), format="tf_saved_model")
    return {"savedmodel": out / "tiny_savedmodel"}


def _write_tflite(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    """fp32, and full-integer int8 with int8 I/O, from the SavedModel."""
    need("tensorflow")
    sm = str(made_from(written, "savedmodel"))
    import tensorflow as tf

    conv = tf.lite.TFLiteConverter.from_saved_model(sm)
    (out / "tiny.fp32.tflite").write_bytes(conv.convert())
    calib = sample_inputs(64, seed=2).transpose(0, 2, 3, 1)
    conv = tf.lite.TFLiteConverter.from_saved_model(sm)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([calib[i : i + 1]] for i in range(len(calib)))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    (out / "tiny.int8.tflite").write_bytes(conv.convert())
    return {"tflite-fp32": out / "tiny.fp32.tflite", "tflite-int8": out / "tiny.int8.tflite"}


def _write_openvino(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    """The ONNX model as an OpenVINO IR (tiny.xml + tiny.bin), weights kept in fp32."""
    need("openvino")
    onnx_path = made_from(written, "onnx")
    from edgekit.core.vendor_telemetry import require_quiet

    ov = require_quiet("openvino")
    xml = out / "tiny.xml"
    ov.save_model(ov.convert_model(str(onnx_path)), str(xml), compress_to_fp16=False)
    return {"openvino-fp32": xml}


def _write_ncnn(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    """The ONNX model as an ncnn model (tiny.ncnn.param + tiny.ncnn.bin) by pnnx, weights kept in fp32, its blobs
    named as the ONNX's tensors (what the ncnn target writes)."""
    need("pnnx", "ncnn")
    onnx_path = made_from(written, "onnx")
    import shutil

    from edgekit.targets.ncnn import onnx_io, run_pnnx

    work = out / "pnnx"
    work.mkdir(exist_ok=True)
    shutil.copyfile(onnx_path, work / "model.onnx")
    inputs, outputs = onnx_io(onnx_path)
    text, bin_path = run_pnnx(work / "model.onnx", inputs, outputs, "fp32", log=lambda _: None)
    param = out / "tiny.ncnn.param"
    param.write_text(text)
    shutil.copyfile(bin_path, out / "tiny.ncnn.bin")
    return {"ncnn-fp32": param}


# What the format records name (edgekit.core.formats: tiny_model)
TORCH = TinyModels({"torch-pt2": ("fp32", "NCHW"), "torchscript": ("fp32", "NCHW")}, _write_torch)
KERAS = TinyModels({"keras": ("fp32", "NHWC")}, _write_keras)
SAVEDMODEL = TinyModels({"savedmodel": ("fp32", "NHWC")}, _write_savedmodel)
ONNX = TinyModels({"onnx": ("fp32", "NCHW")}, _write_onnx)
TFLITE = TinyModels({"tflite-fp32": ("fp32", "NHWC"), "tflite-int8": ("int8", "NHWC")}, _write_tflite)
OPENVINO = TinyModels({"openvino-fp32": ("fp32", "NCHW")}, _write_openvino)
NCNN = TinyModels({"ncnn-fp32": ("fp32", "NCHW")}, _write_ncnn)


def writers() -> dict[str, TinyModels]:
    """Format -> the TinyModels its record names, in the table's order (a format may convert from an earlier one's
    model); read when asked, so a format registered later counts."""
    from edgekit.core.formats import FORMATS
    from edgekit.core.registry import resolve_record

    specs = sorted((s for s in FORMATS.values() if s.tiny_model), key=lambda s: s.order)
    return {s.name: resolve_record({s.name: str(s.tiny_model)}, s.name, "tiny model", TinyModels) for s in specs}


def kinds() -> dict[str, tuple[str, str, str]]:
    """Every tiny model the format records name: key -> (format, precision, layout of the 4-D input)."""
    return {key: (fmt, precision, layout) for fmt, tm in writers().items()
            for key, (precision, layout) in tm.models.items()}


def build(out_dir: str | Path, formats: Iterable[str] | None = None) -> dict[str, Any]:
    """Write the tiny model of every format whose record names one (or of FORMATS only), where its converter is
    installed, into OUT_DIR; return the index.

    The index ({"models": {key: path}, "skipped": {format: reason}, "formats": [...]}) is written last, so a folder
    whose index covers the formats asked for is complete and is reused as is.
    """
    out = Path(out_dir)
    table = writers()
    asked = set(table) if formats is None else {check_choice(f, table, "format with a tiny model") for f in formats}
    wanted = {f: tm for f, tm in table.items() if f in asked}  # the table's order: one converts from another's
    index_path = out / INDEX
    if index_path.is_file():
        index = json.loads(index_path.read_text())
        if (index.get("version") == FORMAT_VERSION and set(wanted) <= set(index.get("formats", ()))
                and all(Path(p).exists() for p in index["models"].values())):
            return index
    out.mkdir(parents=True, exist_ok=True)
    models: dict[str, Path] = {}
    skipped: dict[str, str] = {}
    for fmt, tm in wanted.items():
        try:
            written = tm.write(out, models)
        except Unbuilt as exc:
            skipped[fmt] = str(exc)
            continue
        if set(written) != set(tm.models):
            raise ValueError(f"the {fmt} tiny-model writer wrote {sorted(written)}; its TinyModels says "
                             f"{sorted(tm.models)}")
        models.update(written)
    index = {"version": FORMAT_VERSION, "formats": list(wanted), "models": {k: str(p) for k, p in models.items()},
             "skipped": skipped}
    atomic_write_json(index_path, index)
    return index
