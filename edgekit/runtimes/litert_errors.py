"""What LiteRT's load failures mean, in words that name the cause, and the hint that fits each cause.

LiteRT reports every failure as one RuntimeError whose text runs its messages together ("... in
XNNPACK delegateunsupported datatype ... tensor 0Node number 1 (TfLiteXNNPackDelegate) failed to
prepare."). The causes users meet, and what fits each:
- an unresolved custom op: the file is fine; the op needs the runtime that ships it (or a
  custom-op resolver), never "re-run convert" (MediaPipe's three that XNNPACK runs are said to be so, and
  that `edgekit convert` rewrites them);
- XNNPACK refusing an int8 model ("failed to prepare"): XNNPACK's limits (scales, types), named with
  the tensor and the op it feeds, read from the file; LiteRT's builtin kernels are the fallback;
- a malformed file (bad identifier, truncated flatbuffer): then, and only then, the file is to blame;
- an int8 DIV that met a divisor at its zero point (`div.cc ... data[i] != zero_point`): the DIV and the ops that
  write its divisor, read from the file; a norm layer is named only where the divisor is one's (a square root of a
  mean or sum of squares), since EfficientViT's attention normalizer fails the same way with no norm in sight.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from edgekit.tflite.model import TfliteModel, TOp

_CUSTOM = re.compile(r"unresolved custom op:\s*([^\s.]+)", re.IGNORECASE)
_XNNPACK = re.compile(r"XNNPACK", re.IGNORECASE)
_TENSOR = re.compile(r"tensor #?(\d+)")
_MALFORMED = re.compile(r"identifier|flatbuffer|could not open|mmap|truncated|not a valid|verif", re.IGNORECASE)

HINT_MALFORMED = "Check that the file is a complete .tflite model (copied in full, written by a TFLite converter)."
HINT_XNNPACK = (
    "XNNPACK cannot run this model as quantized (named above), and LiteRT's builtin kernels are the fallback "
    "(`--option kernels=builtin`). Where they abort too, the int8 parameters are out of range for any LiteRT "
    "kernel: re-quantize from the original model (other --calib data or --int8-recipe), or use its ONNX instead."
)
HINT_OTHER = "`edgekit inspect` shows the model's ops and quantization; EDGEKIT_DEBUG=1 shows LiteRT's full message."


def custom_ops(text: str) -> list[str]:
    """The custom ops LiteRT says it could not resolve, in order."""
    return list(dict.fromkeys(_CUSTOM.findall(text)))


def custom_op_hint(ops: list[str]) -> str:
    """What runs a model with these custom ops (never "re-convert": the file is fine).

    MediaPipe's three (Convolution2DTransposeBias, MaxPoolingWithArgmax2D, MaxUnpooling2D) are run by LiteRT's
    XNNPACK delegate, though not by its builtin kernels, and `edgekit convert` rewrites them into builtins
    (edgekit.tflite.custom_ops); any other custom op needs the runtime that ships it.
    """
    from edgekit.core.sniff import EDGETPU_CUSTOM_OP
    from edgekit.tflite.custom_ops import MEDIAPIPE_OPS

    if EDGETPU_CUSTOM_OP in ops:
        return ("It is compiled for the Edge TPU: run it with `--device edgetpu` on a Coral host with libedgetpu, or "
                "use the uncompiled int8 .tflite on the CPU.")
    mediapipe = [op for op in ops if op in MEDIAPIPE_OPS]
    others = [op for op in ops if op not in MEDIAPIPE_OPS]
    words = []
    if mediapipe:
        words.append(f"MediaPipe's {', '.join(mediapipe)}: LiteRT runs {'it' if len(mediapipe) == 1 else 'them'} "
                     "with XNNPACK (not with its builtin kernels), and `edgekit convert` rewrites "
                     f"{'it' if len(mediapipe) == 1 else 'them'} into exact builtin ops, so the model converts and "
                     "quantizes like any float .tflite.")
    if others:
        words.append(("Custom ops are not part of LiteRT: run the model with the runtime that ships them (e.g. "
                      "MediaPipe for its graph ops), or register their kernels with a custom-op resolver (a LiteRT "
                      "build linked with them). `edgekit inspect` lists every op.") if not mediapipe else
                     (f"{', '.join(others)}: not part of LiteRT; run the model with the runtime that ships "
                      f"{'it' if len(others) == 1 else 'them'} (e.g. MediaPipe), or register a custom-op resolver."))
    return " ".join(words)


def hint_for(text: str) -> str:
    """The hint that fits the cause in TEXT (a LiteRT message, or a crashed child's stderr)."""
    ops = custom_ops(text)
    if ops:
        return custom_op_hint(ops)
    if _XNNPACK.search(text):
        return HINT_XNNPACK
    if _MALFORMED.search(text):
        return HINT_MALFORMED
    return HINT_OTHER


def _where(path: Path, index: int) -> str:
    """" 'name', input of op 3 CONV_2D" for tensor INDEX of PATH's main subgraph ("" where unreadable)."""
    try:
        from edgekit.tflite.model import read_tflite

        model = read_tflite(path)
    except Exception:  # the explanation must not fail where the load already did
        return ""
    t = model.tensor(index)
    if t is None:
        return ""
    use = next((f"input of op {op.index} {op.op}" for op in model.ops if index in op.inputs), None) or next(
        (f"output of op {op.index} {op.op}" for op in model.ops if index in op.outputs), None)
    return f" '{t.name}'" + (f", {use}" if use else "")


def xnnpack_refusal(path: Path, text: str) -> str:
    """"XNNPACK refused the model (failed to prepare): <first reason> '<tensor>', input of op N OP"."""
    reasons = [r.strip() for r in re.split(r"\s*in XNNPACK delegate", text) if r.strip()]
    first = re.split(r"Node number \d+", reasons[0])[0].strip() if reasons else text.strip()
    m = _TENSOR.search(first)
    where = _where(path, int(m.group(1))) if m else ""
    return f"XNNPACK refused the model (failed to prepare): {first}{where}"


_INVOKE = re.compile(r"Node number (\d+) \((\w+)\) failed to invoke")
_DIV_BY_ZERO_POINT = re.compile(r"div\.cc:\d+ data\[i\] != zero_point")
HINT_INT8_DIV = (
    "An int8 DIV met a divisor equal to its zero point (a real 0): int8 cannot hold a divisor that near zero. Keep "
    "that DIV in float (--int8-recipe auto or mixed tries it), or ship the fp16/dynamic TFLite or the ONNX int8 "
    "artifact. `edgekit inspect` shows the op and its divisor's quantization."
)
_CARRIES = ("QUANTIZE", "DEQUANTIZE", "RESHAPE", "TRANSPOSE", "SQUEEZE", "EXPAND_DIMS")  # move values, compute none
_SQUARES = ("SQUARE", "SQUARED_DIFFERENCE")


def _producers(model: TfliteModel) -> dict[int, TOp]:
    return {o: op for op in model.ops for o in op.outputs}


def _data_in(model: TfliteModel, op: TOp) -> int | None:
    """The first input of OP that is not a constant (the value it carries or computes from)."""
    return next((i for i in op.inputs if (t := model.tensor(i)) is not None and not t.const), None)


def _is_squares(model: TfliteModel, made: dict[int, TOp], t: int) -> bool:
    """Whether tensor T is a mean or sum of squares (a variance, a squared norm), through carrying ops."""
    op = made.get(t)
    while op is not None and op.op in _CARRIES and (i := _data_in(model, op)) is not None:
        op = made.get(i)
    if op is None or op.op not in ("MEAN", "SUM"):
        return False
    src = made.get(op.inputs[0])
    while src is not None and src.op in _CARRIES and (i := _data_in(model, src)) is not None:
        src = made.get(i)
    return src is not None and (src.op in _SQUARES or (src.op == "MUL" and len(set(src.inputs[:2])) == 1))


def divisor_chain(model: TfliteModel, div: TOp, depth: int = 6) -> tuple[list[TOp], bool]:
    """(the ops that write DIV's divisor, nearest first, DEPTH of them at most, along their non-constant inputs;
    whether the divisor is a norm's: the square root of a mean or sum of squares, plus a constant or not)."""
    made = _producers(model)
    chain: list[TOp] = []
    t: int | None = div.inputs[1] if len(div.inputs) > 1 else None
    norm = False
    while t is not None and len(chain) < depth and (op := made.get(t)) is not None:
        chain.append(op)
        if op.op in ("SQRT", "RSQRT") and not norm:
            src, inner = op.inputs[0], made.get(op.inputs[0])
            if inner is not None and inner.op in ("ADD", "MAXIMUM") and (i := _data_in(model, inner)) is not None:
                src = i  # var + eps
            norm = _is_squares(model, made, src)
        t = _data_in(model, op)
    return chain, norm


def div_hint(path: Path, index: int) -> str:
    """The hint for op INDEX of PATH, an int8 DIV that met a divisor at its zero point: the DIV and what writes its
    divisor, read from the file, and a norm layer named only where the divisor is one's (HINT_INT8_DIV where the
    file cannot be read or op INDEX is no DIV)."""
    try:
        from edgekit.tflite.model import read_tflite

        model = read_tflite(path)
    except Exception:  # the explanation must not fail where the run already did
        return HINT_INT8_DIV
    div = next((op for op in model.ops if op.index == index), None)
    if div is None or div.op != "DIV" or len(div.inputs) < 2:
        return HINT_INT8_DIV
    out, divisor = model.tensor(div.outputs[0]), model.tensor(div.inputs[1])
    chain, norm = divisor_chain(model, div)
    words = (f"Op {index} DIV ('{out.name if out else '?'}') met a divisor equal to its int8 zero point (a real 0): "
             f"its divisor '{divisor.name if divisor else '?'}'")
    if chain:
        words += " is written by " + " <- ".join(f"op {op.index} {op.op}" for op in chain)
    if norm:
        words += (": the square root of a mean or sum of squares, a normalization layer's (GroupNorm, LayerNorm, "
                  "InstanceNorm or an L2/response norm), whose variance int8 rounded to zero on an input flatter "
                  "than the calibration data")
    else:
        words += ", a value that int8 rounds to zero on this input"
    return (words + ". Keep that DIV in float (--int8-recipe auto or mixed tries it; calibration data that reaches "
            "such inputs lets edgekit's DIV guard see it), or ship the fp16/dynamic TFLite or the ONNX int8 artifact.")


def invoke_failure(text: str, path: Path | None = None) -> tuple[str | None, str | None]:
    """(op, hint) of an invoke failure: the op LiteRT names ("DIV (op 47)"), and a hint where the check is known;
    with the model's PATH an int8 DIV's hint names the divisor's producers, read from the file (`div_hint`)."""
    m = _INVOKE.search(text)
    op = f"{m.group(2)} (op {m.group(1)})" if m else None
    if _DIV_BY_ZERO_POINT.search(text):
        return op, (div_hint(path, int(m.group(1))) if path is not None and m else HINT_INT8_DIV)
    if m:
        return op, (f"LiteRT's {m.group(2)} kernel refused its inputs (the check above). `edgekit inspect` shows op "
                    f"{m.group(1)} and its quantization; EDGEKIT_DEBUG=1 shows LiteRT's full message.")
    return None, None


def explain(path: Path, text: str) -> str | None:
    """A message naming the cause of a LiteRT load failure, or None for a cause not recognised here."""
    ops = custom_ops(text)
    if ops:
        return (f"{path.name} uses custom op(s) {', '.join(ops)}, which LiteRT does not ship: the model is fine, "
                "but this runtime cannot run it.")
    if _XNNPACK.search(text) and "prepare" in text:
        return xnnpack_refusal(path, text)
    return None


__all__ = ["HINT_INT8_DIV", "HINT_MALFORMED", "HINT_OTHER", "HINT_XNNPACK", "custom_op_hint", "custom_ops", "div_hint",
           "divisor_chain", "explain", "hint_for", "invoke_failure", "xnnpack_refusal"]
