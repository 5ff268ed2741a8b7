"""ONNX sources, with or without external data. External data must resolve inside the model's folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgekit._deps import require
from edgekit.errors import UnsupportedModel, UsageError
from edgekit.fsutil import sha256_file
from edgekit.sources.base import LoadOptions, Source


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


def guess_layout(shape: list[int]) -> str:
    if len(shape) != 4:
        return "NC" if len(shape) == 2 else f"{len(shape)}D"
    c_first, c_last = shape[1], shape[3]
    if c_last in (1, 3, 4) and c_first not in (1, 3, 4):
        return "NHWC"
    return "NCHW"


def load(path: Path, opts: LoadOptions, kind: str = "onnx") -> Source:
    onnx = require("onnx", purpose="read ONNX models")
    ort = require("onnxruntime", purpose="run the ONNX source as the reference")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # google.protobuf DecodeError and friends
        raise UnsupportedModel(f"{path} is not a readable ONNX model ({type(exc).__name__}: {exc}).",
                               hint="The file may be truncated or not ONNX; re-export it.") from exc
    if not model.graph.node:
        raise UnsupportedModel(f"{path} parses as ONNX but has an empty graph.", hint="Re-export the model.")
    check_external_data(model, path)
    try:
        onnx.checker.check_model(str(path))
    except Exception as exc:
        raise UnsupportedModel(f"{path} is not a valid ONNX model: {str(exc).splitlines()[0][:300]}",
                               hint="Re-export it; `python -m onnx.checker` shows the full report.") from exc
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
    try:
        session = ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])
    except Exception as exc:
        if "external" not in str(exc):
            raise UnsupportedModel(f"onnxruntime cannot run {path}: {str(exc).splitlines()[0][:300]}") from exc
        # onnxruntime cannot shape-infer through small constants (Reshape shapes) stored as external data:
        # load the weights into memory and hand it the whole model
        full = onnx.load(str(path))
        session = ort.InferenceSession(full.SerializeToString(), sess_options=so, providers=["CPUExecutionProvider"])
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
