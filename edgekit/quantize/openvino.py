"""int8 OpenVINO IR by NNCF post-training quantization: the recipe asked for, or `auto`'s order, judged as the
ONNX and TFLite searches judge theirs (edgekit.quantize.search: validation's own thresholds, on calibration
samples held out from calibrating).

The recipes, and why each NNCF option is set as it is (recorded in the manifest's `extra.int8_recipe.config`):
- `plain`: `nncf.quantize` with the PERFORMANCE preset (symmetric int8 weights and activations: what OpenVINO's
  CPU and GPU int8 kernels run fastest), `fast_bias_correction` on (NNCF's default: shifts each layer's bias by the
  mean error quantizing brought, at almost no cost), `subset_size` = every calibration sample edgekit was given
  (NNCF's default of 300 would silently drop the rest), target device ANY (the IR runs on CPU, GPU or NPU).
  `model_type=TRANSFORMER` (which adds SmoothQuant and keeps some ops float) only where the graph has attention
  (a Softmax feeding a MatMul): a CNN gains nothing from it and loses accuracy where its ops stay float.
- `mixed-preset`: the MIXED preset (asymmetric activations): activations that are not centred on zero (a
  ReLU6 output, a sigmoid map) get the whole int8 range instead of half.
- `bias`: full bias correction (`fast_bias_correction=False`): the bias shift measured layer by layer on the
  quantized model's own inputs, slower and closer.
- `accuracy-control`: `nncf.quantize_with_accuracy_control`: plain int8, then the layers that lose the most
  reverted to float until the drop of edgekit's measure (top-1 agreement with the float model for class
  scores, else cosine) is within `max_drop`, which is read from the int8 fidelity thresholds (1 - threshold).
  Layers left float run slower: the record says how many.
`auto` tries plain, then the mixed preset and full bias correction, then accuracy control, and keeps the first
that meets the thresholds on the held-out calibration samples (the best one where none does): the search is
edgekit.quantize.driver's, this module builds and runs OpenVINO's candidates. A recipe named for
another format (`equalize`, `mse` ...) is noted and auto's order used instead, as the TFLite search does.

NNCF and OpenVINO's converter send usage telemetry by default; `no_telemetry` turns it off for each call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core._deps import version_of
from edgekit.core.vendor_telemetry import require_quiet as require
from edgekit.quantize.driver import Built, Judging, Rules, Search, top_score
from edgekit.quantize.records import RecipeChoice
from edgekit.quantize.search import NOT_JUDGED, split

RECIPES: tuple[str, ...] = ("plain", "mixed-preset", "bias", "accuracy-control")
AUTO_ORDER: tuple[str, ...] = RECIPES
INT8_MEASURE_FLOOR = 0.005  # the smallest max_drop handed to NNCF: its search needs room to stop


@dataclass
class OvJob:
    """What the search quantizes: the float IR model (in memory), calibration samples by input name (the model's
    layout), where to write, and the progress log."""

    model: Any  # openvino.Model, fp32
    feeds: dict[str, np.ndarray]
    log: Callable[[str], None]
    notes: list[str]


def has_attention(model: Any) -> bool:
    """A Softmax whose output feeds a MatMul: the transformer block NNCF's TRANSFORMER model type is for."""
    for op in model.get_ordered_ops():
        if op.get_type_name() != "Softmax":
            continue
        for out in op.outputs():
            if any(t.get_node().get_type_name() == "MatMul" for t in out.get_target_inputs()):
                return True
    return False


def config_of(recipe: str, job: OvJob, subset: int, max_drop: float | None = None) -> dict[str, Any]:
    """The NNCF options RECIPE uses, as recorded in the manifest."""
    transformer = has_attention(job.model)
    config: dict[str, Any] = {
        "recipe": recipe, "tool": "nncf", "nncf_version": version_of("nncf"),
        "preset": "mixed" if recipe == "mixed-preset" else "performance",
        "fast_bias_correction": recipe != "bias",
        "subset_size": subset,
        "target_device": "ANY",
        "model_type": "transformer" if transformer else None,
        "smooth_quant": transformer,  # NNCF applies SmoothQuant with model_type=TRANSFORMER
    }
    if recipe == "accuracy-control":
        config["max_drop"] = max_drop
        config["drop_type"] = "absolute"
    return config


