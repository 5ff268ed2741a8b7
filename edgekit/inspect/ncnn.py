"""Inspect an ncnn model (`.ncnn.param` + `.ncnn.bin`) without ncnn: layers in order with their blobs, the shapes
the .param gives and those that follow from it (edgekit.ncnn.shapes), MACs of the convolutions and inner
products, and the parameters by dtype from a walk of the .bin (edgekit.ncnn.weights).

Both files are read as hostile input (bounded, never handed to ncnn's native parser here). The precision is the
weights' stored one (fp16 where pnnx wrote fp16=1). A .bin the walk cannot read to its end (a layer with weights
it does not know) counts what it read and lists the rest as "unread" bytes, never a guess.
"""

from __future__ import annotations

from pathlib import Path

from edgekit.core.errors import UnsupportedModel
from edgekit.inspect.records import InspectOp, InspectReport, ParamCounts, TensorInfo
from edgekit.ncnn.param import Layer, read_param
from edgekit.ncnn.shapes import MAC_LAYERS, layer_macs, propagate
from edgekit.ncnn.weights import walk


def _options(layer: Layer) -> dict[str, object]:
    """The layer's parameters by id ("0": 32 ...), short arrays kept, long ones by their length."""
    out: dict[str, object] = {}
    for key, value in sorted(layer.params.items()):
        out[str(key)] = value if not isinstance(value, list) or len(value) <= 8 else f"[{len(value)} values]"
    return out


def describe(path: str | Path, min_runtime: int | None = None) -> InspectReport:
    """The inspection report of the ncnn model whose .param is PATH; MIN_RUNTIME (the Edge TPU's) does not apply."""
    from edgekit.core.fsutil import sha256_path, size_path

    p = Path(path)
    param = read_param(p)
    weights = p.with_suffix(".bin")
    if not weights.is_file():
        raise UnsupportedModel(f"{p} is an ncnn .param, but its weights file {weights.name} is not beside it.",
                               hint="Copy model.ncnn.param and model.ncnn.bin together.")
    shapes = propagate(param)
    found = walk(param.layers, weights)
    ops: list[InspectOp] = []
    uncounted: list[str] = []
    for layer in param.layers:
        if layer.type == "Input":
            continue
        ins = [TensorInfo(b, shapes.get(b), "float32") for b in layer.bottoms]
        outs = [TensorInfo(t, shapes.get(t), "float32") for t in layer.tops]
        macs = layer_macs(layer, [t.shape for t in ins], [t.shape for t in outs])
        if macs is None:
            uncounted.append(layer.name)
        ops.append(InspectOp(index=len(ops), op=layer.type, version=None, inputs=ins, outputs=outs, macs=macs or 0,
                             options=_options(layer), name=layer.name))
    params = dict(found.by_dtype)
    if not found.complete:
        params["unread"] = {"count": 0, "bytes": max(0, found.file_bytes - found.read_bytes)}
    unknown = [t for t, s in shapes.items() if s is None]
    inputs = [TensorInfo(n, shapes.get(n), "float32") for n in param.input_names()]
    outputs = [TensorInfo(n, shapes.get(n), "float32") for n in param.output_names()]
    report = InspectReport(
        path=str(p), format="ncnn", size_bytes=size_path(p), sha256=sha256_path(p),
        inputs=inputs, outputs=outputs, ops=ops, params=ParamCounts.tally(params),
        macs_counted_ops=", ".join(MAC_LAYERS), all_static=True, dynamic_tensors=[],
        producer="pnnx/ncnn" + (f" (.bin read to {found.stopped_at})" if found.stopped_at else ""),
    )
    report.unknown_shapes = len(unknown) or None
    stored = [d for d in ("int8", "float16") if d in found.by_dtype]
    report.precision = {"int8": "int8", "float16": "fp16"}.get(stored[0], "fp32") if stored else "fp32"
    if uncounted:
        report.description = f"MACs not counted (shape unknown) for {len(uncounted)} layers: {', '.join(uncounted[:8])}"
    return report


__all__ = ["describe"]
