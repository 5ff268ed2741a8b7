"""The int8 ops XNNPACK leaves to LiteRT's builtin kernels, rewritten before calibration for a CPU target.

LiteRT runs a .tflite through its XNNPACK delegate by default, on x86 and on a Raspberry Pi's Arm cores alike; the
delegate takes PRELU, HARD_SWISH and AVERAGE_POOL_2D in float only, so an int8 model holding them runs in pieces,
those ops on LiteRT's builtin kernels between XNNPACK's partitions. Measured on MediaPipe's float graphs
(ai-edge-litert 2.3.0, x86, 1 thread; docs/results/mediapipe.md): the int8 palm detector (31 PReLUs) took 23.1 ms
against 7.5 ms for its float file, the face mesh (23) 6.5 ms against 1.1 ms.

- PRELU(x, a) -> x + (1 - a) * relu(-x): a MUL by -1 with a fused RELU, a 1x1 depthwise convolution by 1 - a (a
  MUL where the slopes are not one per channel), an ADD; exact in float for any slope (max(x, a x) would need
  0 <= a <= 1; MediaPipe's slopes run from -4.6 to 12.2). Palm detector: 23.1 -> 8.5 ms, face mesh 6.5 -> 1.9 ms,
  each in one XNNPACK partition.

Not rewritten here: HARD_SWISH as x * relu6(x + 3) / 6 (the Edge TPU's rewrite, edgekit.edgetpu.fixes) saved the
selfie segmenter 2.1 of its 13.3 ms, but its int8 mask agreed with the float one on 89.9% of the pixels of the
zoo's bundled photos against 96.6% unrewritten; a global AVERAGE_POOL_2D as MEAN saved 0.3 ms.

In int8 each new tensor gets its own scale, so the int8 model is not the one the converter would write; validation
judges it against the source, as every artifact. The Edge TPU target has its own rewrites (edgekit.edgetpu.fixes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgekit.tflite.flatbuffer import FlatModel

_RELU = 1
PRELU_WORDS = "PRELU -> MUL(-1)+RELU, 1x1 DEPTHWISE_CONV_2D(1 - a), ADD"


def prelu_rewrite(f: FlatModel) -> int:
    """Every PRELU of F whose slopes are a finite float constant rewritten as x + (1 - a) relu(-x); how many were."""
    done = k = 0
    while k < len(f.sg.operators):
        op = f.sg.operators[k]
        if f.name(k) != "PRELU" or len(op.inputs) < 2:
            k += 1
            continue
        x, alpha, y = int(op.inputs[0]), int(op.inputs[1]), int(op.outputs[0])
        a = f.const(alpha)
        if a is None or not np.isfinite(a).all():
            k += 1
            continue
        base = f.tensor_name(y)
        minus = f.add_const(f"{base}/prelu_minus_1", np.array(-1.0, np.float32))
        neg, scaled = f.add_like(f"{base}/prelu_relu_neg", x), f.add_like(f"{base}/prelu_scaled", x)
        relu_opts, mul_type = f.fused("MUL", _RELU)
        add_opts, add_type = f.fused("ADD")
        ops: list[Any] = [f.make_op("MUL", [x, minus], [neg], relu_opts, mul_type),
                          _times_slopes(f, neg, scaled, 1.0 - a, base),
                          f.make_op("ADD", [x, scaled], [y], add_opts, add_type)]
        f.sg.operators[k:k + 1] = ops
        k += len(ops)
        done += 1
    f.reindex()
    return done


def _times_slopes(f: FlatModel, x: int, y: int, k: np.ndarray, base: str) -> Any:
    """Y = X times K: a 1x1 DEPTHWISE_CONV_2D where K is one value per channel of a 4-D X (its int8 weights are per
    channel, so each slope keeps its own scale; as a MUL's constant one int8 scale covered slopes of -11.2 to 5.6,
    a step of 0.09), else a MUL."""
    shape = [int(d) for d in f.sg.tensors[x].shape]
    c = shape[-1] if len(shape) == 4 else 0
    if c and k.size in (1, c) and (k.ndim == 0 or k.shape[-1] == k.size):
        w = f.add_const(f"{base}/prelu_slopes", np.broadcast_to(k.reshape(-1), (c,)).reshape(1, 1, 1, c))
        b = f.add_const(f"{base}/prelu_slopes_bias", np.zeros(c, np.float32))
        opts = f.schema.DepthwiseConv2DOptionsT()
        opts.padding, opts.strideW, opts.strideH, opts.depthMultiplier = f.schema.Padding.VALID, 1, 1, 1
        opts.dilationWFactor = opts.dilationHFactor = 1
        return f.make_op("DEPTHWISE_CONV_2D", [x, w, b], [y], opts, f.schema.BuiltinOptions.DepthwiseConv2DOptions)
    mul_opts, mul_type = f.fused("MUL")
    return f.make_op("MUL", [x, f.add_const(f"{base}/prelu_1_minus_a", k.astype(np.float32))], [y], mul_opts, mul_type)


def xnnpack_rewrites(blob: bytes) -> tuple[bytes, dict[str, int]]:
    """BLOB (a float .tflite) with the ops XNNPACK leaves out in int8 rewritten; what changed (rewrite -> count)."""
    f = FlatModel(blob)
    n = prelu_rewrite(f)
    return (f.to_bytes(), {PRELU_WORDS: n}) if n else (blob, {})


__all__ = ["PRELU_WORDS", "prelu_rewrite", "xnnpack_rewrites"]