def _dataset(feeds: dict[str, np.ndarray], idx: np.ndarray) -> Any:
    nncf = require("nncf", "convert")
    items = [{name: x[i:i + 1] for name, x in feeds.items()} for i in idx]
    return nncf.Dataset(items)


def _compile(model: Any) -> Any:
    ov = require("openvino", "openvino")
    # f32 inference on the CPU: on CPUs with bf16 units OpenVINO would otherwise run float layers in bf16
    return ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})


def run_first(compiled: Any, feeds: dict[str, np.ndarray], idx: np.ndarray) -> np.ndarray:
    """The first output of COMPILED on the samples IDX, one at a time (the IR may have a static batch of 1)."""
    request = compiled.create_infer_request()
    ys = []
    for i in idx:
        result = request.infer({name: x[i:i + 1] for name, x in feeds.items()})
        ys.append(np.asarray(result[compiled.outputs[0]], dtype=np.float32).copy())
    return np.concatenate(ys)


def _measure(y_ref: np.ndarray) -> tuple[str, float]:
    """(the measure accuracy control keeps, its int8 threshold): top-1 agreement for class scores, else cosine."""
    from edgekit.core.precisions import PRECISIONS
    from edgekit.quantize.search import has_classes

    need = PRECISIONS["int8"].thresholds
    if has_classes(y_ref):
        return "top1_agreement", need["top1_agreement"]
    return "cosine", need["cosine"]


def _score(name: str, y_ref: np.ndarray, y: np.ndarray) -> float:
    if name == "top1_agreement":
        return float((y.reshape(len(y), -1).argmax(1) == y_ref.reshape(len(y_ref), -1).argmax(1)).mean())
    a, b = y_ref.reshape(len(y_ref), -1).astype(np.float64), y.reshape(len(y), -1).astype(np.float64)
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return float(cos.mean())


def build(recipe: str, job: OvJob, calib_idx: np.ndarray, judge_idx: np.ndarray, y_ref: np.ndarray | None
          ) -> tuple[Any, dict[str, Any]]:
    """The int8 model RECIPE makes from calibration samples CALIB_IDX, and its config. Accuracy control also reads
    the JUDGE_IDX samples and their float outputs Y_REF (what it keeps the drop of)."""
    nncf = require("nncf", "convert")
    subset = len(calib_idx)
    common: dict[str, Any] = {"subset_size": subset, "target_device": nncf.TargetDevice.ANY}
    preset = nncf.QuantizationPreset.MIXED if recipe == "mixed-preset" else nncf.QuantizationPreset.PERFORMANCE
    if has_attention(job.model):
        common["model_type"] = nncf.ModelType.TRANSFORMER
    calib = _dataset(job.feeds, calib_idx)
    if recipe != "accuracy-control":
        config = config_of(recipe, job, subset)
        return nncf.quantize(job.model, calib, preset=preset, fast_bias_correction=recipe != "bias", **common), config
    assert y_ref is not None
    measure, need = _measure(y_ref)
    max_drop = max(round(1.0 - need, 4), INT8_MEASURE_FLOOR)
    order = list(judge_idx)

    def validate(compiled: Any, data: Any) -> float:
        y = run_first(compiled, job.feeds, np.asarray(order))
        return _score(measure, y_ref, y)

    from nncf.quantization.advanced_parameters import AdvancedAccuracyRestorerParameters

    config = config_of(recipe, job, subset, max_drop)
    config["measure"] = measure
    model = nncf.quantize_with_accuracy_control(
        job.model, calib, _dataset(job.feeds, judge_idx), validate, max_drop=max_drop,
        drop_type=nncf.DropType.ABSOLUTE, preset=preset, fast_bias_correction=True,
        # the ranking reads every held-out sample: few enough here (edgekit.quantize.search.MAX_JUDGE)
        advanced_accuracy_restorer_parameters=AdvancedAccuracyRestorerParameters(ranking_subset_size=len(order)),
        **common)
    config["float_layers"] = len(float_layers(model))
    return model, config


def float_layers(model: Any) -> tuple[str, ...]:
    """Names of the convolutions and matrix products of MODEL that read nothing quantized (no FakeQuantize, no
    int8 weight decompressed): the layers accuracy control reverted to float."""
    names = []
    for op in model.get_ordered_ops():
        if op.get_type_name() not in ("Convolution", "GroupConvolution", "MatMul"):
            continue
        producers = {inp.get_source_output().get_node().get_type_name() for inp in op.inputs()}
        if not producers & {"FakeQuantize", "FakeConvert", "Convert", "Multiply", "Subtract"}:
            names.append(op.get_friendly_name())
    return tuple(names)


