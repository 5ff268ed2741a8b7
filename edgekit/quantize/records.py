"""The records int8 recovery writes into the manifest: the recipe chosen and what it cost, and the diagnosis.

Plain frozen dataclasses that round-trip to JSON (`to_dict` / `from_dict`): `RecipeChoice` is an
artifact's `extra.int8_recipe`, `Diagnosis` its `fidelity.diagnosis`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


def _plain(obj: Any) -> dict[str, Any]:
    return {f.name: _value(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.metadata.get("json", True)
            and not (f.metadata.get("omit_none") and getattr(obj, f.name) is None)}


def _value(v: Any) -> Any:
    if dataclasses.is_dataclass(v):
        return _plain(v)
    if isinstance(v, tuple | list):
        return [_value(x) for x in v]
    return v


INT8_TOP1 = 0.97  # the int8 top-1 agreement threshold (edgekit.core.precisions), for the words only
SPREAD_SHARE = 0.25  # under this share of the whole error in its worst layer group, the error is called spread
MACS_BUDGET = 0.10  # the share of MACs in float that issue 9 calls cheap (edgekit.quantize.search.AUTO_MACS_TARGET)
MACS_CAP = 0.50  # the most mixed precision may leave in float (edgekit.quantize.search.AUTO_FLOAT_CAP: why there)


@dataclass(frozen=True)
class RecipeTrial:
    """One recipe tried by the search, judged against the float model on the calibration samples."""

    recipe: str
    passed: bool
    cosine: float
    top1_agreement: float | None
    float_nodes: int
    macs_float_fraction: float
    seconds: float
    failures: tuple[str, ...] = ()
    # detectors: judged by their boxes (edgekit.fidelity.detection), not by top-1
    detection_recall: float | None = None
    detection_precision: float | None = None
    # maps and sequences: the agreement their kind is judged by (per-pixel, per-step or thresholded-mask); written only
    # where measured: a reader older than the key (RecipeTrial(**d)) still reads a classifier's or a detector's trials
    agreement: float | None = field(default=None, metadata={"omit_none": True})
    # detectors: the kept boxes' mean score drift (issue 37), written only where measured
    score_change: float | None = field(default=None, metadata={"omit_none": True})

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RecipeTrial:
        names = {f.name for f in dataclasses.fields(cls)}  # a key from a newer writer is ignored, not fatal
        return cls(**{**{k: v for k, v in d.items() if k in names}, "failures": tuple(d.get("failures") or ())})


@dataclass(frozen=True)
class RecipeChoice:
    """How an int8 artifact was made: the recipe asked for, the one chosen, and its cost.

    `met` says whether the chosen recipe met the int8 thresholds on the samples the search judged
    (`judged_on`), None where the search did not judge it (a named recipe: validation judges every
    artifact on held-out samples, and judging it in-sample first cost as much again); the artifact's
    own verdict is validation's. `float_nodes`
    are the layers left in float (mixed precision) and `macs_float_fraction` their share of the
    model's multiply-accumulates; an Edge TPU artifact only ever gets float-free recipes.
    """

    requested: str
    chosen: str
    config: dict[str, Any]
    met: bool | None
    judged_on: str
    float_nodes: tuple[str, ...] = ()
    macs_float_fraction: float = 0.0
    trials: tuple[RecipeTrial, ...] = ()
    notes: tuple[str, ...] = ()
    # Edge TPU graph fixes (edgekit.edgetpu.fixes): what was applied, the pre-flight of plain int8 before and after
    edgetpu_fixes: dict[str, Any] | None = None
    # what the recipe cost against plain int8 (edgekit.quantize.search.cost_record): size_bytes, latency_ms,
    # plain_/fp32_ twins, size_delta_bytes, latency_delta_ms (0 by definition for plain itself)
    cost: dict[str, Any] | None = None
    # the fp32 model's top-1 agreement with itself under input noise of half an int8 step (on the samples the
    # search judges): below the threshold, no int8 artifact with an int8 input can meet it
    float_input_noise_agreement: float | None = None
    # mixed precision tried up to the cap (MACS_CAP) and missed: the float share of MACs of the largest candidate
    # under it, which still missed; the model needs more than this in float to meet the thresholds, and the best
    # float-free recipe was kept instead (None: mixed precision met within the cap, or was not tried)
    macs_float_needed_over: float | None = None
    # where the kept candidate's top-1 disagreements lie, on the samples the search judged
    # (edgekit.quantize.search.top1_margins): samples, sigma, close_share, flips, flips_close
    top1_margins: dict[str, Any] | None = None
    # mixed precision's most damaging layer group, quantized alone, as a share of its base's whole int8 error
    # (edgekit.quantize.search.error_share; None: mixed precision was not tried)
    worst_group_error_share: float | None = None
    # a detector's final decode kept in float (edgekit.quantize.detect_decode.DecodeRegion.record): outputs, where
    # and how it runs in float, nodes, macs_float_fraction, ops, head_layers, why; None: no detection output
    detection_decode: dict[str, Any] | None = None
    # mixed int8/int16 (`mixed16`, ONNX): the nodes whose activations are 16-bit (weights stay int8) and their share
    # of the MACs; new keys, optional: a reader that predates them ignores them
    int16_nodes: tuple[str, ...] = ()
    macs_int16_fraction: float = 0.0
    # --int8-budget (edgekit.quantize.driver): the seconds the search was given, those it spent, whether they ended it
    # (no candidate started past them, the best so far kept) and the candidates it tried; written only where given
    budget: dict[str, Any] | None = field(default=None, metadata={"omit_none": True})
    # where diagnosis finds the float twin of the artifact (a staging path: never written to the manifest)
    float_model: str | None = field(default=None, compare=False, metadata={"json": False})

    def to_dict(self) -> dict[str, Any]:
        return _plain(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RecipeChoice:
        names = {f.name for f in dataclasses.fields(cls)}
        v = {k: x for k, x in d.items() if k in names}
        v["float_nodes"] = tuple(v.get("float_nodes") or ())
        v["int16_nodes"] = tuple(v.get("int16_nodes") or ())
        v["notes"] = tuple(v.get("notes") or ())
        v["trials"] = tuple(RecipeTrial.from_dict(t) for t in v.get("trials") or ())
        return cls(**v)

    def why_words(self) -> str:
        """Why the model needed float layers past the budget, or cannot meet the int8 thresholds at all ('' if not)."""
        out = []
        noise = self.float_input_noise_agreement
        if noise is not None and noise < INT8_TOP1:
            out.append(f"the fp32 model itself keeps its top-1 on only {noise:.0%} of samples when its input moves by "
                       "half an int8 step: its decision turns on differences below 8-bit resolution, so no artifact "
                       f"with an int8 input can agree {INT8_TOP1:.0%} (only float layers could, up to the whole model, "
                       f"and auto stops at {100 * MACS_CAP:.0f}% of its MACs in float)")
        if self.int16_nodes and self.macs_int16_fraction > MACS_BUDGET:
            out.append(f"it needed 16-bit activations on {100 * self.macs_int16_fraction:.0f}% of its MACs "
                       f"({len(self.int16_nodes)} ops), over the {100 * MACS_BUDGET:.0f}% budget")
        if self.float_nodes and self.macs_float_fraction > MACS_BUDGET:
            out.append(f"it {'needed' if self.met else 'was given'} {100 * self.macs_float_fraction:.0f}% of its MACs "
                       f"in float ({len(self.float_nodes)} ops), over the {100 * MACS_BUDGET:.0f}% budget"
                       + ("" if self.met else ", and still missed"))
        over, cap = self.macs_float_needed_over, f"the {100 * MACS_CAP:.0f}% cap on float MACs"
        if over:
            out.append(f"mixed precision would need more than {100 * over:.0f}% of its MACs in float (with that much, "
                       f"the most under {cap}, it still missed), so the best float-free recipe was kept")
        elif over is not None:
            out.append(f"the layer group that mixed precision would keep in float first is alone over {cap}: none "
                       "was tried, the best float-free recipe was kept")
        budget = self.budget or {}
        if budget.get("ended") and self.met is False:
            grown = f" (grown to {budget['scaled_seconds']:g} s by its first candidate's time)" \
                if budget.get("scaled_seconds") else ""
            out.append(f"the --int8-budget of {budget['seconds']:g} s{grown} ended the search after "
                       f"{budget['candidates']} candidates, before one met the thresholds (a larger budget tries more)")
        if self.met is False or (self.float_nodes and self.macs_float_fraction > MACS_BUDGET):
            out += self._spread_words()
        return "; ".join(out)

    def _spread_words(self) -> list[str]:
        """Why no cheap recipe got there: close calls (`top1_margins`), an error no few layers hold."""
        out = []
        m = self.top1_margins or {}
        flips, close = int(m.get("flips", 0)), float(m.get("close_share", 0.0))
        if flips and close > 1 - INT8_TOP1 and 2 * int(m.get("flips_close", 0)) >= flips:
            out.append(f"its top-1 turns on close calls: on {close:.0%} of the judged samples the fp32 model's top two "
                       f"scores are within twice the int8 error on their difference (sigma {m.get('sigma', 0):.3g}), "
                       f"more than the {1 - INT8_TOP1:.0%} of disagreement the threshold allows, and "
                       f"{m.get('flips_close')} of its {flips} disagreements are among them (a model with wider "
                       "margins agrees more; the accuracy drop, which validation also measures, says what int8 costs)")
        share = self.worst_group_error_share
        if share is not None and share < SPREAD_SHARE:
            out.append(f"the error is spread over the layers: the most damaging layer group, quantized alone, makes "
                       f"{share:.0%} of the int8 model's output error, so a few layers in float remove little of it")
        return out

    def cost_words(self) -> str:
        """'equalize', 'mixed[plain] (3 ops in float, 4.1% of MACs)', 'mixed16[plain] (2 ops 16-bit, 3.0% of
        MACs)': what the table shows."""
        fixes = sum((self.edgetpu_fixes or {}).get("applied", {}).values())
        more = f" + {fixes} Edge TPU fix{'es' if fixes != 1 else ''}" if fixes else ""
        delta = (self.cost or {}).get("latency_delta_ms")
        if delta is not None and round(delta, 2) != 0:  # measured: a hundredth of a millisecond is noise
            more += f", {delta:+.2f} ms vs plain"
        n = len(self.float_nodes)
        if self.int16_nodes:  # mixed16: no float layer, some 16-bit activations
            k, share = len(self.int16_nodes), self.macs_int16_fraction
            over = f", over the {100 * MACS_BUDGET:.0f}% budget" if share > MACS_BUDGET else ""
            return f"{self.chosen} ({k} op{'s' if k != 1 else ''} 16-bit, {100 * share:.1f}% of MACs{over})" + more
        if not n:
            return self.chosen + more
        over = f", over the {100 * MACS_BUDGET:.0f}% budget" if self.macs_float_fraction > MACS_BUDGET else ""
        return (f"{self.chosen} ({n} op{'s' if n != 1 else ''} in float, {100 * self.macs_float_fraction:.1f}% of MACs"
                f"{over})" + more)


