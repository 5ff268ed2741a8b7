"""ONNX sources, with or without external data. External data must resolve inside the model's folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from edgekit.core._deps import require
from edgekit.core.batching import rows_per_chunk
from edgekit.core.border import all_text, vendor_errors
from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.core.fsutil import sha256_file
from edgekit.core.sniff import looks_like_onnx
from edgekit.sources.base import LoadOptions, Source, SourceSpec
from edgekit.sources.onnx_layout import input_layout

if TYPE_CHECKING:
    from onnx import ModelProto, ValueInfoProto


def check_external_data(model: ModelProto, path: Path) -> None:
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


def given_shapes(names: list[str], opts: LoadOptions) -> dict[str, list[int]]:
    """The --input-shape values by input name: `name:dims` per input, or plain dims for a single-input model."""
    named = dict(opts.input_shapes or {})
    unknown = [n for n in named if n not in names]
    if unknown:
        raise UsageError(f"--input-shape names {unknown}, which the model does not take; its inputs are {names}.",
                         hint="Give each input as name:dims, e.g. --input-shape " + " --input-shape ".join(
                             f"{n}:1,3,224,224" for n in names[:2]))
    if opts.input_shape:
        if len(names) > 1:
            raise UsageError(f"--input-shape {_fmt(opts.input_shape)} does not say which of the model's inputs "
                             f"{names} it is for.",
                             hint="Give each input as name:dims, e.g. --input-shape " + " --input-shape ".join(
                                 f"{n}:1,3,224,224" for n in names[:2]))
        named.setdefault(names[0], list(opts.input_shape))
    return named


def _fmt(shape: list[int]) -> str:
    return ",".join(str(d) for d in shape)


def _merged(value: ValueInfoProto, given: list[int] | None) -> list[int]:
    """The input's shape with GIVEN filling its dynamic dims; UsageError where GIVEN contradicts a fixed one."""
    from edgekit.sources.onnx_pin import dim_names, dims_of

    shape = dims_of(value)
    name = value.name
    if given is not None:
        if len(given) != len(shape) or any(m > 0 and g != m for g, m in zip(given, shape, strict=True)):
            raise UsageError(f"--input-shape {_fmt(given)} does not fit input '{name}', which takes "
                             f"[{', '.join(dim_names(value))}] (names and ? are dynamic dims).",
                             hint="Give every dim, batch first, in the model's own layout (NCHW for most ONNX).")
        shape = [g if m <= 0 else m for g, m in zip(given, shape, strict=True)]
        shape[0] = dims_of(value)[0]  # the batch stays as the model has it
    dynamic = [f"{i} ({n})" for i, n in enumerate(dim_names(value)) if i and shape[i] <= 0]
    if dynamic:
        raise UsageError(
            f"Input '{name}' of the model has dynamic dimension(s) besides the batch: dim {', '.join(dynamic)} of "
            f"[{', '.join(dim_names(value))}]. Conversion needs them fixed.",
            hint=f"Pass --input-shape with every dim, batch first, in the model's layout, e.g. --input-shape "
                 f"{_example(dim_names(value))}" + (f" (or {name}:{_example(dim_names(value))} per input)"),
        )
    return shape


def _example(names: list[str]) -> str:
    guess = {1: "1", 2: "3", 3: "224", 4: "224"} if len(names) == 4 else {}
    return ",".join(n if n.isdigit() else guess.get(i + 1, "1") if i else "1" for i, n in enumerate(names))


