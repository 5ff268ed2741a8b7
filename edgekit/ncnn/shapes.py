"""Blob shapes of an ncnn model from its .param alone, and the MACs of its multiply-accumulate layers.

The .param gives shapes only where a layer states them: each Input layer (the ncnn target writes 0=w 1=h 2=c)
and a layer's own output sizes (InnerProduct's num_output, Interp's output size). From there the shapes are
carried through the layers whose output size follows from their parameters (convolutions, pooling, padding,
element-wise layers, Flatten, Reshape, Concat, Interp); a layer of another type leaves its outputs unknown,
and so do the layers after it. Shapes are [1, c, h, w] (a leading batch of 1, outermost first), as the ncnn
runtime reports them. MACs follow edgekit.core.macs' convention: Convolution, ConvolutionDepthWise, Deconvolution
(weight count x output pixels, which counts groups right) and InnerProduct (its weight count); 0 where a needed
shape is unknown, and those layers are listed.
"""

from __future__ import annotations

import math

from edgekit.ncnn.param import Layer, Param

Shape = list[int]
MAC_LAYERS = ("Convolution", "ConvolutionDepthWise", "Deconvolution", "DeconvolutionDepthWise", "InnerProduct")
SAME_SHAPE = frozenset((
    "ReLU", "Clip", "Sigmoid", "Swish", "HardSwish", "HardSigmoid", "BatchNorm", "Scale", "Dropout", "TanH", "ELU",
    "GELU", "Mish", "Softmax", "Noop", "UnaryOp", "PReLU", "Split", "Exp", "Log", "Power", "AbsVal", "Erf", "SELU",
    "LayerNorm", "GroupNorm", "InstanceNorm", "Normalize", "Threshold",
))
_SAME = (-233, -234)  # ncnn's SAME_UPPER / SAME_LOWER padding marks


