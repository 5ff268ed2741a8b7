"""Small float .tflite graphs shaped like MediaPipe's, for the tests of edgekit.tflite.custom_ops and .tflite sources.

MediaPipe's own files come in its wheels, which tests may not download; these graphs are written here with the
TFLite schema that ai_edge_litert ships (milliseconds, no TensorFlow), and carry the same custom ops with the same
raw option structs as MediaPipe's converter writes them:
- `segmenter`: CONV_2D + RELU, then a 2x-upsampling TRANSPOSE_CONV with a bias and a LOGISTIC: a tiny selfie
  segmenter in its builtin form, with a second head (a MEAN of the features, then a FULLY_CONNECTED) where
  asked for; `to_mediapipe_form` turns its biased TRANSPOSE_CONV (or any converter's) into MediaPipe's
  `Convolution2DTransposeBias`;
- `unpooling`: MediaPipe's `MaxPoolingWithArgmax2D` feeding a CONV_2D and `MaxUnpooling2D` (SegNet's decoder);
- `with_custom_op`: a float graph with a custom op nobody ships, which no LiteRT can run.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

CONV_T_BIAS = "Convolution2DTransposeBias"


def _fb() -> tuple[Any, Any]:
    from ai_edge_litert import schema_py_generated as fb
    from ai_edge_litert.tools import flatbuffer_utils

    return fb, flatbuffer_utils


class FloatGraph:
    """One float subgraph under construction (tensors, constant buffers, ops), written as a .tflite."""

    def __init__(self) -> None:
        self.fb, self.fu = _fb()
        self.tensors: list[Any] = []
        self.buffers: list[Any] = [self.fb.BufferT()]  # buffer 0: the empty sentinel
        self.ops: list[Any] = []
        self.codes: list[tuple[int, str | None, int]] = []  # (builtin code, custom name, version)

    def tensor(self, name: str, shape: list[int], data: np.ndarray | None = None, dtype: str = "float32") -> int:
        t = self.fb.TensorT()
        t.name, t.shape = name, list(shape)
        t.type = {"float32": self.fb.TensorType.FLOAT32, "int32": self.fb.TensorType.INT32}[dtype]
        t.buffer = 0
        if data is not None:
            b = self.fb.BufferT()
            b.data = np.ascontiguousarray(np.asarray(data, dtype)).view(np.uint8).ravel()
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        self.tensors.append(t)
        return len(self.tensors) - 1

    def op(self, name: str, inputs: list[int], outputs: list[int], options: Any = None, custom: bytes | None = None,
           version: int = 1) -> None:
        fb = self.fb
        code = getattr(fb.BuiltinOperator, name, fb.BuiltinOperator.CUSTOM)
        key = (code, None if hasattr(fb.BuiltinOperator, name) else name, version)
        if key not in self.codes:
            self.codes.append(key)
        o = fb.OperatorT()
        o.opcodeIndex = self.codes.index(key)
        o.inputs, o.outputs = list(inputs), list(outputs)
        if options is not None:
            o.builtinOptionsType = getattr(fb.BuiltinOptions, type(options).__name__[:-1])
            o.builtinOptions = options
        if custom is not None:
            o.customOptions = list(custom)
        self.ops.append(o)

    def options(self, cls: str, **values: Any) -> Any:
        opts = getattr(self.fb, cls)()
        for k, v in values.items():
            setattr(opts, k, v)
        return opts

    def blob(self, inputs: list[int], outputs: list[int]) -> bytes:
        fb = self.fb
        sg = fb.SubGraphT()
        sg.tensors, sg.operators, sg.inputs, sg.outputs, sg.name = self.tensors, self.ops, inputs, outputs, "main"
        m = fb.ModelT()
        m.version, m.description = 3, "edgekit test graph (MediaPipe-shaped)"
        m.subgraphs, m.buffers, m.operatorCodes = [sg], self.buffers, []
        for code, custom, version in self.codes:
            oc = fb.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.customCode, oc.version = code, min(code, 127), custom, version
            m.operatorCodes.append(oc)
        return bytes(self.fu.convert_object_to_bytearray(m))


def segmenter(path: Path, *, size: int = 16, channels: int = 8, kernel: int = 3, second_head: bool = False,
              seed: int = 0, logit_scale: float = 1.0) -> Path:
    """input [1, S, S, 3] -> CONV_2D 3x3 stride 2 + RELU -> TRANSPOSE_CONV KxK stride 2 with bias -> LOGISTIC: the
    output "mask" [1, S, S, 1]; with SECOND_HEAD also "presence" [1, 2] (MEAN of the features, FULLY_CONNECTED),
    listed first among the outputs, as MediaPipe's landmark models list several heads. LOGIT_SCALE multiplies the
    transposed convolution's weights: the mask logits then run far past the sigmoid's flat ends, as a trained
    segmenter's do."""
    rng = np.random.default_rng(seed)
    g = FloatGraph()
    half = size // 2
    x = g.tensor("input", [1, size, size, 3])
    w1 = g.tensor("conv/w", [channels, 3, 3, 3], rng.normal(0, 0.4, (channels, 3, 3, 3)))
    b1 = g.tensor("conv/b", [channels], rng.normal(0, 0.1, channels))
    h = g.tensor("features", [1, half, half, channels])
    g.op("CONV_2D", [x, w1, b1], [h], g.options("Conv2DOptionsT", padding=g.fb.Padding.SAME, strideW=2, strideH=2,
                                                   dilationWFactor=1, dilationHFactor=1,
                                                   fusedActivationFunction=g.fb.ActivationFunctionType.RELU))
    shape = g.tensor("segment/output_shape", [4], np.array([1, size, size, 1]), "int32")
    wt = g.tensor("segment/Kernel", [1, kernel, kernel, channels],
                  rng.normal(0, 0.4, (1, kernel, kernel, channels)) * logit_scale)
    bt = g.tensor("segment/Bias", [1], np.array([0.25]))
    seg = g.tensor("segment", [1, size, size, 1])
    g.op("TRANSPOSE_CONV", [shape, wt, h, bt], [seg], g.options("TransposeConvOptionsT", padding=g.fb.Padding.SAME,
                                                                  strideW=2, strideH=2), version=3)
    mask = g.tensor("mask", [1, size, size, 1])
    g.op("LOGISTIC", [seg], [mask])
    outputs = [mask]
    if second_head:
        axes = g.tensor("pool/axes", [2], np.array([1, 2]), "int32")
        pooled = g.tensor("pooled", [1, channels])
        g.op("MEAN", [h, axes], [pooled], g.options("ReducerOptionsT", keepDims=False))
        wf = g.tensor("presence/w", [2, channels], rng.normal(0, 0.5, (2, channels)))
        bf = g.tensor("presence/b", [2], np.array([0.1, -0.1]))
        presence = g.tensor("presence", [1, 2])
        g.op("FULLY_CONNECTED", [pooled, wf, bf], [presence], g.options("FullyConnectedOptionsT"))
        outputs = [presence, mask]
    path.write_bytes(g.blob([x], outputs))
    return path


