"""Inspect a .tflite file: the report composed from the flatbuffer reader and the Edge TPU pre-flight.

Reading the flatbuffer (without TensorFlow) is `edgekit.tflite.model`'s job and predicting the
Edge TPU mapping is `edgekit.edgetpu.preflight`'s; this module only turns the two into an
`InspectReport`. Only the main subgraph (0) is described op by op.
"""

from __future__ import annotations

from pathlib import Path

from edgekit.core.fsutil import sha256_file
from edgekit.edgetpu.preflight import preflight_model
from edgekit.inspect.records import InspectOp, InspectReport, ParamCounts, TensorInfo
from edgekit.tflite.model import MAC_OPS_TFLITE, TTensor, params_by_dtype, read_tflite


def tensor_info(t: TTensor) -> TensorInfo:
    """How the report shows one tensor: its shape signature (-1 = dynamic), dtype, quantization."""
    return TensorInfo(name=t.name, shape=list(t.shape), dtype=t.dtype, quantization=t.quantization, const=t.const)


def describe(path: str | Path, min_runtime: int | None = None, with_edgetpu: bool = True) -> InspectReport:
    """The inspection report of a .tflite: I/O, ops with shapes and MACs, params, Edge TPU pre-flight."""
    model = read_tflite(path)
    ops = [
        InspectOp(
            index=op.index,
            op=op.op,
            version=op.version,
            custom=op.custom,
            inputs=[tensor_info(t) for t in model.op_inputs(op)],
            outputs=[tensor_info(t) for t in model.op_outputs(op)],
            macs=model.op_macs(op),
            options=op.options,
        )
        for op in model.ops
    ]
    dynamic = [t.name for t in model.tensors if t.dynamic]
    return InspectReport(
        path=str(model.path),
        format="tflite",
        size_bytes=model.size_bytes,
        sha256=sha256_file(model.path),
        subgraphs=model.subgraphs,
        description=model.description,
        edgetpu_compiled=model.edgetpu_compiled,
        inputs=[tensor_info(model.tensors[i]) for i in model.inputs],
        outputs=[tensor_info(model.tensors[i]) for i in model.outputs],
        ops=ops,
        params=ParamCounts.tally(params_by_dtype(model)),
        macs_counted_ops=", ".join(MAC_OPS_TFLITE),
        all_static=not dynamic,
        dynamic_tensors=dynamic[:20],
        edgetpu=preflight_model(model, min_runtime=min_runtime) if with_edgetpu else None,
    )


__all__ = ["describe", "tensor_info"]
