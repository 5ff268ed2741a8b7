"""ONNX int8 recipes: each a small class with a declared config and one `build` method, like the steps.

A recipe turns the pre-processed fp32 ONNX (BatchNorm folded by onnxruntime) into a QDQ int8 ONNX:
- `plain`: onnxruntime's quantize_static (QDQ, per-channel int8 weights, MinMax calibration) in the form of the
  deployment CPU (convert --for: activations' sign and 7-bit reduce_range by edgekit.quantize.cpu_forms' table);
- `uint8`: uint8 activations and weights, full 8-bit weights (onnxruntime's U8U8 kernels do not saturate);
- `percentile`, `entropy`: the same with another calibration statistic (onnxruntime's CalibrationMethod);
- `mse`: the same with each activation's least-squared-error range (edgekit.quantize.onnx.mse: onnxruntime has none);
- `equalize`: cross-layer equalization + bias absorption on the float graph first (edgekit.quantize.onnx.equalize);
- `equalize+bias`: and then empirical bias correction (edgekit.quantize.onnx.bias_correct);
- `nncf`: NNCF's post-training quantization with its full bias correction (edgekit.quantize.onnx.nncf_recipe);
- `mixed`: one of the above with the most sensitive layers left in float (`nodes_to_exclude`); the
  layers are chosen by the search (edgekit.quantize.search), smallest set first;
- `mixed16`: the same search, the chosen layers kept integer with 16-bit activations instead of float
  (onnxruntime's `TensorQuantOverrides`): int8 weights everywhere, so about int8's size.
The `w8a16` precision is `plain` with int16 activations everywhere (`W8A16`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.quantize.cpu_forms import CpuForm
from edgekit.quantize.onnx.ort import Reader, quantize


@dataclass(frozen=True)
class OnnxRecipeConfig:
    """What a recipe does, as data (recorded in the manifest's `int8_recipe.config`)."""

    calibrate: str = "minmax"  # minmax | percentile | entropy | mse
    equalize: bool = False
    # through ReLU6 when equalizing: clip (ReLU + per-channel Min: exact) | replace (by ReLU, as AIMET) | keep (skip)
    relu6: str = "clip"
    bias_correct: bool = False
    float_nodes: tuple[str, ...] = ()  # nodes left in float (mixed precision)
    # a detector's final decode, always in float (edgekit.quantize.detect_decode: why); mixed precision adds to it
    decode_nodes: tuple[str, ...] = ()
    # the head's last layers before it: int8 weights and inputs, float outputs (detect_decode.float_head_outputs)
    decode_heads: tuple[str, ...] = ()
    percentile: float = 99.999
    reduce_range: bool = True  # 7-bit weights: x86 without VNNI saturates int8 x int8 (see edgekit.quantize.onnx.ort)
    unsigned: bool = False  # uint8 activations and weights: no saturation anywhere, so full 8-bit weights
    tool: str = "onnxruntime"  # what quantizes: onnxruntime's quantize_static, or nncf (nncf.quantize)
    # int16 | int8 | uint8: the activations' type everywhere (w8a16: int16, QDQ at opset 21, edgekit.quantize.onnx.ort;
    # uint8 with int8 weights is U8S8, the form x86 fuses: edgekit.quantize.cpu_forms)
    activations: str = "int8"
    per_channel: bool = True  # one weight scale per output channel
    cpu: str = ""  # the deployment CPU class whose form this is (edgekit.quantize.cpu_forms; "": none applied)
    # nodes whose input and output activations are int16 in an int8 model (mixed int8/int16 precision: `mixed16`)
    int16_nodes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "float_nodes": list(self.float_nodes), "decode_nodes": list(self.decode_nodes),
                "decode_heads": list(self.decode_heads), "int16_nodes": list(self.int16_nodes)}

    def made_for(self, form: CpuForm) -> OnnxRecipeConfig:
        """This config in FORM's activation type, weight range and per-channel choice (convert --for).

        A recipe that is its own form keeps it and records the CPU: `uint8` (U8U8, which saturates nowhere), w8a16
        (int16 activations: no int8 x int8 kernel runs it, only per-channel follows the row) and NNCF (its own
        quantizer places its types)."""
        if self.cpu == form.cpu:
            return self
        if self.unsigned or self.tool != "onnxruntime":
            return replace(self, cpu=form.cpu)
        if self.activations == "int16":
            return replace(self, cpu=form.cpu, per_channel=form.per_channel)
        return replace(self, cpu=form.cpu, activations=form.activations, reduce_range=form.reduce_range,
                       per_channel=form.per_channel)

    def excluded(self) -> tuple[str, ...]:
        """Every node onnxruntime leaves in float: the mixed-precision layers and the detection decode."""
        return tuple(dict.fromkeys((*self.decode_nodes, *self.float_nodes)))


@dataclass
class QuantData:
    """The calibration samples in the model's layout, the input's name, and the model's static batch."""

    name: str
    samples: np.ndarray
    batch: int
    work: Path
    notes: list[str] = field(default_factory=list)
    cache: Path | None = None  # onnxruntime's calibration cache: the tensor ranges, reused by mixed precision
    feeds: dict[str, np.ndarray] | None = None  # several inputs: each one's samples by input name (plain recipe only)
    form: CpuForm | None = None  # the deployment CPU's int8 form (convert --for): every recipe built is made for it


