"""The ONNX int8 recipe search: the recipe asked for, or `auto`'s order, judged against the float model.

auto: plain, then the float-free recipes (equalize, equalize+bias, percentile, entropy, bias), then
mixed precision on the best of those. Mixed precision measures, for each layer, what leaving it and
the layer that feeds it in float gains at the model's output (onnxruntime keeps a tensor quantized
while its producer or a reader is quantized, so a layer alone rarely helps), reusing the base recipe's
calibration ranges; then it tries growing sets of the most rewarding layers, smallest first. The
first candidate that meets the int8 thresholds is chosen; where none does, the best one is kept and
the record says it missed (validation then judges it on held-out samples, and the diagnosis says why).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from edgekit.errors import UsageError
from edgekit.quantize.onnx_recipes import ONNX_RECIPES, OnnxRecipe, QuantData, quantize
from edgekit.quantize.records import RecipeChoice, RecipeTrial
from edgekit.quantize.search import Judged, Log, best, float_sets, judge, macs_fraction, say, trial

AUTO_ORDER = ("plain", "equalize", "equalize+bias", "percentile", "entropy", "bias")
NAMES = (*ONNX_RECIPES, "mixed")
# ops between two layers that onnxruntime quantizes too: left in float with them, or the tensor stays int8
PASS_THROUGH = ("Relu", "Clip", "Identity", "Flatten", "Reshape", "GlobalAveragePool", "AveragePool", "MaxPool")
MAX_PROBES = 16  # layers whose float gain is measured one by one (the cheap ranking picks them)


def check_name(requested: str) -> None:
    if requested not in ("auto", *NAMES):
        from edgekit.registry import check_choice

        check_choice(requested, ("auto", *NAMES), "int8 recipe")
        raise UsageError(f"Unknown int8 recipe '{requested}'.")


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    from edgekit.quantize.onnx_graph import run_batches, session

    return run_batches(session(str(path)), x)[0]


class _Search:
    def __init__(self, pre: Path, data: QuantData, log: Log) -> None:
        import onnx

        from edgekit.quantize.onnx_graph import node_macs

        self.pre, self.data, self.log = pre, data, log
        self.y_ref = _run(pre, data.samples)
        self.model = onnx.load(str(pre))
        self.macs = node_macs(self.model)
        # (judged, float layers, (recipe, float model, int8 model, its folder))
        self.kept: list[tuple[Judged, int, tuple[OnnxRecipe, Path, Path, Path]]] = []
        self.trials: list[RecipeTrial] = []

    def candidate(self, label: str, recipe: OnnxRecipe, make: Callable[[Path, QuantData], Path]) -> bool:
        t0 = time.perf_counter()
        work = self.data.work / f"candidate-{len(self.kept)}"  # each candidate's float files stay its own
        work.mkdir(exist_ok=True)
        out = work / "model.int8.onnx"
        src = make(out, replace(self.data, work=work, cache=self.data.cache or work / "calibration.json"))
        judged = judge(self.y_ref, _run(out, self.data.samples))
        nodes = recipe.config.float_nodes
        self.trials.append(trial(label, judged, len(nodes), macs_fraction(nodes, self.macs), t0))
        say(self.log, label, judged, len(nodes))
        self.kept.append((judged, len(nodes), (recipe, src, out, work)))
        return judged.passed

    def try_recipe(self, name: str) -> bool:
        recipe = ONNX_RECIPES[name]()
        return self.candidate(name, recipe, lambda out, data: recipe.build(self.pre, out, data))

    def units(self) -> list[tuple[str, ...]]:
        """Each quantized layer with the layer that writes its input (through activations): kept in float together."""
        from edgekit.quantize.diagnose_onnx import LAYER_OPS
        from edgekit.quantize.onnx_graph import Graph

        g = Graph(self.model)
        out = []
        for node in self.model.graph.node:
            if node.op_type not in LAYER_OPS:
                continue
            path, prod = [node.name], g.producer.get(node.input[0])
            while prod is not None and prod.op_type in PASS_THROUGH:
                path.append(prod.name)
                prod = g.producer.get(prod.input[0])
            if prod is not None and prod.op_type in LAYER_OPS:
                path.append(prod.name)
            out.append(tuple(reversed(path)))
        return out

    def mixed(self, base_index: int) -> bool:
        """Mixed precision on candidate BASE_INDEX's float model and calibration ranges."""
        from edgekit.quantize.diagnose import sqnr_db

        _, _, (base, src, out, work) = self.kept[base_index]
        cache = work / "calibration.json"
        data = replace(self.data, work=work, cache=cache if cache.is_file() else None)
        base_db = sqnr_db(self.y_ref, _run(out, self.data.samples))
        units = self.units()
        if len(units) > MAX_PROBES:  # probe the units holding the most MACs' worth of layers first
            units = sorted(units, key=lambda u: -sum(self.macs.get(n, 0) for n in u))[:MAX_PROBES]
        gains: list[tuple[float, tuple[str, ...]]] = []
        probe = work / "probe.int8.onnx"
        for unit in units:
            quantize(src, probe, data, replace(base.config, float_nodes=unit))
            gains.append((sqnr_db(self.y_ref, _run(probe, self.data.samples)) - base_db, unit))
        probe.unlink(missing_ok=True)
        ranked = [unit for gain, unit in sorted(gains, key=lambda g: -g[0]) if gain > 0]
        self.log(f"int8 mixed precision: probed {len(units)} layer groups on {base.name}; most rewarding: "
                 + ", ".join(f"{'+'.join(u)} ({gain:+.1f} dB)" for gain, u in sorted(gains, key=lambda g: -g[0])[:3]))
        for nodes in float_sets(ranked, self.macs):
            recipe = base.with_float(nodes)

            def make(o: Path, d: QuantData, r: OnnxRecipe = recipe) -> Path:
                quantize(src, o, replace(d, cache=data.cache), r.config)  # the base's float model and ranges
                return src

            if self.candidate(f"mixed[{base.name}]", recipe, make):
                return True
        return False


def quantize_onnx(pre: Path, dst: Path, data: QuantData, requested: str, log: Log,
                  float_free: bool = False) -> RecipeChoice:
    """Quantize PRE (the pre-processed fp32 ONNX) to DST with the recipe REQUESTED (or auto); the record."""
    check_name(requested)
    s = _Search(pre, data, log)
    names = AUTO_ORDER if requested == "auto" else ("plain",) if requested == "mixed" else (requested,)
    met = any(s.try_recipe(name) for name in names)  # any() stops at the first that meets the thresholds
    if not met and requested in ("auto", "mixed") and not float_free:
        met = s.mixed(best([(j, n, r) for j, n, r in s.kept]))
    pick = len(s.kept) - 1 if met else best([(j, n, r) for j, n, r in s.kept])
    _, _, (recipe, src, out, _) = s.kept[pick]
    shutil.copyfile(out, dst)
    t = s.trials[pick]
    if not met:
        log(f"int8: no recipe met the thresholds on the calibration samples; keeping the best, {t.recipe}")
    return RecipeChoice(
        requested=requested, chosen=t.recipe, config=recipe.config.to_dict(), met=met,
        judged_on=f"{len(data.samples)} calibration samples against the fp32 model",
        float_nodes=recipe.config.float_nodes, macs_float_fraction=t.macs_float_fraction, trials=tuple(s.trials),
        notes=tuple(dict.fromkeys(data.notes)), float_model=str(src))


__all__ = ["AUTO_ORDER", "NAMES", "check_name", "quantize_onnx"]
