"""An integer TFLite layer whose weights the quantizer left unquantized: found before the artifact leaves its step.

Why: LiteRT's integer CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and TRANSPOSE_CONV kernels take only weights with
affine (scale, zero point) quantization; one with int8 or int16 activations and a float filter fails to load
("conv.cc:384 filter->quantization.type != kTfLiteAffineQuantization"). The MLIR quantizer writes such a layer where
the filter is not a constant it can quantize: MediaPipe's pose detector kept 38 of its filters as sparse constants
behind DENSIFY ops (edgekit.tflite.float_weights now folds those first). Validation would catch the model too, but
as LiteRT's refusal to load a file edgekit just wrote, quoting a kernel source line: this names the layer and what
feeds its filter, and the artifact fails at the step that made it (a conversion failure, the others publish).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# layer op -> (index of its activation input, index of its weights input)
WEIGHTED = {"CONV_2D": (0, 1), "DEPTHWISE_CONV_2D": (0, 1), "FULLY_CONNECTED": (0, 1), "TRANSPOSE_CONV": (2, 1)}
INTEGER = ("int8", "uint8", "int16")


@dataclass(frozen=True)
class FloatWeights:
    """A layer with integer activations whose weights are not an affine-quantized integer constant."""

    op: str  # CONV_2D ...
    index: int  # its position in the main subgraph
    layer: str  # its output tensor's name (the quantizer's name for the op)
    weights: str  # the weights tensor's name
    dtype: str  # the weights' type (float16, float32 ...)
    fed_by: str | None  # the op writing the weights where they are not a constant (DENSIFY ...)


def float_layer_weights(path: Path) -> list[FloatWeights]:
    """The layers of the .tflite at PATH that LiteRT's integer kernels cannot load for their weights, in op order."""
    from edgekit.tflite.model import read_tflite

    m = read_tflite(path)
    producer = {t: op for op in m.ops for t in op.outputs}
    found = []
    for op in m.ops:
        at = WEIGHTED.get(op.op)
        if at is None or max(at) >= len(op.inputs) or not op.outputs:
            continue
        x, w = m.tensor(op.inputs[at[0]]), m.tensor(op.inputs[at[1]])
        if x is None or w is None or x.dtype not in INTEGER or x.quantization is None:
            continue  # a float layer (a denylisted one, a dynamic-range one) takes float weights
        if w.dtype in INTEGER and w.quantization is not None and w.quantization.scale:
            continue
        writer = producer.get(w.index)
        found.append(FloatWeights(op.op, op.index, m.tensors[op.outputs[0]].name, w.name, w.dtype,
                                  writer.op if writer is not None else None))
    return found


def words(found: list[FloatWeights]) -> str:
    first = found[0]
    fed = f", written by a {first.fed_by} op" if first.fed_by else ""
    more = f" (and {len(found) - 1} more layer(s) like it)" if len(found) > 1 else ""
    return (f"the int8 model's {first.op} '{first.layer}' (op {first.index}) has integer activations but {first.dtype} "
            f"weights '{first.weights}'{fed}, which LiteRT's integer kernels cannot load{more}: the quantizer "
            "quantizes only weights that are constants")


def refuse_float_weights(path: Path) -> None:
    """ConversionError naming the first layer of the .tflite at PATH that LiteRT cannot load for its weights."""
    from edgekit.core.errors import ConversionError

    found = float_layer_weights(path)
    if found:  # the step is the caller's (the runner fills it in): tflite_convert or tflite_quantize
        raise ConversionError(words(found), hint=HINT, op=found[0].layer)


HINT = ("Fold what computes the weights into constants before quantizing (edgekit does so for float16 DEQUANTIZE and "
        "sparse DENSIFY weights); otherwise take the file as it is (--quantize fp32/fp16), or quantize the model it "
        "was made from. Please report the model: this is a gap in edgekit, not in your file.")


__all__ = ["HINT", "WEIGHTED", "FloatWeights", "float_layer_weights", "refuse_float_weights", "words"]