class OnnxRecipe:
    """A named recipe: CONFIG says what it does; `build` writes the QDQ model and returns the float model used."""

    name: ClassVar[str]
    float_free: ClassVar[bool] = True  # no layer left in float: fit for fully-integer targets
    default: ClassVar[OnnxRecipeConfig] = OnnxRecipeConfig()

    def __init__(self, config: OnnxRecipeConfig | None = None, decode: tuple[str, ...] = (),
                 heads: tuple[str, ...] = ()) -> None:
        self.config = config or self.default
        if decode:  # a detector's decode stays float whatever the recipe (edgekit.quantize.detect_decode)
            self.config = replace(self.config, decode_nodes=decode, decode_heads=heads)

    def with_float(self, nodes: tuple[str, ...]) -> OnnxRecipe:
        return type(self)(replace(self.config, float_nodes=nodes))

    def with_int16(self, nodes: tuple[str, ...]) -> OnnxRecipe:
        return type(self)(replace(self.config, int16_nodes=nodes))

    def formed(self, data: QuantData) -> None:
        """The config made for the deployment CPU DATA names (convert --for), before building: the record, written
        from this recipe's config, says the form it was built in."""
        if data.form is not None:
            self.config = self.config.made_for(data.form)

    def prepare(self, pre: Path, data: QuantData) -> Path:
        """The float model to quantize (PRE itself, or an equalized copy)."""
        if not self.config.equalize:
            return pre
        import onnx

        from edgekit.quantize.onnx.equalize import equalize

        model = onnx.load(str(pre))
        rep = equalize(model, relu6=self.config.relu6, absorb_with=data.samples)
        how = {"clip": "ReLU + a per-channel ceiling", "replace": "ReLU"}.get(rep.relu6_mode, "-")
        data.notes.append(f"equalized {rep.pairs} conv pairs ({rep.sweeps} sweeps), {rep.relu6_replaced} ReLU6 made "
                          f"{how}, absorbed {rep.absorbed_channels} channel biases")
        out = data.work / f"{pre.stem}.equalized.onnx"
        onnx.save(model, str(out))
        return out

    def build(self, pre: Path, dst: Path, data: QuantData) -> Path:
        """Write the QDQ int8 model at DST; returns the float model it was quantized from."""
        self.formed(data)
        src = self.prepare(pre, data)
        if not self.config.bias_correct:
            quantize(src, dst, data, self.config)
            return src
        from edgekit.quantize.onnx.bias_correct import correct_biases

        quantize(src, dst, replace(data, cache=None), self.config)  # the shift is measured on this one
        return correct_biases(src, dst, data, self.config)


class Plain(OnnxRecipe):
    name = "plain"


class Percentile(OnnxRecipe):
    name = "percentile"
    default = OnnxRecipeConfig(calibrate="percentile")


class Entropy(OnnxRecipe):
    name = "entropy"
    default = OnnxRecipeConfig(calibrate="entropy")


class Mse(OnnxRecipe):
    """Each activation's range the one of least expected int8 error (clipping + rounding) over the calibration
    histogram: clips the rare outliers that stretch MinMax's step (edgekit.quantize.calib_stats)."""

    name = "mse"
    default = OnnxRecipeConfig(calibrate="mse")


class Uint8(OnnxRecipe):
    """uint8 activations and 8-bit uint8 weights (no reduce_range): onnxruntime's documented way out of the
    int8 kernels' saturation on x86 without VNNI (U8U8 kernels widen to 16 bits first), with twice the weight
    resolution of plain's 7 bits. Measured: trained MobileNetV2 93 -> 95% top-1 agreement on 200 digits."""

    name = "uint8"
    default = OnnxRecipeConfig(reduce_range=False, unsigned=True)


class Equalize(OnnxRecipe):
    name = "equalize"
    default = OnnxRecipeConfig(equalize=True)


class EqualizeBias(OnnxRecipe):
    name = "equalize+bias"
    default = OnnxRecipeConfig(equalize=True, bias_correct=True)


class BiasCorrect(OnnxRecipe):
    name = "bias"
    default = OnnxRecipeConfig(bias_correct=True)


# the w8a16 precision: int8 weights (full 8 bits: no int8 x int8 kernel runs them, so nothing saturates), int16
# activations everywhere (its one recipe adds bias correction: edgekit.quantize.onnx.search.quantize_w8a16)
W8A16 = OnnxRecipeConfig(activations="int16", reduce_range=False)

class Nncf(OnnxRecipe):
    """nncf.quantize (its ONNX backend) with its full bias correction: edgekit.quantize.onnx.nncf_recipe says why."""

    name = "nncf"
    default = OnnxRecipeConfig(bias_correct=True, reduce_range=False, tool="nncf")

    def build(self, pre: Path, dst: Path, data: QuantData) -> Path:
        from edgekit.quantize.onnx.nncf_recipe import nncf_quantize

        self.formed(data)
        nncf_quantize(pre, dst, data, self.config)
        return pre


# auto's order: float-free recipes, cheapest first; then mixed precision on the best of them
ONNX_RECIPES: dict[str, type[OnnxRecipe]] = {r.name: r for r in (Plain, Uint8, Percentile, Mse, Entropy, BiasCorrect,
                                                                 Equalize, EqualizeBias, Nncf)}

__all__ = ["ONNX_RECIPES", "W8A16", "OnnxRecipe", "OnnxRecipeConfig", "QuantData", "Reader", "quantize"]
