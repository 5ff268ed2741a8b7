"""Edge TPU graph fixes: rewrite, in the float .tflite before calibration, the patterns the Edge TPU
compiler cannot map into equivalent ones it can, so mapping does not stop at them (it stops at the
first unsupported op: everything after runs on the CPU).

- HARD_SWISH (not in Coral's op table; MobileNetV3) becomes x * ReLU6(x + 3) * (1/6): an ADD with a fused
  ReLU6 and two MULs, all mapped. Exact in float; in int8 the product gets its own scale (the cost is
  measured by validation, as for every artifact).
- TRANSPOSE -> [RESHAPE ->] FULLY_CONNECTED (the NCHW flatten order a PyTorch model keeps through the
  NHWC conversion): the transpose is folded into the FC weights (their columns permuted), the op removed.
- PADV2 with a very negative constant (a padded MaxPool from ONNX) on a tensor that cannot be negative
  (written by a ReLU/ReLU6, fused or not): padding with 0 gives the same maximum, so it becomes PAD. Where the
  tensor can be negative (a PReLU before PyTorch's MaxPool2d(ceil_mode=True): MTCNN) and the pads are those SAME
  padding would add, the MAX_POOL_2D reads the PADV2's input with SAME padding instead, and the PADV2 goes.
- FULLY_CONNECTED on a 4-D tensor (keep_num_dims: the pointwise MLPs of ConvNeXt and the channels-last blocks
  onnx2tf writes for a Linear on NHWC data), which the Edge TPU refuses ("the output must be one-dimensional")
  and where mapping stopped after 23 of 328 ops on a ConvNeXt-T: the same product as a 1x1 CONV_2D, whose
  filter [out, 1, 1, in] holds the FC weights [out, in] byte for byte. On a 3-D [1, N, C] tensor (a sequence:
  LeViT's tokens, a text recognizer's time steps) the same between RESHAPEs to and from [1, 1, N, C].
- RELU_0_TO_1 (not in Coral's table; PaddleOCR's hard sigmoids end in it) becomes MUL by 6 with a fused RELU6,
  then MUL by 1/6.
- NEG (Keras's LayerNormalization subtracts its mean through it): the quantizer has no int8 NEG and leaves it in
  float between a DEQUANTIZE and a QUANTIZE, where Edge TPU mapping stops (a Keras ConvNeXt-T: after 5 of 376
  ops); MUL by -1 is the same and quantizes. SQUARE likewise (ConvNeXt-V2's global response norm) becomes MUL(x, x).
- GELU (not in Coral's table; ConvNeXt, PoolFormer, ViT MLPs) becomes x * LOGISTIC(1.702 x): MUL, LOGISTIC,
  MUL. The only fix that is not exact in float: at most 0.0203 from the exact GELU (at x = -2.27), below one
  int8 step of a GELU output whose range exceeds 5.2; validation measures what it costs.
- Data movement through 5-D and 6-D tensors (ShuffleNetV2's channel shuffle, a transformer's qkv split, MobileViT's
  unfold into patches and fold back) rewritten in at most 4 dimensions: edgekit.edgetpu.fixes_layout.
- A softmax over a few rows as 1-D softmaxes, a PADV2 with a finite value (EfficientViT's column of ones) as PAD
  and ADD, a mean over a whole sample (GroupNorm(1)) over a view whose last axis is a multiple of 4:
  edgekit.edgetpu.fixes_attention.
- SQRT, and DIV by a tensor that cannot be negative (ConvNeXt-V2's global response norm), as RSQRT and MUL:
  edgekit.edgetpu.fixes_norm.

Every other fix is exact in float. `apply_fixes` returns the edited model and what it changed; the pre-flight of
the quantized model before and after proves the effect (edgekit.quantize.tflite.recipes records both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgekit.edgetpu.fixes_attention import padv2_value, softmax_by_rows, whole_mean
from edgekit.edgetpu.fixes_layout import five_d_moves
from edgekit.edgetpu.fixes_norm import div_as_rsqrt, sqrt_as_rsqrt
from edgekit.tflite.flatbuffer import FlatModel

_RELU, _RELU6 = 1, 3
_NEGATIVE = -1e30  # a PADV2 constant at or below this pads "minus infinity"


@dataclass
class FixReport:
    applied: dict[str, int] = field(default_factory=dict)

    def words(self) -> str:
        return ", ".join(f"{n} x {k}" for k, n in self.applied.items()) or "none applied"


def _hard_swish(f: FlatModel) -> int:
    def rewrite(x: int, y: int, base: str) -> list[object]:
        three = f.add_const(f"{base}/hswish_3", np.array(3.0, np.float32))
        sixth = f.add_const(f"{base}/hswish_1_6", np.array(1.0 / 6.0, np.float32))
        t1, t2 = f.add_like(f"{base}/hswish_relu6", x), f.add_like(f"{base}/hswish_mul", x)
        add_opts, add_type = f.fused("ADD", _RELU6)
        mul_opts, mul_type = f.fused("MUL")
        mul2_opts, _ = f.fused("MUL")
        return [f.make_op("ADD", [x, three], [t1], add_opts, add_type),
                f.make_op("MUL", [x, t1], [t2], mul_opts, mul_type),
                f.make_op("MUL", [t2, sixth], [y], mul2_opts, mul_type)]

    return f.replace_each("HARD_SWISH", rewrite)


def _transpose_into_fc(f: FlatModel) -> int:
    done = 0
    for k in reversed(range(len(f.sg.operators))):
        if f.name(k) != "TRANSPOSE":
            continue
        op = f.sg.operators[k]
        x, t = int(op.inputs[0]), int(op.outputs[0])
        perm = f.const(int(op.inputs[1])) if len(op.inputs) > 1 else None
        perm = f.int_const(int(op.inputs[1])) if perm is None else perm.astype(np.int64)
        nxt = f.only_reader(t)
        if perm is None or nxt is None or int(perm[0]) != 0:
            continue
        reshape = nxt if f.name(nxt) == "RESHAPE" else None
        fc = f.only_reader(int(f.sg.operators[nxt].outputs[0])) if reshape is not None else nxt
        if fc is None or f.name(fc) != "FULLY_CONNECTED":
            continue
        w = f.weight(int(f.sg.operators[fc].inputs[1]))
        shape = [int(d) for d in f.sg.tensors[x].shape]
        inner = int(np.prod(shape[1:]))
        if w is None or w.ndim != 2 or w.shape[1] != inner:
            continue
        idx = np.arange(inner).reshape(shape[1:]).transpose([int(p) - 1 for p in perm[1:]]).ravel()
        folded = np.empty_like(w)
        folded[:, idx] = w  # column k of W read transposed element k, which is element idx[k] of x
        f.set_weight(int(f.sg.operators[fc].inputs[1]), folded)
        reader = reshape if reshape is not None else fc  # an FC reading x itself flattens it in x's order
        ins = list(f.sg.operators[reader].inputs)
        ins[0] = x
        f.sg.operators[reader].inputs = np.array(ins, np.int32)
        del f.sg.operators[k]
        f.reindex()
        done += 1
    return done


def _non_negative(f: FlatModel, tensor: int) -> bool:
    k = f.producer.get(tensor)
    if k is None:
        return False
    if f.name(k) in ("RELU", "RELU6", "RELU_0_TO_1"):
        return True
    act = getattr(f.sg.operators[k].builtinOptions, "fusedActivationFunction", None)
    return act in (_RELU, _RELU6)


def _padv2_to_pad(f: FlatModel) -> int:
    done = 0
    for k in range(len(f.sg.operators)):
        if f.name(k) != "PADV2":
            continue
        op = f.sg.operators[k]
        value = f.const(int(op.inputs[2])) if len(op.inputs) > 2 else None
        if value is None or value.size != 1 or float(value.reshape(-1)[0]) > _NEGATIVE:
            continue
        if not _non_negative(f, int(op.inputs[0])):
            continue
        pad_opts = f.schema.PadOptionsT()
        f.sg.operators[k] = f.make_op("PAD", [int(op.inputs[0]), int(op.inputs[1])], [int(op.outputs[0])], pad_opts,
                                      f.schema.BuiltinOptions.PadOptions)
        done += 1
    f.reindex()
    return done


def _same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    """TensorFlow's SAME padding of one spatial dim: (before, after)."""
    total = max((-(-size // s) - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def _padv2_into_same_pool(f: FlatModel) -> int:
    """PADV2(-inf) whose only reader is a VALID MAX_POOL_2D, padding as SAME would: the pool reads the PADV2's input
    with SAME padding, which leaves padded cells out of the maximum. Why: PyTorch's MaxPool2d(ceil_mode=True)
    (MTCNN, after a PReLU that can be negative) reaches TFLite as this pair, and the -FLT_MAX constant puts an
    infinity into the int8 range that PADV2 shares with its input (step 1.3e36). Exact in float and in int8."""
    done = 0
    for k in reversed(range(len(f.sg.operators))):
        if f.name(k) != "PADV2":
            continue
        op = f.sg.operators[k]
        value = f.const(int(op.inputs[2])) if len(op.inputs) > 2 else None
        pads = f.int_const(int(op.inputs[1]))
        pool = f.only_reader(int(op.outputs[0]))
        if value is None or value.size != 1 or float(value.reshape(-1)[0]) > _NEGATIVE or pads is None \
                or pads.size != 8 or pool is None or f.name(pool) != "MAX_POOL_2D":
            continue
        opts = f.sg.operators[pool].builtinOptions
        shape = [int(d) for d in f.sg.tensors[int(op.inputs[0])].shape]
        if len(shape) != 4 or opts.padding != f.schema.Padding.VALID:
            continue
        pads = pads.reshape(4, 2)
        same = [_same_pads(shape[1], opts.filterHeight, opts.strideH),
                _same_pads(shape[2], opts.filterWidth, opts.strideW)]
        if pads[0].any() or pads[3].any() or [tuple(int(v) for v in p) for p in pads[1:3]] != same:
            continue
        opts.padding = f.schema.Padding.SAME
        ins = list(f.sg.operators[pool].inputs)
        ins[0] = int(op.inputs[0])
        f.sg.operators[pool].inputs = np.array(ins, np.int32)
        del f.sg.operators[k]
        f.reindex()
        done += 1
    return done


def _base_name(f: FlatModel, tensor: int) -> str:
    return f.tensor_name(tensor)


def _fc_to_conv(f: FlatModel) -> int:
    done = k = 0
    while k < len(f.sg.operators):
        op = f.sg.operators[k]
        ops = _as_conv(f, op) if f.name(k) == "FULLY_CONNECTED" else None
        if ops is None:
            k += 1
            continue
        f.sg.operators[k:k + 1] = ops
        k += len(ops)
        done += 1
    f.reindex()
    return done


def _as_conv(f: FlatModel, op: Any) -> list[object] | None:
    """FULLY_CONNECTED OP on a [1, H, W, C] or [1, N, C] tensor as a 1x1 CONV_2D (between two RESHAPEs for 3-D),
    or None where it is not one (2-D, a batch, another weights format, weights shared)."""
    x, y = int(op.inputs[0]), int(op.outputs[0])
    xs, ys = f.sg.tensors[x].shape, f.sg.tensors[y].shape
    opts = op.builtinOptions
    if xs is None or ys is None or len(xs) not in (3, 4) or len(ys) != len(xs) or int(xs[0]) != 1:
        return None
    if int(getattr(opts, "weightsFormat", 0) or 0):
        return None
    w = f.weight(int(op.inputs[1]))
    if w is None or w.ndim != 2 or w.shape[1] != int(xs[-1]) or w.shape[0] != int(ys[-1]):
        return None
    base = _base_name(f, y)
    wt = f.sg.tensors[int(op.inputs[1])]
    wt.shape = np.array([w.shape[0], 1, 1, w.shape[1]], np.int32)  # the same bytes, read as a 1x1 filter
    wt.shapeSignature = None
    bias = int(op.inputs[2]) if len(op.inputs) > 2 else -1
    if bias < 0:  # the converter's CONV_2D always has a bias
        bias = f.add_const(f"{base}/conv_bias", np.zeros(w.shape[0], np.float32))
    conv = f.schema.Conv2DOptionsT()
    conv.padding, conv.strideW, conv.strideH = f.schema.Padding.VALID, 1, 1
    conv.dilationWFactor = conv.dilationHFactor = 1
    conv.fusedActivationFunction = int(getattr(opts, "fusedActivationFunction", 0) or 0)
    conv_type = f.schema.BuiltinOptions.Conv2DOptions
    if len(xs) == 4:
        return [f.make_op("CONV_2D", [x, int(op.inputs[1]), bias], [y], conv, conv_type)]
    n = int(xs[1])  # [1, N, C] -> [1, 1, N, C] -> conv -> [1, 1, N, O] -> [1, N, O]
    x4, y4 = f.add_like(f"{base}/as_4d_in", x), f.add_like(f"{base}/as_4d_out", y)
    f.sg.tensors[x4].shape = np.array([1, 1, n, int(xs[2])], np.int32)
    f.sg.tensors[y4].shape = np.array([1, 1, n, int(ys[2])], np.int32)
    f.sg.tensors[x4].shapeSignature = f.sg.tensors[y4].shapeSignature = None
    return [f.reshape_op(x, x4, [1, 1, n, int(xs[2])], base + "/in"),
            f.make_op("CONV_2D", [x4, int(op.inputs[1]), bias], [y4], conv, conv_type),
            f.reshape_op(y4, y, [1, n, int(ys[2])], base + "/out")]


def _relu_0_to_1(f: FlatModel) -> int:
    def rewrite(x: int, y: int, base: str) -> list[object]:
        six = f.add_const(f"{base}/relu01_6", np.array(6.0, np.float32))
        sixth = f.add_const(f"{base}/relu01_1_6", np.array(1.0 / 6.0, np.float32))
        t = f.add_like(f"{base}/relu01_relu6", x)
        relu6_opts, mul_type = f.fused("MUL", _RELU6)
        mul_opts, _ = f.fused("MUL")
        return [f.make_op("MUL", [x, six], [t], relu6_opts, mul_type),  # min(max(6x, 0), 6) / 6
                f.make_op("MUL", [t, sixth], [y], mul_opts, mul_type)]

    return f.replace_each("RELU_0_TO_1", rewrite)


def _neg(f: FlatModel) -> int:
    def rewrite(x: int, y: int, base: str) -> list[object]:
        minus_one = f.add_const(f"{base}/neg_-1", np.array(-1.0, np.float32))
        mul_opts, mul_type = f.fused("MUL")
        return [f.make_op("MUL", [x, minus_one], [y], mul_opts, mul_type)]

    return f.replace_each("NEG", rewrite)


def _square(f: FlatModel) -> int:
    def rewrite(x: int, y: int, base: str) -> list[object]:
        mul_opts, mul_type = f.fused("MUL")
        return [f.make_op("MUL", [x, x], [y], mul_opts, mul_type)]

    return f.replace_each("SQUARE", rewrite)


GELU_SIGMOID_SCALE = 1.702  # x * sigmoid(1.702 x): Hendrycks & Gimpel 2016, section 2


def _gelu(f: FlatModel) -> int:
    def rewrite(x: int, y: int, base: str) -> list[object]:
        scale = f.add_const(f"{base}/gelu_1.702", np.array(GELU_SIGMOID_SCALE, np.float32))
        s, g = f.add_like(f"{base}/gelu_scaled", x), f.add_like(f"{base}/gelu_sigmoid", x)
        mul_opts, mul_type = f.fused("MUL")
        mul2_opts, _ = f.fused("MUL")
        return [f.make_op("MUL", [x, scale], [s], mul_opts, mul_type), f.make_op("LOGISTIC", [s], [g]),
                f.make_op("MUL", [x, g], [y], mul2_opts, mul_type)]

    return f.replace_each("GELU", rewrite)


FIXES: dict[str, Callable[[FlatModel], int]] = {
    "HARD_SWISH -> ADD+RELU6, MUL, MUL": _hard_swish,
    "TRANSPOSE folded into FULLY_CONNECTED": _transpose_into_fc,
    "PADV2(-inf) after ReLU -> PAD": _padv2_to_pad,
    "PADV2(-inf) + MAX_POOL_2D VALID -> MAX_POOL_2D SAME": _padv2_into_same_pool,
    "FULLY_CONNECTED on 3-D/4-D -> CONV_2D 1x1": _fc_to_conv,
    "RELU_0_TO_1 -> MUL+RELU6, MUL": _relu_0_to_1,
    "GELU -> MUL, LOGISTIC, MUL (x sigmoid(1.702 x))": _gelu,
    "NEG -> MUL by -1": _neg,
    "SQUARE -> MUL(x, x)": _square,
    "5-D RESHAPE/TRANSPOSE/SLICE -> SLICE or CONV_2D 1x1 selection, RESHAPE, TRANSPOSE in 4-D": five_d_moves,
    "SQRT -> MUL(x, RSQRT(MAXIMUM(x, 1e-30)))": sqrt_as_rsqrt,
    "DIV by a non-negative tensor -> MUL by RSQRT(b)^2": div_as_rsqrt,
    "PADV2 with a finite value on one axis -> PAD, ADD": padv2_value,
    "SOFTMAX of 2-16 rows -> SPLIT, 1-D SOFTMAX per row, CONCATENATION": softmax_by_rows,
    "MEAN over a whole sample -> MEAN of a [1, 1, E/c, c] view, c a multiple of 4": whole_mean,
}


def apply_fixes(blob: bytes, only: tuple[str, ...] | None = None) -> tuple[bytes, FixReport]:
    """BLOB (a float .tflite) with every fix applied (ONLY: those FIXES keys), and what each one changed."""
    f = FlatModel(blob)
    report = FixReport()
    for name, fix in FIXES.items():
        if only is not None and name not in only:
            continue
        n = fix(f)
        if n:
            report.applied[name] = n
    return (f.to_bytes() if report.applied else blob), report


__all__ = ["FIXES", "FixReport", "apply_fixes"]
