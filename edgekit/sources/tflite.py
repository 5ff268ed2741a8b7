""".tflite sources: a model already converted, taken as it is where that makes sense.

A .tflite cannot be turned back into another format, but it can be finished: an int8 .tflite goes
to the Edge TPU (pre-flight and compile, through the `tflite_adopt` step and the edgetpu target's
post-step), and any .tflite can be inspected and profiled. The file is read without TensorFlow
(edgekit.tflite.model); the reference `predict` is the file itself run by LiteRT (float in,
quantized per the model's input, dequantized out), so the adopted artifact is validated against
the very model the user gave.

A model with custom ops (MediaPipe's, TF Text's ...) cannot run in a plain LiteRT: it is refused
here naming the ops, with what would run it, never "re-run convert" (the file is fine).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.core.fsutil import sha256_file
from edgekit.core.layout import guess_layout
from edgekit.core.sniff import is_tflite_head
from edgekit.runtimes.litert_errors import custom_op_hint
from edgekit.sources.base import LoadOptions, Source, SourceSpec

_QUANT = ("int8", "uint8")
_EDGE_OPS = ("QUANTIZE", "DEQUANTIZE")


def precision_of(model: Any) -> str:
    """int8 for a full-integer model (float only at its QUANTIZE/DEQUANTIZE edges), else fp16/dynamic/fp32."""
    edge = {i for op in model.ops if op.op in _EDGE_OPS for i in (*op.inputs, *op.outputs)}
    acts = [t for t in model.tensors if not t.const]
    quant_acts = any(t.dtype in _QUANT for t in acts)
    float_acts = [t for t in acts if t.dtype.startswith("float") and t.index not in edge]
    if quant_acts and not float_acts:
        return "int8"
    weights = {t.dtype for t in model.tensors if t.const}
    if weights & set(_QUANT):
        return "dynamic"
    return "fp16" if "float16" in weights else "fp32"


def make_predict(path: Path) -> tuple[Callable[[np.ndarray], np.ndarray], Any]:
    """(float batch -> first output as float32, the runtime) with LiteRT's CPU kernels (XNNPACK, else builtin)."""
    from edgekit.runtimes.litert import LiteRT

    rt = LiteRT()
    rt.load(path, device="cpu", kernels="auto")
    spec = rt.inputs[0]
    out_name = rt.outputs[0].name
    static = spec.shape[0] if spec.shape and spec.shape[0] > 0 else 0

    def predict(x: np.ndarray) -> np.ndarray:
        outs = []
        step = static or len(x) or 1
        for i in range(0, len(x), step):
            part = np.asarray(x[i:i + step], dtype=np.float32)
            n = len(part)
            if static and n < static:  # pad the last chunk up to the model's batch
                part = np.concatenate([part, np.repeat(part[-1:], static - n, axis=0)])
            outs.append(np.asarray(rt.run_float({spec.name: part})[out_name], dtype=np.float32)[:n])
        return np.concatenate(outs)

    return predict, rt


def load(path: Path | None, opts: LoadOptions, kind: str = "tflite") -> Source:
    """Read the .tflite at PATH (its I/O, precision and ops) and make LiteRT running it the reference."""
    from edgekit.tflite.model import read_tflite

    if path is None:
        raise UsageError("A .tflite source needs the path of the file.")
    path = Path(path)
    model = read_tflite(path)
    custom = sorted({op.op for op in model.ops if op.custom})
    if custom:
        raise UnsupportedModel(
            f"{path} uses custom op(s) {', '.join(custom)}, which LiteRT does not ship, so edgekit cannot run it as "
            "the reference to validate against.",
            hint=custom_op_hint(custom),
        )
    if len(model.inputs) != 1:
        raise UnsupportedModel(f"{path} takes {len(model.inputs)} inputs; a .tflite source must take one.",
                               hint="Profile it with `edgekit profile` instead; conversion needs a single input.")
    first = model.tensor(model.inputs[0])
    if first is None:
        raise UnsupportedModel(f"{path}: its input names a tensor the file does not define; the file is damaged.",
                               hint="Check that the file was copied completely, or re-export it.")
    shape = [int(d) for d in first.shape]
    if opts.input_shape and [int(d) for d in opts.input_shape] != shape:
        raise UsageError(f"--input-shape {opts.input_shape} does not fit {path}, which takes {shape}.",
                         hint="A .tflite is taken as it is: leave --input-shape out.")
    if any(d <= 0 for d in shape[1:]):
        raise UnsupportedModel(f"{path} has dynamic dimensions besides the batch: {shape}.",
                               hint="The Edge TPU needs static shapes: re-convert the model with a fixed input shape.")
    predict, rt = make_predict(path)
    predict(np.zeros([1, *shape[1:]], dtype=np.float32))  # in the probe's child first: a crash stays there
    return Source(
        path=path, kind="tflite", family="tflite", layout=guess_layout(shape), input_name=first.name,
        input_shape=shape, input_dtype=first.dtype, predict=predict, model=path, sha256=sha256_file(path),
        output_names=[t.name for t in (model.tensor(i) for i in model.outputs) if t is not None],
        extra={"runtime": rt, "precision": precision_of(model)},  # runtime: kept alive as long as predict
    )


def sniff(path: Path, head: bytes) -> str | None:
    """tflite for a TFLite flatbuffer ('TFL3' at byte 4)."""
    return "tflite" if is_tflite_head(head) else None


SOURCE = SourceSpec(name="tflite", family="tflite", kinds=("tflite",), sniff=sniff, load=load, files=".tflite",
                    dists=("ai-edge-litert",))