def prelu_graph(slopes: np.ndarray, *, hard_swish: bool = False, seed: int = 0) -> bytes:
    """input [1, 8, 8, 3] -> CONV_2D 3x3 -> PRELU (one slope per channel: SLOPES, 8 of them) [-> HARD_SWISH] ->
    CONV_2D 1x1 -> "y" [1, 8, 8, 4]: the ops MediaPipe's palm detector and selfie segmenter hold that XNNPACK and
    TFLite's 16x8 quantizer take in float only."""
    rng = np.random.default_rng(seed)
    g = FloatGraph()
    x = g.tensor("input", [1, 8, 8, 3])
    same = {"padding": g.fb.Padding.SAME, "strideW": 1, "strideH": 1, "dilationWFactor": 1, "dilationHFactor": 1}
    h = g.tensor("conv1", [1, 8, 8, 8])
    g.op("CONV_2D", [x, g.tensor("conv1/w", [8, 3, 3, 3], rng.normal(0, 0.5, (8, 3, 3, 3))),
                     g.tensor("conv1/b", [8], rng.normal(0, 0.1, 8))], [h], g.options("Conv2DOptionsT", **same))
    p = g.tensor("prelu", [1, 8, 8, 8])
    g.op("PRELU", [h, g.tensor("prelu/alpha", [1, 1, 8], np.asarray(slopes, np.float32).reshape(1, 1, 8))], [p])
    if hard_swish:
        s = g.tensor("hard_swish", [1, 8, 8, 8])
        g.op("HARD_SWISH", [p], [s])
        p = s
    y = g.tensor("y", [1, 8, 8, 4])
    g.op("CONV_2D", [p, g.tensor("conv2/w", [4, 1, 1, 8], rng.normal(0, 0.5, (4, 1, 1, 8))),
                     g.tensor("conv2/b", [4], np.zeros(4))], [y], g.options("Conv2DOptionsT", **same))
    return g.blob([x], [y])


def transpose_conv_params(padding: str, stride_w: int, stride_h: int) -> bytes:
    """MediaPipe's custom options for Convolution2DTransposeBias: TfLiteTransposeConvParams's first three int32."""
    return struct.pack("<3i", {"SAME": 1, "VALID": 2}[padding], stride_w, stride_h)


def pool_params(padding: str, stride: int, filter_size: int, activation: int = 0) -> bytes:
    """MediaPipe's custom options for its pooling ops: the raw TfLitePoolParams (computed padding zero)."""
    return struct.pack("<10i", {"SAME": 1, "VALID": 2}[padding], stride, stride, filter_size, filter_size, activation,
                       0, 0, 0, 0)