def _conv_out(size: int, k: int, d: int, s: int, pad_a: int, pad_b: int) -> int:
    if pad_a in _SAME:
        return -(-size // max(s, 1))
    return (size + pad_a + pad_b - (d * (k - 1) + 1)) // max(s, 1) + 1


def _conv(layer: Layer, x: Shape) -> Shape | None:
    if len(x) != 4:
        return None
    p = layer.int_param
    kw, dw, sw, pl = p(1), p(2, 1), p(3, 1), p(4)
    kh, dh, sh, pt = p(11, kw), p(12, dw), p(13, sw), p(14, pl)
    oh = _conv_out(x[2], kh, dh, sh, pt, p(16, pt))
    ow = _conv_out(x[3], kw, dw, sw, pl, p(15, pl))
    return [1, p(0), oh, ow] if oh > 0 and ow > 0 else None


def _deconv(layer: Layer, x: Shape) -> Shape | None:
    if len(x) != 4:
        return None
    p = layer.int_param
    if p(20) > 0 and p(21) > 0:
        return [1, p(0), p(21), p(20)]
    kw, dw, sw, pl = p(1), p(2, 1), p(3, 1), p(4)
    kh, dh, sh, pt = p(11, kw), p(12, dw), p(13, sw), p(14, pl)
    oh = (x[2] - 1) * sh + dh * (kh - 1) + 1 - pt - p(16, pt) + p(19)
    ow = (x[3] - 1) * sw + dw * (kw - 1) + 1 - pl - p(15, pl) + p(18)
    return [1, p(0), oh, ow] if oh > 0 and ow > 0 else None


def _pool_out(size: int, k: int, s: int, pad_a: int, pad_b: int, mode: int) -> int:
    if mode in (2, 3):
        return -(-size // max(s, 1))
    span = size + pad_a + pad_b - k
    return (-(-span // max(s, 1)) if mode == 0 else span // max(s, 1)) + 1


def _pool(layer: Layer, x: Shape) -> Shape | None:
    p = layer.int_param
    if p(4):  # global pooling
        return [1, x[1]] if len(x) >= 2 else None
    if len(x) != 4:
        return None
    if p(7):  # adaptive pooling to out_w / out_h
        return [1, x[1], p(18, p(8)), p(8)]
    kw, sw, pl = p(1), p(2, 1), p(3)
    kh, sh, pt = p(11, kw), p(12, sw), p(13, pl)
    mode = p(5)
    return [1, x[1], _pool_out(x[2], kh, sh, pt, p(15, pt), mode), _pool_out(x[3], kw, sw, pl, p(14, pl), mode)]


def _reshape(layer: Layer, x: Shape) -> Shape | None:
    p = layer.int_param
    dims = [p(2, -233), p(11, -233), p(1, -233), p(0, -233)]  # c, d, h, w; -233: absent
    dims = [d for d in dims if d != -233]
    total = math.prod(x[1:])
    if not dims or any(d == 0 or d < -1 for d in dims) or dims.count(-1) > 1:
        return None
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        if known <= 0 or total % known:
            return None
        dims = [total // known if d == -1 else d for d in dims]
    return [1, *dims] if math.prod(dims) == total else None


def _concat(layer: Layer, xs: list[Shape]) -> Shape | None:
    rank = len(xs[0])
    if any(len(x) != rank for x in xs):
        return None
    axis = layer.int_param(0)
    axis = axis + rank - 1 if axis < 0 else axis
    if not 0 <= axis < rank - 1:
        return None
    out = list(xs[0])
    out[axis + 1] = sum(x[axis + 1] for x in xs)
    return out


def _interp(layer: Layer, x: Shape) -> Shape | None:
    if len(x) != 4:
        return None
    p, f = layer.int_param, layer.float_param
    if p(3) > 0 and p(4) > 0:
        return [1, x[1], p(3), p(4)]
    hs, ws = f(1, 1.0), f(2, 1.0)
    return [1, x[1], int(x[2] * hs), int(x[3] * ws)]


def _padding(layer: Layer, x: Shape) -> Shape | None:
    p = layer.int_param
    if len(x) != 4 or p(7) or p(8):  # front/behind (channel) padding is not followed
        return None
    return [1, x[1], x[2] + p(0) + p(1), x[3] + p(2) + p(3)]


def _size(shape: Shape) -> tuple[int, int]:
    return len(shape), math.prod(shape)


def out_shapes(layer: Layer, xs: list[Shape | None]) -> list[Shape | None]:
    """The shapes of LAYER's tops from its bottoms' XS (None: unknown)."""
    n = len(layer.tops)
    t = layer.type
    if t == "InnerProduct":
        return [[1, layer.int_param(0)]]
    if not xs or any(x is None for x in xs):
        return [None] * n
    known: list[Shape] = [x for x in xs if x is not None]
    x = known[0]
    out: Shape | None = None
    if t in SAME_SHAPE:
        return [list(x) for _ in range(n)]
    if t in ("BinaryOp", "Eltwise"):
        out = list(known[max(range(len(known)), key=lambda i: _size(known[i]))])  # the broadcast's shape
    elif t in ("Convolution", "ConvolutionDepthWise"):
        out = _conv(layer, x)
    elif t in ("Deconvolution", "DeconvolutionDepthWise"):
        out = _deconv(layer, x)
    elif t == "Pooling":
        out = _pool(layer, x)
    elif t == "Flatten":
        out = [1, math.prod(x[1:])]
    elif t == "Reshape":
        out = _reshape(layer, x)
    elif t == "Concat":
        out = _concat(layer, known)
    elif t == "Interp":
        out = _interp(layer, x)
    elif t == "Padding":
        out = _padding(layer, x)
    return [out] + [None] * (n - 1)


def layer_macs(layer: Layer, xs: list[Shape | None], outs: list[Shape | None]) -> int | None:
    """LAYER's multiply-accumulates for one sample; 0 for a layer that is not counted, None where a shape it
    needs is unknown."""
    if layer.type == "InnerProduct":
        return layer.int_param(2)
    if layer.type in ("Convolution", "ConvolutionDepthWise"):
        y = outs[0] if outs else None
        return layer.int_param(6) * y[2] * y[3] if y and len(y) == 4 else None
    if layer.type in ("Deconvolution", "DeconvolutionDepthWise"):
        x = xs[0] if xs else None
        return layer.int_param(6) * x[2] * x[3] if x and len(x) == 4 else None
    return 0


def propagate(param: Param) -> dict[str, Shape | None]:
    """Every blob's shape, as far as the module docstring says they can be followed."""
    shapes: dict[str, Shape | None] = {}
    for layer in param.layers:
        if layer.type == "Input":
            for top in layer.tops:
                shapes[top] = param.input_shape(layer)
            continue
        xs = [shapes.get(b) for b in layer.bottoms]
        for top, shape in zip(layer.tops, out_shapes(layer, xs), strict=True):
            shapes[top] = shape
    return shapes


__all__ = ["MAC_LAYERS", "layer_macs", "out_shapes", "propagate"]