def load(path: Path | None, opts: LoadOptions, kind: str = "onnx") -> Source:
    if path is None:  # no onnx-factory kind: the table never asks this loader to build a model
        raise UsageError("An ONNX source needs the path of the .onnx file.")
    onnx = require("onnx", purpose="read ONNX models")
    ort = require("onnxruntime", purpose="run the ONNX source as the reference")
    from edgekit.sources.onnx_pin import opset_of, pin

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
    if not inputs:
        raise UnsupportedModel(f"{path} takes no inputs.", hint="Export a model that takes an input tensor.")
    given = given_shapes([i.name for i in inputs], opts)
    shapes = {i.name: _merged(i, given.get(i.name)) for i in inputs}
    read_from, tmp = path, None
    needs_opset = bool(opts.min_opset and 0 < opset_of(model) < opts.min_opset)
    dynamic_given = any(d <= 0 for i in inputs for d in _dims(i)[1:])
    changes: list[str] = []
    if dynamic_given or needs_opset:  # edgekit's own pinned copy; the user's file is never changed
        import tempfile

        with vendor_errors("onnx", error=UnsupportedModel, what=f"{path} could not be read in full"):
            full = onnx.load(str(path))
        full, changes = pin(full, shapes, opts.min_opset)
        tmp = tempfile.TemporaryDirectory(prefix="edgekit-onnx-")  # kept alive by the Source, removed with it
        read_from = Path(tmp.name) / path.name
        with vendor_errors("onnx", error=UnsupportedModel, what="Writing the pinned copy of the model failed"):
            onnx.save(full, str(read_from))
    so = ort.SessionOptions()
    so.log_severity_level = 3
    cannot_run = vendor_errors("onnxruntime", error=UnsupportedModel, what=f"onnxruntime cannot run {path}")
    try:
        with cannot_run:
            session = ort.InferenceSession(str(read_from), sess_options=so, providers=["CPUExecutionProvider"])
    except UnsupportedModel as exc:
        # onnxruntime raises a plain Fail for it, so only its text tells: it cannot shape-infer through small
        # constants (Reshape shapes) stored as external data. Load the weights into memory, hand it the whole model.
        if exc.__cause__ is None or "external" not in all_text(exc.__cause__):
            raise
        with cannot_run:
            full = onnx.load(str(read_from))
            session = ort.InferenceSession(full.SerializeToString(), sess_options=so,
                                           providers=["CPUExecutionProvider"])
    types = {i.name: _DTYPES.get(i.type, "float32") for i in session.get_inputs()}
    names = [i.name for i in inputs]
    out_names = [o.name for o in session.get_outputs()]
    first = names[0]
    max_batch = shapes[first][0] if shapes[first][0] > 0 else 0

    def predict_outputs(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        total = len(feeds[first])
        step = max_batch or rows_per_chunk((feeds[n] for n in names), 256)  # static batch, or chunks by bytes
        parts: list[list[np.ndarray]] = [[] for _ in out_names]
        for i in range(0, total, step):
            got = session.run(out_names, {n: feeds[n][i:i + step].astype(types[n]) for n in names})
            for part, y in zip(parts, got, strict=True):
                part.append(np.asarray(y))
        return {n: np.concatenate(p).astype(np.float32) for n, p in zip(out_names, parts, strict=True)}

    def predict(x: np.ndarray) -> np.ndarray:
        if len(names) > 1:
            raise UsageError(f"The model takes {len(names)} inputs {names}; feed them all by name.")
        return predict_outputs({first: x})[out_names[0]]

    return Source(
        path=read_from, kind="onnx", family="onnx", layout=input_layout(model, first, shapes[first], opts.layout),
        input_name=first,
        input_shape=shapes[first], input_dtype=types[first], predict=predict, model=read_from,
        sha256=sha256_file(path), output_names=out_names, predict_outputs=predict_outputs,
        inputs=[(n, shapes[n], types[n]) for n in names] if len(names) > 1 else [],
        changes=changes, origin=path if tmp is not None else None, extra={"pinned_dir": tmp} if tmp else {},
        metadata={str(p.key)[:256]: str(p.value)[:65536] for p in model.metadata_props},
    )


def _dims(value: ValueInfoProto) -> list[int]:
    from edgekit.sources.onnx_pin import dims_of

    return dims_of(value)


_DTYPES = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(uint8)": "uint8"}


def sniff(path: Path, head: bytes) -> str | None:
    """onnx for a file named .onnx or starting like a ModelProto (the loader's full parse may still refuse it)."""
    return "onnx" if head and (path.suffix.lower() == ".onnx" or looks_like_onnx(head)) else None


SOURCE = SourceSpec(name="onnx", family="onnx", kinds=("onnx",), sniff=sniff, load=load, files=".onnx",
                    dists=("onnx", "onnxruntime"))
