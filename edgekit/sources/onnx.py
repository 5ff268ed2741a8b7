"""ONNX sources, with or without external data. External data must resolve inside the model's folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgekit._deps import require
from edgekit.border import all_text, vendor_errors
from edgekit.errors import UnsupportedModel, UsageError
from edgekit.fsutil import sha256_file
from edgekit.layout import guess_layout
from edgekit.sniff import looks_like_onnx
from edgekit.sources.base import LoadOptions, Source, SourceSpec


def check_external_data(model: object, path: Path) -> None:
    """Every external-data location must be a relative path inside PATH's folder, and exist."""
    onnx = require("onnx")
    from onnx.external_data_helper import ExternalDataInfo, _get_all_tensors, uses_external_data

    folder = path.parent.resolve()
    for tensor in _get_all_tensors(model):
        if not uses_external_data(tensor):
            continue
        location = ExternalDataInfo(tensor).location
        target = (folder / location).resolve()
        if Path(location).is_absolute() or folder not in target.parents:
            raise UnsupportedModel(
                f"{path} refers to external data '{location}' outside its own folder; edgekit does not read files "
                "outside the model's folder.",
                hint="Keep the .onnx and its data file together in one folder "
                "(onnx.save(..., location='model.onnx.data')).",
            )
        if not target.is_file():
            raise UsageError(
                f"{path} stores its weights in '{location}', which is missing next to it.",
                hint=f"Copy {location} into {folder}, or re-export with external_data=False.",
            )
    del onnx


def load(path: Path, opts: LoadOptions, kind: str = "onnx") -> Source:
    onnx = require("onnx", purpose="read ONNX models")
    ort = require("onnxruntime", purpose="run the ONNX source as the reference")
    with vendor_errors("onnx", error=UnsupportedModel, what=f"{path} is not a readable ONNX model",
                       hint="The file may be truncated or not ONNX; re-export it."):  # protobuf DecodeError ...
        model = onnx.load(str(path), load_external_data=False)
    if not model.graph.node:
        raise UnsupportedModel(f"{path} parses as ONNX but has an empty graph.", hint="Re-export the model.")
    check_external_data(model, path)
    with vendor_errors("onnx", error=UnsupportedModel, what=f"{path} is not a valid ONNX model",
                       hint="Re-export it; `python -m onnx.checker` shows the full report."):
        onnx.checker.check_model(str(path))
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    if len(inputs) != 1:
        raise UnsupportedModel(f"{path} takes {len(inputs)} inputs; edgekit converts single-input models.",
                               hint="Export a model that takes one image tensor.")
    dims = inputs[0].type.tensor_type.shape.dim
    shape = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else -1 for d in dims]
    if opts.input_shape:
        if len(opts.input_shape) != len(shape) or any(m > 0 and g != m for g, m in zip(opts.input_shape, shape,
                                                                                       strict=True)):
            raise UsageError(f"--input-shape {opts.input_shape} does not fit the model, which takes {shape} "
                             "(-1: any size).")
        shape = [g if m <= 0 else m for g, m in zip(opts.input_shape, shape, strict=True)]
        shape[0] = shape[0] if shape[0] > 0 else -1
    if any(d <= 0 for d in shape[1:]):
        raise UsageError(f"{path} has dynamic dimensions besides the batch: {shape}.",
                         hint="Pass --input-shape N,C,H,W to fix them.")
    so = ort.SessionOptions()
    so.log_severity_level = 3
    cannot_run = vendor_errors("onnxruntime", error=UnsupportedModel, what=f"onnxruntime cannot run {path}")
    try:
        with cannot_run:
            session = ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])
    except UnsupportedModel as exc:
        # onnxruntime raises a plain Fail for it, so only its text tells: it cannot shape-infer through small
        # constants (Reshape shapes) stored as external data. Load the weights into memory, hand it the whole model.
        if exc.__cause__ is None or "external" not in all_text(exc.__cause__):
            raise
        with cannot_run:
            full = onnx.load(str(path))
            session = ort.InferenceSession(full.SerializeToString(), sess_options=so,
                                           providers=["CPUExecutionProvider"])
    elem = session.get_inputs()[0].type
    dtype = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(uint8)": "uint8"}.get(elem, "float32")
    name = inputs[0].name
    out_name = session.get_outputs()[0].name
    max_batch = shape[0] if shape[0] > 0 else 256

    def predict(x: np.ndarray) -> np.ndarray:
        outs = [session.run([out_name], {name: x[i:i + max_batch].astype(dtype)})[0]
                for i in range(0, len(x), max_batch)]
        return np.concatenate(outs).astype(np.float32)

    return Source(
        path=path, kind="onnx", family="onnx", layout=guess_layout(shape), input_name=name, input_shape=shape,
        input_dtype=dtype, predict=predict, model=path, sha256=sha256_file(path),
        output_names=[o.name for o in session.get_outputs()],
    )


def sniff(path: Path, head: bytes) -> str | None:
    """onnx for a file named .onnx or starting like a ModelProto (the loader's full parse may still refuse it)."""
    return "onnx" if head and (path.suffix.lower() == ".onnx" or looks_like_onnx(head)) else None


SOURCE = SourceSpec(name="onnx", family="onnx", kinds=("onnx",), sniff=sniff, load=load, files=".onnx",
                    dists=("onnx", "onnxruntime"))