@dataclass(frozen=True)
class LayerDiagnosis:
    """One quantized layer, float vs int8 on the validation inputs.

    sqnr_db: signal-to-quantization-noise of the layer's output (higher is better); added_db: how
    many dB the layer itself lost (its input's SQNR minus its output's: the layer's own share of the
    error; where its own error is measured alone, as the TFLite debugger does, from an exact 8-bit input's
    48 dB); act_spread: the largest per-channel range of its input over the median one; weight_spread:
    the same over its weights' output channels; outlier_ratio: the output's max |x| over its 99.9th
    percentile (a large one means MinMax calibration spends the int8 range on rare values).
    """

    name: str
    op: str
    sqnr_db: float
    cosine: float
    added_db: float
    act_spread: float | None
    weight_spread: float | None
    outlier_ratio: float | None
    pattern: str
    fix: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LayerDiagnosis:
        return cls(**d)


@dataclass(frozen=True)
class Diagnosis:
    """The layers that contribute most int8 error, ranked, with what usually fixes each pattern."""

    method: str  # "onnxruntime intermediate tensors" | "tflite quantization debugger"
    samples: int
    inputs: str
    layers: tuple[LayerDiagnosis, ...]
    layers_total: int
    summary: str

    def to_dict(self) -> dict[str, Any]:
        return _plain(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Diagnosis:
        return cls(**{**d, "layers": tuple(LayerDiagnosis.from_dict(x) for x in d.get("layers") or ())})

    def lines(self, top: int = 5) -> list[str]:
        """What the screen shows: the summary and the worst layers with their fix."""
        out = [self.summary]
        for i, layer in enumerate(self.layers[:top], 1):
            spreads = ", ".join(s for s in (
                f"activation channel spread {layer.act_spread:.0f}x" if layer.act_spread is not None else "",
                f"weight spread {layer.weight_spread:.0f}x" if layer.weight_spread is not None else "",
                f"outliers {layer.outlier_ratio:.1f}x" if layer.outlier_ratio is not None else "") if s)
            out.append(f"  {i}. {layer.name} ({layer.op}): SQNR {layer.sqnr_db:.1f} dB, lost {layer.added_db:.1f} dB"
                       f"{'; ' + spreads if spreads else ''} -> {layer.pattern}: {layer.fix}")
        return out


def plain_choice_of_inputs(requested: str, config: dict[str, Any], samples: int) -> RecipeChoice:
    """The record of an int8 model with several inputs: the plain recipe, not searched.

    The recipe search runs candidate models on one input's samples; a model with several inputs is calibrated on
    every input by name with the plain recipe, and judged by validation.
    """
    note = "several inputs: the plain recipe, every input calibrated by name (the recipe search runs one-input models)"
    return RecipeChoice(requested=requested, chosen="plain", config=config, met=None,  # not judged: validation does
                        judged_on=f"not searched ({samples} calibration samples per input; validation judges it)",
                        notes=(note,))


__all__ = ["Diagnosis", "LayerDiagnosis", "RecipeChoice", "RecipeTrial", "plain_choice_of_inputs"]