class _OvCandidates:
    """OpenVINO's side of the int8 search (edgekit.quantize.driver): a recipe's model by NNCF on the calibrating
    samples, run by OpenVINO's CPU plugin on the judged ones."""

    def __init__(self, job: OvJob, calib_idx: np.ndarray, judge_idx: np.ndarray, y_ref: np.ndarray) -> None:
        self.job, self.calib_idx, self.judge_idx, self.y_ref = job, calib_idx, judge_idx, y_ref

    def build(self, name: str) -> Built[tuple[Any, dict[str, Any]]]:
        model, config = build(name, self.job, self.calib_idx, self.judge_idx, self.y_ref)
        floats = float_layers(model) if "float_layers" in config else ()  # what accuracy control reverted
        return Built((model, config), run_first(_compile(model), self.job.feeds, self.judge_idx), floats)


# OpenVINO's search judges every candidate at one sigma and keeps the top score where none passes: the shared
# rules' growing bound would stop its four recipes before accuracy control on the default 100 judged samples
# (edgekit.quantize.search.out_of_reach), which would change what it makes; said here, in one line, to be decided
OV_RULES = Rules(growing_bound=False, keep=top_score)


def quantize_ir(job: OvJob, requested: str, budget: float | None = None) -> tuple[Any, RecipeChoice]:
    """The int8 model for REQUESTED (a recipe name or auto) and the record of how it was made. BUDGET: the seconds
    the search may spend starting candidates (--int8-budget; None: no limit)."""
    if requested not in ("auto", *RECIPES):
        job.notes.append(f"recipe '{requested}' is not one of OpenVINO's ({', '.join(RECIPES)}); auto's order used")
        requested = "auto"
    n = len(next(iter(job.feeds.values())))
    all_idx = np.arange(n)
    if requested not in ("auto", "accuracy-control"):  # a named recipe: built on every sample, judged by validation
        model, config = build(requested, job, all_idx, all_idx, None)
        return model, RecipeChoice(requested=requested, chosen=requested, config=config, met=None,
                                   judged_on=NOT_JUDGED, notes=tuple(job.notes))
    calib_idx, judge_idx, words = split(n)
    y_ref = run_first(_compile(job.model), job.feeds, judge_idx)
    order = AUTO_ORDER if requested == "auto" else ("accuracy-control",)
    found = Search(Judging(y_ref, y_ref), {}, job.log, job.notes, budget, OV_RULES).run(
        _OvCandidates(job, calib_idx, judge_idx, y_ref), order)
    model, config = found.held
    recipe = config["recipe"]
    if not found.met:
        job.notes.append(f"no recipe met the int8 thresholds on {words}; kept the best, {recipe}")
    if recipe == "accuracy-control":
        words = words.replace("the chosen one rebuilt on all", "accuracy control keeps the model it judged, of")
    # rebuilt on every calibration sample, as the other searches do (more samples, better ranges); accuracy control
    # keeps the model it judged: its float layers were chosen on these held-out samples
    if recipe != "accuracy-control":
        model = build(recipe, job, all_idx, all_idx, None)[0]
        config = {**config, "subset_size": n}
    float_nodes = float_layers(model) if recipe == "accuracy-control" else ()
    return model, RecipeChoice(requested=requested, chosen=recipe, config=config, met=found.met, judged_on=words,
                               float_nodes=float_nodes, trials=found.trials, notes=tuple(job.notes),
                               budget=found.budget)


def save(model: Any, xml: Path, compress_to_fp16: bool = False) -> None:
    """MODEL as XML (+ its .bin beside it). compress_to_fp16 defaults to False: openvino.save_model's own default
    (True) would quietly store an fp32 artifact's weights in fp16."""
    ov = require("openvino", "openvino")
    ov.save_model(model, str(xml), compress_to_fp16=compress_to_fp16)


def read_onnx(path: Path) -> Any:
    """The ONNX model at PATH as an OpenVINO model (openvino.convert_model), telemetry off."""
    ov = require("openvino", "openvino")
    return ov.convert_model(str(path))


__all__ = ["AUTO_ORDER", "RECIPES", "OvJob", "build", "config_of", "float_layers", "has_attention", "quantize_ir",
           "read_onnx", "run_first", "save"]
