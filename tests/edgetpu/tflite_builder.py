"""Write small .tflite flatbuffers directly with the TFLite schema (ai_edge_litert's object API).

Tests use it for graphs that no converter produces on demand (a strided slice with stride 2, a
concatenation with a non-zero constant, a compiled model holding `edgetpu-custom-op` ...), in
milliseconds and without TensorFlow. The files are real flatbuffers: LiteRT's interpreter loads
them, and edgekit's reader sees them exactly as it sees converter output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb
from ai_edge_litert.tools import flatbuffer_utils

_TYPES = {
    "float32": fb.TensorType.FLOAT32,
    "int8": fb.TensorType.INT8,
    "uint8": fb.TensorType.UINT8,
    "int32": fb.TensorType.INT32,
    "int64": fb.TensorType.INT64,
}
_OPTIONS = {  # op -> (BuiltinOptions member, options class)
    "CONV_2D": ("Conv2DOptions", fb.Conv2DOptionsT),
    "DEPTHWISE_CONV_2D": ("DepthwiseConv2DOptions", fb.DepthwiseConv2DOptionsT),
    "FULLY_CONNECTED": ("FullyConnectedOptions", fb.FullyConnectedOptionsT),
    "MAX_POOL_2D": ("Pool2DOptions", fb.Pool2DOptionsT),
    "AVERAGE_POOL_2D": ("Pool2DOptions", fb.Pool2DOptionsT),
    "CONCATENATION": ("ConcatenationOptions", fb.ConcatenationOptionsT),
    "STRIDED_SLICE": ("StridedSliceOptions", fb.StridedSliceOptionsT),
    "MEAN": ("ReducerOptions", fb.ReducerOptionsT),
    "SOFTMAX": ("SoftmaxOptions", fb.SoftmaxOptionsT),
    "ADD": ("AddOptions", fb.AddOptionsT),
    "RESHAPE": ("ReshapeOptions", fb.ReshapeOptionsT),
}


class Graph:
    """One subgraph under construction: tensors, constant buffers, operators."""

    def __init__(self) -> None:
        self.tensors: list[Any] = []
        self.buffers: list[Any] = [fb.BufferT()]  # buffer 0: the empty sentinel every model has
        self.ops: list[Any] = []
        self.codes: list[tuple[int, str | None, int]] = []

    def tensor(
        self,
        name: str,
        shape: list[int],
        dtype: str = "int8",
        data: np.ndarray | None = None,
        signature: list[int] | None = None,
        scale: float | None = 0.05,
        zero_point: int = 0,
    ) -> int:
        t = fb.TensorT()
        t.name = name
        t.shape = [max(int(d), 1) for d in shape]
        if signature is not None:
            t.shapeSignature = list(signature)
        t.type = _TYPES[dtype]
        if data is not None:
            b = fb.BufferT()
            b.data = np.ascontiguousarray(data).astype(dtype).view(np.uint8).ravel()
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        else:
            t.buffer = 0
        if scale is not None and dtype in ("int8", "uint8"):
            q = fb.QuantizationParametersT()
            q.scale, q.zeroPoint = [float(scale)], [int(zero_point)]
            t.quantization = q
        self.tensors.append(t)
        return len(self.tensors) - 1

    def op(self, name: str, inputs: list[int], outputs: list[int], version: int = 1, **options: Any) -> None:
        custom = None
        if hasattr(fb.BuiltinOperator, name):
            code = getattr(fb.BuiltinOperator, name)
        else:
            code, custom = fb.BuiltinOperator.CUSTOM, name
        key = (code, custom, version)
        if key not in self.codes:
            self.codes.append(key)
        o = fb.OperatorT()
        o.opcodeIndex = self.codes.index(key)
        o.inputs, o.outputs = list(inputs), list(outputs)
        if name in _OPTIONS:
            member, cls = _OPTIONS[name]
            opts = cls()
            for k, v in options.items():
                setattr(opts, k, v)
            o.builtinOptionsType = getattr(fb.BuiltinOptions, member)
            o.builtinOptions = opts
        if custom is not None:
            o.customOptions = b"\x00" * 16
        self.ops.append(o)

    def write(self, path: str | Path, inputs: list[int], outputs: list[int]) -> Path:
        sg = fb.SubGraphT()
        sg.tensors, sg.operators, sg.inputs, sg.outputs, sg.name = self.tensors, self.ops, inputs, outputs, "main"
        m = fb.ModelT()
        m.version, m.description = 3, "edgekit test graph"
        m.subgraphs, m.buffers = [sg], self.buffers
        m.operatorCodes = []
        for code, custom, version in self.codes:
            oc = fb.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode = code, min(code, 127)
            oc.customCode, oc.version = custom, version
            m.operatorCodes.append(oc)
        p = Path(path)
        p.write_bytes(bytes(flatbuffer_utils.convert_object_to_bytearray(m)))
        return p


def conv_chain(path: Path, middle: str | None = None, batch: int = 1, dynamic: bool = False, **mid: Any) -> Path:
    """input -> CONV_2D 3x3 (8->16) -> [MIDDLE op] -> CONV_2D 1x1 (16->4) -> output, all int8.

    With MIDDLE the partition point of the pre-flight must be that op (index 1).
    """
    g = Graph()
    rng = np.random.default_rng(0)
    sig = [-1, 8, 8, 8] if dynamic else None
    x = g.tensor("input", [batch, 8, 8, 8], signature=sig)
    w1 = g.tensor("w1", [16, 3, 3, 8], data=rng.integers(-127, 127, (16, 3, 3, 8)))
    b1 = g.tensor("b1", [16], "int32", data=np.zeros(16), scale=None)
    h = g.tensor("h", [batch, 6, 6, 16], signature=[-1, 6, 6, 16] if dynamic else None)
    g.op(
        "CONV_2D",
        [x, w1, b1],
        [h],
        version=3,
        padding=fb.Padding.VALID,
        strideW=1,
        strideH=1,
        dilationWFactor=1,
        dilationHFactor=1,
    )
    if middle:
        h2 = g.tensor("h2", [batch, 6, 6, 16])
        g.op(middle, [h], [h2], **mid)
        h = h2
    w2 = g.tensor("w2", [4, 1, 1, 16], data=rng.integers(-127, 127, (4, 1, 1, 16)))
    b2 = g.tensor("b2", [4], "int32", data=np.zeros(4), scale=None)
    y = g.tensor("output", [batch, 6, 6, 4])
    g.op(
        "CONV_2D",
        [h, w2, b2],
        [y],
        version=3,
        padding=fb.Padding.VALID,
        strideW=1,
        strideH=1,
        dilationWFactor=1,
        dilationHFactor=1,
    )
    return g.write(path, [x], [y])