def to_mediapipe_form(blob: bytes) -> bytes:
    """BLOB with every biased TRANSPOSE_CONV (four inputs, as TFLite converters write a Conv2DTranspose with a bias)
    written as MediaPipe's Convolution2DTransposeBias(input, weights, bias) with its raw options struct.

    ValueError where the op's output shape is not the one MediaPipe's kernel computes from its input."""
    fb, fu = _fb()
    m = fu.convert_bytearray_to_object(bytearray(blob))
    sg = m.subgraphs[0]
    codes = list(m.operatorCodes)
    custom = None
    for op in sg.operators:
        c = codes[op.opcodeIndex]
        if max(c.builtinCode, c.deprecatedBuiltinCode) != fb.BuiltinOperator.TRANSPOSE_CONV or len(op.inputs) != 4:
            continue
        _, w, x, b = (int(t) for t in op.inputs)
        opts = op.builtinOptions
        padding = "SAME" if opts.padding == fb.Padding.SAME else "VALID"
        ih, iw = (int(d) for d in sg.tensors[x].shape[1:3])
        fh, fw = (int(d) for d in sg.tensors[w].shape[1:3])

        def size(i: int, f: int, s: int, padding: str = padding) -> int:
            return s * (i - 1) + f - (max(0, f - (i - 1) % s - 1) if padding == "SAME" else 0)

        want = [size(ih, fh, opts.strideH), size(iw, fw, opts.strideW)]
        have = [int(d) for d in sg.tensors[int(op.outputs[0])].shape[1:3]]
        if want != have:
            raise ValueError(f"TRANSPOSE_CONV output {have} is not MediaPipe's {want}")
        if custom is None:
            oc = fb.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode = fb.BuiltinOperator.CUSTOM, fb.BuiltinOperator.CUSTOM
            oc.customCode, oc.version = CONV_T_BIAS, 1
            codes.append(oc)
            custom = len(codes) - 1
        op.opcodeIndex, op.inputs = custom, [x, w, b]
        op.builtinOptionsType, op.builtinOptions = 0, None
        op.customOptions = list(transpose_conv_params(padding, int(opts.strideW), int(opts.strideH)))
    m.operatorCodes = codes
    return bytes(fu.convert_object_to_bytearray(m))


def unpooling(path: Path, *, size: int = 8, channels: int = 4, window: int = 2, stride: int | None = None,
              mix: bool = True, seed: int = 0) -> Path:
    """input [1, S, S, C] -> MaxPoolingWithArgmax2D (WxW, stride) -> [CONV_2D 1x1 + RELU on the max, where MIX] ->
    MaxUnpooling2D with the argmax -> "unpooled"; stride defaults to the window (MediaPipe's SegNet-style use)."""
    rng = np.random.default_rng(seed)
    stride = stride or window
    g = FloatGraph()
    out = (size - window + stride) // stride
    x = g.tensor("input", [1, size, size, channels])
    pooled = g.tensor("pooled", [1, out, out, channels])
    argmax = g.tensor("argmax", [1, out, out, channels])
    g.op("MaxPoolingWithArgmax2D", [x], [pooled, argmax], custom=pool_params("VALID", stride, window))
    mixed = pooled
    if mix:
        w = g.tensor("mix/w", [channels, 1, 1, channels], rng.normal(0, 0.5, (channels, 1, 1, channels)))
        b = g.tensor("mix/b", [channels], rng.normal(0, 0.1, channels))
        mixed = g.tensor("mixed", [1, out, out, channels])
        g.op("CONV_2D", [pooled, w, b], [mixed], g.options(
            "Conv2DOptionsT", padding=g.fb.Padding.VALID, strideW=1, strideH=1, dilationWFactor=1, dilationHFactor=1,
            fusedActivationFunction=g.fb.ActivationFunctionType.RELU))
    y = g.tensor("unpooled", [1, out * window, out * window, channels])
    g.op("MaxUnpooling2D", [mixed, argmax], [y], custom=pool_params("VALID", stride, window))
    path.write_bytes(g.blob([x], [y]))
    return path


def with_custom_op(path: Path, name: str = "EdgekitNoSuchOp") -> Path:
    """input [1, 8, 8, 3] -> CONV_2D -> custom op NAME (options 16 zero bytes) -> output: LiteRT cannot run it."""
    g = FloatGraph()
    x = g.tensor("input", [1, 8, 8, 3])
    w = g.tensor("conv/w", [4, 1, 1, 3], np.full((4, 1, 1, 3), 0.5))
    b = g.tensor("conv/b", [4], np.zeros(4))
    h = g.tensor("h", [1, 8, 8, 4])
    g.op("CONV_2D", [x, w, b], [h], g.options("Conv2DOptionsT", padding=g.fb.Padding.VALID, strideW=1, strideH=1,
                                               dilationWFactor=1, dilationHFactor=1))
    y = g.tensor("output", [1, 8, 8, 4])
    g.op(name, [h], [y], custom=b"\x00" * 16)
    path.write_bytes(g.blob([x], [y]))
    return path


__all__ = ["FloatGraph", "pool_params", "prelu_graph", "segmenter", "to_mediapipe_form", "transpose_conv_params",
           "unpooling", "with_custom_op"]
