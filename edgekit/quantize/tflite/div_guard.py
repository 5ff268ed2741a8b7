"""Int8 DIVs whose divisor int8 would round to zero: found in the calibrated float model, kept in float.

LiteRT's int8 DIV refuses a divisor equal to its zero point (tflite/kernels/div.cc: `data[i] != zero_point`,
checked on every element at run time), and any divisor closer to zero than half its int8 step rounds to that
zero point. EfficientViT's ReLU linear attention normalizes by `q . sum(k) + 1e-5` (timm's LiteMLA:
`out[..., :-1] / (out[..., -1:] + eps)`), which is 1e-5 wherever q's ReLU is zero, in a range reaching hundreds:
its int8 TFLite and Edge TPU artifacts were written and then failed to run at all (issue 41). The calibration
ranges show it before quantizing: the divisor's recorded minimum is near zero in the steps its range gives. Not only
under half a step: on timm's EfficientViT-B0 (random weights, 56 photos) the first attention's divisor reached
0.0037 in calibration, right at half its step 0.0074, and held-out photos went below it (the run failed at
validation); its other three divisors came within 0.2 to 0.5 steps. A divisor within NEAR_STEPS steps of zero is
also rounded by up to 1/16 of its value there, so float is the better form for it either way.

Such a DIV goes on the quantizer's denylist: it runs in float between a DEQUANTIZE and a QUANTIZE, exact, and
every other op stays int8. Coral's op table has no DIV, so the Edge TPU artifact loses no mapped op by it. A
rewrite was not taken: 1/d as RSQRT(d)^2 (edgekit.edgetpu.fixes_norm) puts the 1/sqrt(1e-5) = 316 of the same
tiny divisors into RSQRT's int8 range, which then rounds a typical divisor's inverse to a level or two.
"""

from __future__ import annotations

from dataclasses import dataclass

NEAR_STEPS = 8  # a calibrated divisor minimum within this many int8 steps of zero: held-out inputs reach zero


@dataclass(frozen=True)
class ZeroDivisor:
    op: str  # the DIV's name (its output tensor's), as the quantizer's denylist names ops
    divisor: str  # the divisor tensor's name
    nearest: float  # the calibrated divisor value nearest zero (0 where the range crosses zero)
    step: float  # the int8 step its calibrated range gives


def zero_divisors(cal: bytes) -> list[ZeroDivisor]:
    """The DIVs of the calibrated float model CAL (ranges written as min/max) whose divisor int8 rounds to zero, or
    would on inputs a little past the calibration set's (within NEAR_STEPS steps of zero)."""
    from edgekit.tflite.flatbuffer import FlatModel

    f = FlatModel(cal)
    found = []
    for k, op in enumerate(f.sg.operators):
        if f.name(k) != "DIV" or len(op.inputs) < 2:
            continue
        t = int(op.inputs[1])
        q = f.sg.tensors[t].quantization
        if f.const(t) is not None or q is None or q.min is None or q.max is None or len(q.min) != 1:
            continue
        lo, hi = float(q.min[0]), float(q.max[0])
        step = (max(hi, 0.0) - min(lo, 0.0)) / 255.0
        nearest = 0.0 if lo <= 0.0 <= hi else min(abs(lo), abs(hi))
        if step > 0 and nearest < NEAR_STEPS * step:
            found.append(ZeroDivisor(f.tensor_name(int(op.outputs[0])), f.tensor_name(t), nearest, step))
    return found


def words(found: list[ZeroDivisor]) -> str:
    first = found[0]
    return (f"{len(found)} DIV(s) kept in float: the first one's divisor '{first.divisor}' (of '{first.op}') reaches "
            f"{first.nearest:.2g} on the calibration data, within {NEAR_STEPS} int8 steps ({first.step:.2g}) of "
            "zero, where inputs past the calibration set round it to its zero point (LiteRT's int8 DIV refuses that "
            "divisor at run time)")


__all__ = ["ZeroDivisor", "words", "zero_divisors"]
