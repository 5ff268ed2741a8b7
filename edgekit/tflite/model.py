"""Read a .tflite flatbuffer into plain records, without TensorFlow: the layer under inspect and pre-flight.

`inspect` must work on a device install (ai-edge-litert, no TensorFlow), so the model is read with
the flatbuffers schema that ai_edge_litert ships (`ai_edge_litert.schema_py_generated`, the
object API behind `ai_edge_litert.tools.flatbuffer_utils`). The parser is pure Python: a
malformed file raises an exception here, it cannot crash the process.

Only the main subgraph (0) is described op by op; that is the graph the interpreter runs and the
one the Edge TPU compiler partitions.

This module imports no other part of edgekit above it (only `sniff`, `macs`, `errors`, `_deps`, `border`):
`edgekit.inspect` composes its report from this reader plus the Edge TPU pre-flight, and the
pre-flight reads models through it, so neither has to import the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core._deps import require
from edgekit.core.artifact import QuantParams
from edgekit.core.border import vendor_errors
from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.core.macs import MAC_OPS_TFLITE, tflite_op_macs
from edgekit.core.sniff import EDGETPU_CUSTOM_OP, is_tflite

# numpy dtype for the TensorType names that carry plain numbers
_NUMPY = {
    "float32": np.float32,
    "float16": np.float16,
    "float64": np.float64,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "bool": np.bool_,
}
_ENUM_OPTIONS = {
    "fusedActivationFunction": "ActivationFunctionType",
    "padding": "Padding",
    "weightsFormat": "FullyConnectedOptionsWeightsFormat",
}


@dataclass
class TTensor:
    """One tensor of the main subgraph."""

    index: int
    name: str
    shape: list[int]  # the shape signature where the file has one (-1 = dynamic), else the shape
    dtype: str  # numpy-style name: int8, uint8, float32, int32 ...
    quantization: QuantParams | None
    buffer: int
    nbytes: int  # bytes of constant data; 0 for activations
    static_shape: list[int] = field(default_factory=list)  # the stored shape (dynamic dims are 1 there)
    data: Any = field(default=None, repr=False)  # the constant bytes (a numpy uint8 view), or None

    @property
    def const(self) -> bool:
        return self.nbytes > 0

    @property
    def dynamic(self) -> bool:
        return any(d < 0 for d in self.shape)

    @property
    def elements(self) -> int:
        return int(math.prod(self.static_shape)) if self.static_shape else 1

    def value(self) -> np.ndarray | None:
        """The constant's values (axes, paddings, strides, alpha ...), or None for an activation."""
        if self.data is None or self.dtype not in _NUMPY:
            return None
        arr: np.ndarray = np.frombuffer(bytes(self.data), dtype=_NUMPY[self.dtype])
        if self.static_shape and arr.size == math.prod(self.static_shape):
            arr = arr.reshape(self.static_shape)
        return arr


@dataclass
class TOp:
    """One operator of the main subgraph, in execution order."""

    index: int
    op: str  # builtin name (CONV_2D ...) or the custom code (edgetpu-custom-op ...)
    version: int
    custom: bool
    inputs: list[int]  # tensor indices; -1 marks an absent optional input
    outputs: list[int]
    options: dict[str, Any]


@dataclass
class TfliteModel:
    path: Path
    size_bytes: int
    tensors: list[TTensor]
    ops: list[TOp]
    inputs: list[int]
    outputs: list[int]
    subgraphs: int
    description: str
    schema_version: int

    def tensor(self, index: int) -> TTensor | None:
        return self.tensors[index] if 0 <= index < len(self.tensors) else None

    def op_inputs(self, op: TOp) -> list[TTensor]:
        return [self.tensors[i] for i in op.inputs if 0 <= i < len(self.tensors)]

    def op_outputs(self, op: TOp) -> list[TTensor]:
        return [self.tensors[i] for i in op.outputs if 0 <= i < len(self.tensors)]

    @property
    def edgetpu_compiled(self) -> bool:
        return any(is_edgetpu_op(op) for op in self.ops)

    def op_macs(self, op: TOp) -> int:
        """MACs of OP (see `edgekit.core.macs`): 0 for ops that are not multiply-accumulate bound."""
        ins = [self.tensor(i) for i in op.inputs]
        return tflite_op_macs(
            op.op,
            [t.static_shape if t is not None else None for t in ins],
            [t.static_shape for t in self.op_outputs(op)],
            op.options,
        )


def is_edgetpu_op(op: TOp) -> bool:
    """True for the custom op that holds a compiled Edge TPU subgraph."""
    return op.custom and op.op == EDGETPU_CUSTOM_OP


def _schema() -> Any:
    import importlib

    require("ai_edge_litert", purpose="read .tflite files")
    return importlib.import_module("ai_edge_litert.schema_py_generated")


def _names(cls: Any) -> dict[int, str]:
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


def _text(x: Any) -> str:
    if x is None:
        return ""
    return x.decode("utf-8", "replace") if isinstance(x, (bytes, bytearray)) else str(x)


