"""Edge TPU graph fixes for norms built from SQRT and DIV, neither in Coral's op table; RSQRT, MUL and MAXIMUM are.

ConvNeXt-V2's global response norm (GRN: `g = sqrt(sum_hw x^2)`, `x * g / (mean_c(g) + 1e-6)`) reaches TFLite as
SUM, SQRT, MEAN, ADD, DIV: Edge TPU mapping stopped at its SQRT (33 of 378 ops on a ConvNeXt-V2 atto), and the DIV
after it would stop it next.

- SQRT(s) becomes s * RSQRT(MAXIMUM(s, 1e-30)): sqrt(s) = s / sqrt(s) for s > 0, and 0 at s = 0 (where RSQRT alone
  would give 0 * inf); exact in float to rounding (for 0 < s < 1e-30 it gives s * 1e15 instead of sqrt(s), both
  below 1e-15).
- DIV(a, b) where b cannot be negative (written by SQRT, RSQRT, a ReLU, MUL(x, x), a sum or mean of such, or an ADD of
  such and a positive constant: GRN's `mean(g) + 1e-6`) becomes a * RSQRT(b) * RSQRT(b): 1/b = rsqrt(b)^2, and IEEE's
  a/0 = a * inf. The divisor of a norm is one value per sample, so its int8 range is narrow.
Both change what int8 rounds (a product gets its own scale); validation measures what that costs, as for every fix.
"""

from __future__ import annotations

import numpy as np

from edgekit.tflite.flatbuffer import FlatModel

TINY = 1e-30  # the floor SQRT's rewrite puts under RSQRT's input (a float32 normal number)
_RELU, _RELU6 = 1, 3
_NON_NEGATIVE_OPS = ("RELU", "RELU6", "RELU_0_TO_1", "SQRT", "RSQRT", "LOGISTIC", "EXP", "ABS", "SQUARE")


def non_negative(f: FlatModel, t: int, depth: int = 8) -> bool:
    """Whether tensor T cannot be negative, from the ops that write it (DEPTH levels up)."""
    c = f.const(t)
    if c is not None:
        return bool(np.all(c >= 0))
    k = f.producer.get(t)
    if k is None or depth <= 0:
        return False
    name, op = f.name(k), f.sg.operators[k]
    if name in _NON_NEGATIVE_OPS or getattr(op.builtinOptions, "fusedActivationFunction", None) in (_RELU, _RELU6):
        return True
    ins = [int(i) for i in op.inputs]
    if name == "MUL" and len(ins) == 2 and ins[0] == ins[1]:
        return True
    if name in ("MUL", "ADD", "MAXIMUM") and len(ins) == 2:
        return all(non_negative(f, i, depth - 1) for i in ins)
    if name in ("MEAN", "SUM", "REDUCE_MAX", "RESHAPE", "TRANSPOSE", "SQUEEZE", "EXPAND_DIMS"):
        return non_negative(f, ins[0], depth - 1)
    return False


def _rsqrt(f: FlatModel, x: int, out: int) -> object:
    return f.make_op("RSQRT", [x], [out])


def sqrt_as_rsqrt(f: FlatModel) -> int:
    def rewrite(x: int, y: int, base: str) -> list[object]:
        floor = f.add_const(f"{base}/sqrt_floor", np.array(TINY, np.float32))
        held, r = f.add_like(f"{base}/sqrt_held", x), f.add_like(f"{base}/sqrt_rsqrt", x)
        max_opts = f.schema.MaximumMinimumOptionsT()
        mul_opts, mul_type = f.fused("MUL")
        return [f.make_op("MAXIMUM", [x, floor], [held], max_opts, f.schema.BuiltinOptions.MaximumMinimumOptions),
                _rsqrt(f, held, r), f.make_op("MUL", [x, r], [y], mul_opts, mul_type)]

    return f.replace_each("SQRT", rewrite)


def div_as_rsqrt(f: FlatModel) -> int:
    done = k = 0
    while k < len(f.sg.operators):
        op = f.sg.operators[k]
        if f.name(k) != "DIV" or not non_negative(f, int(op.inputs[1])):
            k += 1
            continue
        a, b, y = int(op.inputs[0]), int(op.inputs[1]), int(op.outputs[0])
        base = f.tensor_name(y)
        r, r2 = f.add_like(f"{base}/div_rsqrt", b), f.add_like(f"{base}/div_inverse", b)
        act = int(getattr(op.builtinOptions, "fusedActivationFunction", 0) or 0)
        sq_opts, mul_type = f.fused("MUL")
        out_opts, _ = f.fused("MUL", act)
        ops = [_rsqrt(f, b, r), f.make_op("MUL", [r, r], [r2], sq_opts, mul_type),
               f.make_op("MUL", [a, r2], [y], out_opts, mul_type)]
        f.sg.operators[k:k + 1] = ops
        f.reindex()  # the next divisor's producers are looked up by op index
        k += len(ops)
        done += 1
    return done


__all__ = ["TINY", "div_as_rsqrt", "non_negative", "sqrt_as_rsqrt"]
