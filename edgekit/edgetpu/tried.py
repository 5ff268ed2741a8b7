"""What edgekit's Edge TPU graph fixes try at an op where mapping stops, and why they did not make it map.

The pre-flight reads the int8 model, after the fixes ran on the float one (edgekit.edgetpu.fixes); an op that still
stops mapping is one no fix took. `tried(op, model)` says which fix is made for that kind of op and which of its
conditions this op fails, read from the file, so a user is told "no Edge TPU op multiplies two computed tensors"
rather than only "BATCH_MATMUL is not in Coral's table". None where edgekit has no fix for the op at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgekit.edgetpu.fixes_attention import MAX_ROWS, MAX_SOFTMAX, softmax_rows

if TYPE_CHECKING:  # pragma: no cover
    from edgekit.tflite.model import TfliteModel, TOp

_FIXES = "edgekit's Edge TPU graph fixes (on with --target edgetpu unless --no-edgetpu-fixes)"
_REWRITTEN = {  # ops a fix always rewrites: seen here, the model was made without the fixes
    "HARD_SWISH": "ADD with a fused ReLU6 and two MULs (exact)",
    "GELU": "x * sigmoid(1.702 x): MUL, LOGISTIC, MUL (within 0.0203 of GELU)",
    "RELU_0_TO_1": "MUL by 6 with a fused ReLU6, MUL by 1/6 (exact)",
    "NEG": "MUL by -1 (exact)",
    "SQUARE": "MUL(x, x) (exact)",
    "SQRT": "x * RSQRT(MAXIMUM(x, 1e-30)) (exact to rounding)",
}


def _producer(model: TfliteModel, tensor: int) -> TOp | None:
    return next((op for op in model.ops if tensor in op.outputs), None)


def tried(op: TOp, model: TfliteModel, code: str) -> str | None:
    """What the fixes do for an op like OP (stopping mapping with reason CODE) and why this one is left as it is."""
    name = op.op
    if name in _REWRITTEN:
        return (f"{_FIXES} rewrite every {name} as {_REWRITTEN[name]}; this model was made without them: convert "
                "it with --target edgetpu")
    consts = [t.const for t in (model.tensor(i) for i in op.inputs[:2]) if t is not None]
    if name == "BATCH_MATMUL":
        if any(consts):
            return ("tried: none fits. A product with a constant operand shared by the batch is written by the "
                    "TFLite converter as FULLY_CONNECTED, which maps (as a 1x1 CONV_2D on a 3-D or 4-D tensor); a "
                    "BATCH_MATMUL with a constant operand is left only where the constant differs per batch entry "
                    "(per-head weights) or comes first, which edgekit does not split into one product per entry")
        return ("tried: none fits. Both operands are computed tensors (an attention's q @ k or attn @ v): the Edge TPU "
                "multiplies by constant weights only (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED), and a MUL "
                "broadcast and SUM would round every [M, N, K] product to int8 before the sum, so it stays on the "
                "CPU and the ops after it with it; a backbone with convolution-only blocks maps whole")
    if name == "SOFTMAX" and code == "limitation":
        x = model.tensor(op.inputs[0])
        shape = list(x.static_shape) if x is not None else []
        rows = softmax_rows(shape)
        return (f"tried: {_FIXES} split a softmax of at most {MAX_ROWS} rows of at most {MAX_SOFTMAX} elements into "
                f"1-D ones (exact); this one has {rows} rows of {shape[-1] if shape else '?'}, "
                f"{rows} SOFTMAX ops, more than the Edge TPU part would gain")
    if name == "DIV":
        x = model.tensor(op.inputs[0])
        if x is not None and x.dtype.startswith("float"):
            return ("tried: left in float on purpose: its divisor came within 8 int8 steps of zero on the calibration "
                    "data, where an int8 DIV fails at run time (edgekit.quantize.tflite.div_guard); Coral's table has "
                    "no DIV")
        src = _producer(model, op.inputs[1]) if len(op.inputs) > 1 else None
        return (f"tried: {_FIXES} rewrite a DIV by a divisor that cannot be negative as MUL by RSQRT(b)^2 (exact); "
                f"this divisor{f' (written by op {src.index} {src.op})' if src else ''} may be negative")
    if name == "PADV2":
        return (f"tried: {_FIXES} rewrite a PADV2 with -inf after a ReLU or before a SAME MaxPool, and one with a "
                "finite value padding one axis, as PAD (and ADD); this one pads another way")
    if code == "rank" and name in ("RESHAPE", "TRANSPOSE", "SLICE", "STRIDED_SLICE", "SPLIT"):
        return (f"tried: {_FIXES} rewrite 5-D and 6-D data movement in 4-D where it is a channel pick, reshape and "
                "transpose, after a SPACE_TO_DEPTH or before a 2 x 2 depth-to-space (TRANSPOSE_CONV); this one is "
                "none of these")
    if name == "FULLY_CONNECTED" and code == "limitation":
        return (f"tried: {_FIXES} write a FULLY_CONNECTED on a [1, H, W, C] or [1, N, C] tensor as a 1x1 CONV_2D; "
                "this one has another shape or weights format")
    return None


__all__ = ["tried"]