def _plain(v: Any) -> Any:
    """Option values as JSON-able plain data."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (bytes, bytearray)):
        return _text(v)
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return None  # nested tables (rare: e.g. quantSpec) are left out


def _options(schema: Any, obj: Any) -> dict[str, Any]:
    if obj is None:
        return {}
    out: dict[str, Any] = {}
    for key, value in vars(obj).items():
        enum = _ENUM_OPTIONS.get(key)
        if enum and isinstance(value, int) and hasattr(schema, enum):
            value = _names(getattr(schema, enum)).get(value, value)
        plain = _plain(value)
        if plain is not None:
            out[key] = plain
    return out


def _quantization(q: Any) -> QuantParams | None:
    if q is None or q.scale is None:
        return None
    return QuantParams.from_arrays(q.scale, q.zeroPoint, int(q.quantizedDimension or 0))


def read_tflite(path: str | Path) -> TfliteModel:
    """Parse the .tflite at PATH, or raise UsageError / UnsupportedModel saying what is wrong."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"No such file: {p}.", hint="Check the path (it is relative to the current folder).")
    if not is_tflite(p):
        raise UnsupportedModel(
            f"{p} is not a TFLite flatbuffer (no 'TFL3' identifier at byte 4).",
            hint="Pass a .tflite written by a TFLite converter (or an .onnx file).",
        )
    schema = _schema()
    from ai_edge_litert.tools import flatbuffer_utils

    data = p.read_bytes()
    # the generated parser raises struct/Index/Type errors on damage: raised in its code, the border maps them
    with vendor_errors("litert", error=UnsupportedModel,
                       what=f"{p} could not be parsed as a TFLite model (it is truncated or corrupt)",
                       hint="Re-export the model, and check that the file was copied completely."):
        model = flatbuffer_utils.read_model_from_bytearray(bytearray(data))
    if not model.subgraphs:
        raise UnsupportedModel(f"{p} holds no subgraph: there is nothing to run.")

    op_names = _names(schema.BuiltinOperator)
    type_names = {k: v.lower() for k, v in _names(schema.TensorType).items()}
    sg = model.subgraphs[0]
    buffers = model.buffers or []

    tensors: list[TTensor] = []
    for i, t in enumerate(sg.tensors or []):
        static = [int(d) for d in (t.shape if t.shape is not None else [])]
        sig = t.shapeSignature
        shape = [int(d) for d in sig] if sig is not None and len(sig) else list(static)
        buf = buffers[t.buffer] if 0 <= t.buffer < len(buffers) else None
        raw = buf.data if buf is not None and buf.data is not None and len(buf.data) else None
        tensors.append(
            TTensor(
                index=i,
                name=_text(t.name),
                shape=shape,
                static_shape=static,
                dtype=type_names.get(t.type, f"type{t.type}"),
                quantization=_quantization(t.quantization),
                buffer=int(t.buffer),
                nbytes=len(raw) if raw is not None else 0,
                data=raw,
            )
        )

    ops: list[TOp] = []
    codes = model.operatorCodes or []
    for i, o in enumerate(sg.operators or []):
        oc = codes[o.opcodeIndex] if 0 <= o.opcodeIndex < len(codes) else None
        if oc is None:
            raise UnsupportedModel(f"{p}: operator {i} names opcode {o.opcodeIndex}, which the file does not define.")
        code = flatbuffer_utils.get_builtin_code_from_operator_code(oc)
        custom = op_names.get(code) == "CUSTOM"
        name = _text(oc.customCode) if custom and oc.customCode else op_names.get(code, f"BUILTIN_{code}")
        ops.append(
            TOp(
                index=i,
                op=name,
                version=int(oc.version or 1),
                custom=custom,
                inputs=[int(x) for x in (o.inputs if o.inputs is not None else [])],
                outputs=[int(x) for x in (o.outputs if o.outputs is not None else [])],
                options=_options(schema, o.builtinOptions),
            )
        )

    inputs = [int(x) for x in (sg.inputs if sg.inputs is not None else [])]
    outputs = [int(x) for x in (sg.outputs if sg.outputs is not None else [])]
    undefined = [i for i in (*inputs, *outputs) if not 0 <= i < len(tensors)]
    if undefined:  # a damaged file: an IndexError traceback in every reader (issue 12's fuzz)
        raise UnsupportedModel(f"{p}: the model's inputs/outputs name tensor {undefined[0]}, which the file does not "
                               f"define ({len(tensors)} tensors).",
                               hint="Re-export the model, and check that the file was copied completely.")
    return TfliteModel(
        path=p,
        size_bytes=len(data),
        tensors=tensors,
        ops=ops,
        inputs=inputs,
        outputs=outputs,
        subgraphs=len(model.subgraphs),
        description=_text(model.description),
        schema_version=int(model.version or 0),
    )


def params_by_dtype(model: TfliteModel) -> dict[str, dict[str, int]]:
    """Constant tensors (weights, biases, shape constants), counted once per buffer, by dtype."""
    seen: set[int] = set()
    out: dict[str, dict[str, int]] = {}
    for t in model.tensors:
        if not t.const or t.buffer in seen:
            continue
        seen.add(t.buffer)
        row = out.setdefault(t.dtype, {"count": 0, "bytes": 0})
        row["count"] += t.elements
        row["bytes"] += t.nbytes
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["bytes"]))


__all__ = [
    "EDGETPU_CUSTOM_OP",
    "MAC_OPS_TFLITE",
    "TOp",
    "TTensor",
    "TfliteModel",
    "is_edgetpu_op",
    "is_tflite",
    "params_by_dtype",
    "read_tflite",
]
