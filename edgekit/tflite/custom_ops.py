"""MediaPipe's custom ops rewritten as LiteRT builtins, so a MediaPipe .tflite converts like any float model.

MediaPipe's float graphs (selfie segmentation, hair segmentation, some landmark models) carry three custom ops
that MediaPipe registers with its own op resolver (mediapipe/util/tflite/operations/). LiteRT's XNNPACK delegate
runs them, so the file works as a reference; but the TFLite quantizer, LiteRT's builtin kernels and the Edge TPU
compiler do not know them. Each is rewritten here into builtin ops that compute exactly what MediaPipe's kernel
computes (the kernels' C++ source is the specification; it is quoted where it decides a detail):

- `Convolution2DTransposeBias(input, weights OHWI, bias O)`: TRANSPOSE_CONV(output_shape, weights, input), then an
  ADD of the bias. Its custom options are the raw bytes of TFLite's C struct `TfLiteTransposeConvParams`
  (int32 padding: 1 SAME / 2 VALID, stride_width, stride_height; later fields unused by MediaPipe's kernel); the
  output's height is `stride * (in - 1) + filter - pad`, pad = max(0, filter - (in - 1) % stride - 1) for SAME,
  0 for VALID, the same padding TRANSPOSE_CONV derives from that output shape.
- `MaxPoolingWithArgmax2D(input) -> (max, argmax)`: the max is MAX_POOL_2D with the same window, strides, padding
  and activation (raw `TfLitePoolParams`: padding, stride_width, stride_height, filter_width, filter_height,
  activation). The argmax (each window's position of its first strict maximum, y * filter_width + x, as a float
  plus 0.1) has an exact builtin form where the windows tile the input (stride = filter, square, no padding):
  SPACE_TO_DEPTH, ARG_MAX over the window, CAST and ADD 0.1. An argmax no op reads is dropped.
- `MaxUnpooling2D(values, argmax) -> output` (each value written at its window's argmax position, zeros elsewhere):
  on the same tiling, CAST of the argmax to int32 (C's truncation, as MediaPipe's `int idx = ...`), ONE_HOT over
  the window, MUL by the values and DEPTH_TO_SPACE.
Where a MediaPipe op has no exact builtin form (overlapping windows, a non-square window), it is named as refused
with the reason; any other custom op is left as it is (whether a runtime can run it is the runtime's to say).

The file is untrusted: every tensor index, shape and option is checked before it is used, and a graph that does not
fit what MediaPipe's kernels accept is refused (UnsupportedModel), never half rewritten.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgekit.core.errors import UnsupportedModel
from edgekit.tflite.flatbuffer import FLOAT32, INT32, FlatModel

CONV_T_BIAS = "Convolution2DTransposeBias"
MAX_POOL_ARGMAX = "MaxPoolingWithArgmax2D"
MAX_UNPOOL = "MaxUnpooling2D"
MEDIAPIPE_OPS = (CONV_T_BIAS, MAX_POOL_ARGMAX, MAX_UNPOOL)

_SAME, _VALID = 1, 2  # TfLitePadding (kTfLitePaddingSame, kTfLitePaddingValid)
_MAX_ELEMENTS = 1 << 31  # a tensor's element count must fit the int32 shapes the new RESHAPEs carry
_MAX_STRIDE = 1 << 12  # far beyond any real model; keeps the arithmetic of a damaged file small
_ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6"}  # TfLiteFusedActivation == schema's enum here


@dataclass
class Rewritten:
    """What `rewrite_custom_ops` made of a model.

    blob: the model with every MediaPipe op it could rewrite made builtins (the input bytes where none was);
    changes: a sentence per rewritten op (for the manifest's source.changes and the convert log);
    refused: a sentence per MediaPipe op without an exact builtin form here, naming the op and why;
    others: the custom ops left as they are (not MediaPipe's three), by name.
    """

    blob: bytes
    changes: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)


class _Refused(Exception):
    """This op has no exact builtin form (the reason is the message): the graph is left as it was."""


class _Graph(FlatModel):
    """FlatModel read with the schema ai_edge_litert ships: a rewrite on load must not need TensorFlow."""

    def __init__(self, blob: bytes) -> None:
        from edgekit.core._deps import require

        require("ai_edge_litert", purpose="read .tflite files")
        from ai_edge_litert import schema_py_generated as schema
        from ai_edge_litert.tools import flatbuffer_utils as fu

        self.schema, self.fu = schema, fu
        self.model = fu.convert_bytearray_to_object(bytearray(blob))
        if not self.model.subgraphs:
            raise _Refused("the file holds no subgraph")
        self.sg = self.model.subgraphs[0]
        self.sg.tensors = list(self.sg.tensors or [])
        self.sg.operators = list(self.sg.operators or [])
        for op in self.sg.operators:  # a damaged file may leave them out: FlatModel's index reads both
            op.inputs = op.inputs if op.inputs is not None else []
            op.outputs = op.outputs if op.outputs is not None else []
        self.model.operatorCodes = list(self.model.operatorCodes or [])
        self.model.buffers = list(self.model.buffers or [])
        self.codes = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
        for sg in self.model.subgraphs:
            for k, op in enumerate(sg.operators or []):
                if not 0 <= op.opcodeIndex < len(self.model.operatorCodes):
                    raise _Refused(f"operator {k} names opcode {op.opcodeIndex}, which the file does not define")
        self.reindex()

    def tensor_name(self, tensor: int) -> str:
        return _text(self.sg.tensors[tensor].name)

    def custom_name(self, k: int) -> str | None:
        """The custom code of op K, or None for a builtin (or an opcode index the file does not define)."""
        index = self.sg.operators[k].opcodeIndex
        if not 0 <= index < len(self.model.operatorCodes):
            return None
        c = self.model.operatorCodes[index]
        if max(c.builtinCode, c.deprecatedBuiltinCode) != self.schema.BuiltinOperator.CUSTOM or not c.customCode:
            return None
        return _text(c.customCode)

    def shape(self, t: int) -> list[int]:
        shape = self.sg.tensors[t].shape
        return [int(d) for d in shape] if shape is not None else []

    def new_tensor(self, name: str, shape: list[int], dtype: int = FLOAT32) -> int:
        k = self._tensor(name, shape, 0)
        self.sg.tensors[k].type = dtype
        return k

    def readers_of(self, t: int) -> list[int]:
        return self.readers.get(t, [])

    def is_output(self, t: int) -> bool:
        return t in {int(x) for x in (self.sg.outputs if self.sg.outputs is not None else [])}


def _text(value: Any) -> str:
    """A name from the file (bytes in the object API), never failing on bytes that are not UTF-8."""
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)


def _ints(options: Any, count: int, what: str) -> list[int]:
    """The first COUNT little-endian int32 of a custom op's raw options (MediaPipe stores C structs)."""
    raw = bytes(np.asarray(options, np.uint8)) if options is not None else b""
    if len(raw) < 4 * count:
        raise _Refused(f"its options hold {len(raw)} bytes, fewer than the {4 * count} of MediaPipe's {what}")
    return list(struct.unpack_from(f"<{count}i", raw))


def _io(g: _Graph, op: Any, n_in: int, n_out: int) -> tuple[list[int], list[int]]:
    """OP's tensor indices, checked: the counts MediaPipe's kernel takes, each a float32 tensor of the file."""
    ins = [int(t) for t in (op.inputs if op.inputs is not None else [])]
    outs = [int(t) for t in (op.outputs if op.outputs is not None else [])]
    if len(ins) != n_in or len(outs) != n_out:
        raise _Refused(f"it has {len(ins)} inputs and {len(outs)} outputs, where MediaPipe's kernel takes {n_in} "
                       f"and {n_out}")
    for t in (*ins, *outs):
        if not 0 <= t < len(g.sg.tensors):
            raise _Refused(f"it names tensor {t}, which the file does not define")
        if g.sg.tensors[t].type != FLOAT32:
            raise _Refused(f"tensor '{g.tensor_name(t)}' is not float32 (MediaPipe's kernel computes in float only)")
    return ins, outs


def _rank4(g: _Graph, t: int) -> list[int]:
    shape = g.shape(t)
    if len(shape) != 4 or any(d <= 0 for d in shape):
        raise _Refused(f"tensor '{g.tensor_name(t)}' has shape {shape}, not the 4-D static shape its kernel takes")
    if math.prod(shape) >= _MAX_ELEMENTS:
        raise _Refused(f"tensor '{g.tensor_name(t)}' has shape {shape}, beyond what an int32 shape can hold")
    return shape


def _padding(code: int) -> int:
    if code == _SAME:
        return 0  # schema Padding.SAME
    if code == _VALID:
        return 1  # schema Padding.VALID
    raise _Refused(f"its padding code is {code}, neither SAME (1) nor VALID (2)")


def _stride(v: int, what: str) -> int:
    if not 0 < v <= _MAX_STRIDE:
        raise _Refused(f"its {what} is {v}")
    return v


def _transpose_conv_bias(g: _Graph, k: int) -> list[Any]:
    """Convolution2DTransposeBias -> TRANSPOSE_CONV + ADD (see the module's docstring)."""
    op = g.sg.operators[k]
    (x, w, b), (y,) = _io(g, op, 3, 1)
    padding, sw, sh = _ints(op.customOptions, 3, "TfLiteTransposeConvParams (padding, stride_width, stride_height)")
    pad_code, sw, sh = _padding(padding), _stride(sw, "stride_width"), _stride(sh, "stride_height")
    n, ih, iw, ic = _rank4(g, x)
    oc, fh, fw, wc = _rank4(g, w)
    if wc != ic or g.shape(b) != [oc]:
        raise _Refused(f"its weights {[oc, fh, fw, wc]} and bias {g.shape(b)} do not fit an input of {ic} channels")

    def size(i: int, f: int, s: int) -> int:
        pad = max(0, f - (i - 1) % s - 1) if padding == _SAME else 0
        return s * (i - 1) + f - pad

    want = [n, size(ih, fh, sh), size(iw, fw, sw), oc]
    if g.shape(y) != want:
        raise _Refused(f"its output '{g.tensor_name(y)}' has shape {g.shape(y)}; MediaPipe's kernel makes {want}")
    name = g.tensor_name(y)
    conv = g.add_like(f"{name}/transpose_conv", y)
    shape = g.add_int32(f"{name}/output_shape", np.array(want, np.int32))
    opts = g.schema.TransposeConvOptionsT()
    opts.padding, opts.strideW, opts.strideH = pad_code, sw, sh
    tconv = g.make_op("TRANSPOSE_CONV", [shape, w, x], [conv], opts, g.schema.BuiltinOptions.TransposeConvOptions)
    add_opts, add_type = g.fused("ADD")
    return [tconv, g.make_op("ADD", [conv, b], [y], add_opts, add_type)]


def _pool_params(g: _Graph, op: Any) -> tuple[int, int, int, int, int, int]:
    """(padding, stride_w, stride_h, filter_w, filter_h, activation) of a MediaPipe pooling op, checked."""
    padding, sw, sh, fw, fh, act = _ints(op.customOptions, 6, "TfLitePoolParams (padding, strides, filter, "
                                                               "activation)")
    _padding(padding)
    if act not in _ACTIVATIONS:
        raise _Refused(f"its activation code is {act}, which MAX_POOL_2D's float kernel does not apply the same way")
    return (padding, _stride(sw, "stride_width"), _stride(sh, "stride_height"), _stride(fw, "filter_width"),
            _stride(fh, "filter_height"), act)


def _pooled_size(padding: int, i: int, f: int, s: int) -> int:
    """MediaPipe's (and TensorFlow's) windowed output size."""
    return (i + s - 1) // s if padding == _SAME else (i - f + s) // s


def _tiles(what: str, sw: int, sh: int, fw: int, fh: int, h: int, w: int) -> int:
    """The window size where windows tile the HxW input exactly (stride = filter, square, no padding), else refused."""
    if not (sw == fw and sh == fh and fw == fh):
        raise _Refused(f"its {what} windows ({fh}x{fw}, strides {sh}x{sw}) are not square, input-tiling windows: "
                       "no exact builtin form of the argmax")
    if h % fh or w % fw:
        raise _Refused(f"its {fh}x{fw} windows do not tile the {h}x{w} input (padding): no exact builtin form of "
                       "the argmax")
    return fw


def _max_pool_argmax(g: _Graph, k: int) -> list[Any]:
    """MaxPoolingWithArgmax2D -> MAX_POOL_2D, and the argmax by SPACE_TO_DEPTH + ARG_MAX where it is read."""
    op = g.sg.operators[k]
    (x,), (y, idx) = _io(g, op, 1, 2)
    padding, sw, sh, fw, fh, act = _pool_params(g, op)
    n, h, w, c = _rank4(g, x)
    want = [n, _pooled_size(padding, h, fh, sh), _pooled_size(padding, w, fw, sw), c]
    if want[1] <= 0 or want[2] <= 0 or g.shape(y) != want or g.shape(idx) != want:
        raise _Refused(f"its outputs have shapes {g.shape(y)} and {g.shape(idx)}; MediaPipe's kernel makes {want}")
    opts = g.schema.Pool2DOptionsT()
    opts.padding, opts.strideW, opts.strideH = _padding(padding), sw, sh
    opts.filterWidth, opts.filterHeight, opts.fusedActivationFunction = fw, fh, act
    ops = [g.make_op("MAX_POOL_2D", [x], [y], opts, g.schema.BuiltinOptions.Pool2DOptions)]
    if not g.readers_of(idx) and not g.is_output(idx):
        return ops  # nobody reads the argmax: the max alone
    f = _tiles("pooling", sw, sh, fw, fh, h, w)
    name = g.tensor_name(idx)
    oh, ow = want[1], want[2]
    s2d = g.new_tensor(f"{name}/windows", [n, oh, ow, f * f * c])
    rows = g.new_tensor(f"{name}/windows_rows", [n * oh, ow, f * f, c])
    arg = g.new_tensor(f"{name}/argmax", [n * oh, ow, c], INT32)
    flt = g.new_tensor(f"{name}/argmax_float", [n * oh, ow, c])
    plus = g.new_tensor(f"{name}/argmax_plus", [n * oh, ow, c])
    s2d_opts = g.schema.SpaceToDepthOptionsT()
    s2d_opts.blockSize = f
    arg_opts = g.schema.ArgMaxOptionsT()
    arg_opts.outputType = INT32
    add_opts, add_type = g.fused("ADD")
    return [*ops,
            g.make_op("SPACE_TO_DEPTH", [x], [s2d], s2d_opts, g.schema.BuiltinOptions.SpaceToDepthOptions),
            g.reshape_op(s2d, rows, [n * oh, ow, f * f, c], f"{name}/windows_rows"),
            g.make_op("ARG_MAX", [rows, g.add_int32(f"{name}/axis", np.array([2], np.int32))], [arg], arg_opts,
                      g.schema.BuiltinOptions.ArgMaxOptions),
            _cast(g, arg, flt, INT32, FLOAT32),
            # MediaPipe writes `max_y * filter_width + max_x + 0.1f`: the int made float, then 0.1f added
            g.make_op("ADD", [flt, g.add_const(f"{name}/tenth", np.array([0.1], np.float32))], [plus], add_opts,
                      add_type),
            g.reshape_op(plus, idx, want, name)]


def _cast(g: _Graph, x: int, y: int, src: int, dst: int) -> Any:
    opts = g.schema.CastOptionsT()
    opts.inDataType, opts.outDataType = src, dst
    return g.make_op("CAST", [x], [y], opts, g.schema.BuiltinOptions.CastOptions)


def _max_unpool(g: _Graph, k: int) -> list[Any]:
    """MaxUnpooling2D -> CAST, ONE_HOT over the window, MUL by the values, DEPTH_TO_SPACE (input-tiling windows)."""
    op = g.sg.operators[k]
    (v, idx), (y,) = _io(g, op, 2, 1)
    _, sw, sh, fw, fh, _ = _pool_params(g, op)  # MediaPipe's unpooling applies no activation
    n, h, w, c = _rank4(g, v)
    if g.shape(idx) != [n, h, w, c]:
        raise _Refused(f"its argmax has shape {g.shape(idx)}, its values {[n, h, w, c]}")
    want = [n, h * fh, w * fw, c]  # MediaPipe's output size: the input times the window, whatever the strides
    if g.shape(y) != want:
        raise _Refused(f"its output has shape {g.shape(y)}; MediaPipe's kernel makes {want}")
    f = _tiles("unpooling", sw, sh, fw, fh, want[1], want[2])
    name = g.tensor_name(y)
    as_int = g.new_tensor(f"{name}/argmax_int", [n, h, w, c], INT32)
    rows = g.new_tensor(f"{name}/argmax_rows", [n * h, w, c], INT32)
    hot = g.new_tensor(f"{name}/one_hot", [n * h, w, f * f, c])
    vals = g.new_tensor(f"{name}/values_rows", [n * h, w, 1, c])
    placed = g.new_tensor(f"{name}/placed", [n * h, w, f * f, c])
    depth = g.new_tensor(f"{name}/placed_depth", [n, h, w, f * f * c])
    hot_opts = g.schema.OneHotOptionsT()
    hot_opts.axis = 2
    mul_opts, mul_type = g.fused("MUL")
    d2s = g.schema.DepthToSpaceOptionsT()
    d2s.blockSize = f
    return [_cast(g, idx, as_int, FLOAT32, INT32),
            g.reshape_op(as_int, rows, [n * h, w, c], f"{name}/argmax_rows"),
            g.make_op("ONE_HOT", [rows, g.add_int32(f"{name}/depth", np.array(f * f, np.int32)),
                                  g.add_const(f"{name}/on", np.array(1.0, np.float32)),
                                  g.add_const(f"{name}/off", np.array(0.0, np.float32))], [hot], hot_opts,
                      g.schema.BuiltinOptions.OneHotOptions),
            g.reshape_op(v, vals, [n * h, w, 1, c], f"{name}/values_rows"),
            g.make_op("MUL", [hot, vals], [placed], mul_opts, mul_type),
            g.reshape_op(placed, depth, [n, h, w, f * f * c], f"{name}/placed_depth"),
            g.make_op("DEPTH_TO_SPACE", [depth], [y], d2s, g.schema.BuiltinOptions.DepthToSpaceOptions)]


_REWRITES = {CONV_T_BIAS: _transpose_conv_bias, MAX_POOL_ARGMAX: _max_pool_argmax, MAX_UNPOOL: _max_unpool}
_FORMS = {CONV_T_BIAS: "TRANSPOSE_CONV + ADD of the bias", MAX_POOL_ARGMAX: "MAX_POOL_2D",
          MAX_UNPOOL: "CAST, ONE_HOT, MUL and DEPTH_TO_SPACE"}


def custom_op_names(blob: bytes) -> list[str]:
    """The custom ops of BLOB's main subgraph, in order of first use."""
    g = _parsed(blob)
    return list(dict.fromkeys(n for k in range(len(g.sg.operators)) if (n := g.custom_name(k))))


def _parsed(blob: bytes) -> _Graph:
    from edgekit.core.border import vendor_errors

    with vendor_errors("litert", error=UnsupportedModel, what="The .tflite could not be parsed for its custom ops "
                       "(it is truncated or corrupt)", hint="Re-export the model, and check that the file was copied "
                       "completely."):
        try:
            return _Graph(blob)
        except _Refused as exc:
            raise UnsupportedModel(f"The .tflite cannot be read: {exc}.") from None


def rewrite_custom_ops(blob: bytes) -> Rewritten:
    """BLOB with MediaPipe's custom ops made builtins where each has an exact builtin form (see the module)."""
    g = _parsed(blob)
    done: list[str] = []
    refused: list[str] = []
    others: list[str] = []
    k = 0
    while k < len(g.sg.operators):
        name = g.custom_name(k)
        rewrite = _REWRITES.get(name) if name is not None else None
        if name is None or rewrite is None:
            if name and name not in others:
                others.append(name)
            k += 1
            continue
        out = g.sg.operators[k].outputs
        first = g.tensor_name(int(out[0])) if out is not None and len(out) and 0 <= out[0] < len(g.sg.tensors) else "?"
        try:
            ops = rewrite(g, k)
        except _Refused as exc:
            refused.append(f"{name} (op {k}, output '{first}'): {exc}")
            k += 1
            continue
        done.append(f"{name} (op {k}, output '{first}') rewritten as builtin {_FORMS[name]}")
        g.sg.operators[k:k + 1] = ops
        g.reindex()
        k += len(ops)
    if not done:
        return Rewritten(blob, [], refused, others)
    g.model.version = max(int(g.model.version or 0), 3)
    return Rewritten(_bytes(g), done, refused, others)


def _bytes(g: _Graph) -> bytes:
    """The rewritten model, with the operator codes no op uses any more dropped (a runtime refuses a model naming an
    op it lacks, used or not). Every new op is version 1 (FlatModel.opcode): three-input TRANSPOSE_CONV, float
    ARG_MAX with int32 output and the rest need no more."""
    used = sorted({op.opcodeIndex for op in g.sg.operators})
    for other in g.model.subgraphs[1:]:  # other subgraphs' ops keep their codes
        used = sorted({*used, *(op.opcodeIndex for op in other.operators or [])})
    remap = {old: new for new, old in enumerate(used)}
    g.model.operatorCodes = [g.model.operatorCodes[i] for i in used]
    for sg in g.model.subgraphs:
        for op in sg.operators or []:
            op.opcodeIndex = remap[op.opcodeIndex]
    return bytes(g.fu.convert_object_to_bytearray(g.model))


__all__ = ["CONV_T_BIAS", "MAX_POOL_ARGMAX", "MAX_UNPOOL", "MEDIAPIPE_OPS", "Rewritten", "custom_op_names",
           "rewrite_custom_ops"]
