"""The ONNX int8 recipe search: the recipe asked for, or `auto`'s order, judged against the float model. The search
itself (order, judging, what is kept, the budget, the records) is edgekit.quantize.driver's; this module builds and
runs ONNX's candidates (`OnnxCandidates`) and its two float steps (`_Mixed`).

auto: plain, then the float-free recipes (nncf where NNCF is installed, uint8, equalize, equalize+bias, percentile,
mse, entropy, bias), then mixed precision on the best of those: first `mixed16` (the fewest layer groups kept
integer with 16-bit activations), then float layers (`mixed`). The recipes calibrate on part of the
calibration samples and are judged on the rest (edgekit.quantize.search.split). Mixed precision measures each layer
group's own damage (only that group quantized, reusing the base recipe's calibration ranges; a group is a layer
with the layer that feeds it, since onnxruntime keeps a tensor quantized while its producer or a reader is), ranks
the groups by damage per MAC and bisects for the smallest prefix that meets the thresholds, past the 10% of MACs
where the model needs it, up to edgekit.quantize.search.AUTO_FLOAT_CAP (the record says how much). The first
candidate that meets the int8 thresholds is chosen; where none does, the best float-free one is kept and the record
says it missed and how much float did not suffice (validation then judges it on held-out samples, and the diagnosis
says why).

A named recipe (`--int8-recipe plain|equalize|...`) is built on every calibration sample and not judged here:
validation judges every artifact on held-out samples anyway, and judging it in-sample first ran both models on
every calibration sample again (`met` is None, `judged_on` says so).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core.errors import EdgekitError
from edgekit.quantize.driver import Built, Judging, Kept, Outcome, Search, say_missed
from edgekit.quantize.onnx.recipes import ONNX_RECIPES, OnnxRecipe, QuantData, quantize
from edgekit.quantize.records import RecipeChoice
from edgekit.quantize.search import (
    AUTO_FLOAT_CAP,
    NOT_JUDGED,
    Log,
    best,
    error_share,
    input_noise_agreement,
    macs_fraction,
    output_noise,
    ranked_units,
    split,
    through_silu,
)


@dataclass(frozen=True)
class KindSource:
    """What decides a source output's kind besides its values: the model's metadata (Ultralytics' `task`), the
    kinds asked for by output name (--output-kind), and the layout of image-shaped outputs."""

    metadata: dict[str, str] | None = None
    asked: dict[str, str] | None = None
    layout: str = "NCHW"
    mask_thresholds: dict[str, float] | None = None  # --mask-threshold: by output name, "*" for every one

    def __post_init__(self) -> None:  # an output --mask-threshold names is a mask here too, as validation judges it
        from edgekit.fidelity.kinds import asked_with_masks

        object.__setattr__(self, "asked", asked_with_masks(self.asked, self.mask_thresholds) or None)

    def mask_threshold(self, name: str, outputs: int = 1) -> float | None:
        """Where output NAME is cut if it is a probability map: its own threshold, every output's ("*"), or, for a
        model of one output (a converter may rename it), the one threshold given; None: the kind's default."""
        given = self.mask_thresholds or {}
        if name in given or "*" in given:
            return given.get(name, given.get("*"))
        return next(iter(given.values())) if outputs == 1 and len(given) == 1 else None


# nncf second: the strongest float-free recipe measured (issue 29: the trained PP-OCRv4 recognizer 98.7% of CTC steps
# where the others kept 94-95%; the channel-range model 99.4% top-1 where equalize+bias kept 98.8%), and auto stops
# at the first that passes, so it spares the others' time where it does
AUTO_ORDER = ("plain", "nncf", "uint8", "equalize", "equalize+bias", "percentile", "mse", "entropy", "bias")
NAMES = (*ONNX_RECIPES, "mixed", "mixed16")
# ops between two layers that onnxruntime quantizes too: left in float with them, or the tensor stays int8
PASS_THROUGH = ("Relu", "Clip", "Identity", "Flatten", "Reshape", "GlobalAveragePool", "AveragePool", "MaxPool")
MAX_PROBES = 64  # layer groups whose damage is measured one by one (the largest by MACs where there are more)
PROBE_SAMPLES = 32  # damage is a noise power, not a count: fewer samples measure it well enough


def _nncf_here(notes: list[str]) -> bool:
    """Whether NNCF is installed (the `nncf` candidate needs it); where not, a note says auto went on without it."""
    from edgekit.quantize.onnx.nncf_recipe import available

    if available():
        return True
    notes.append("the nncf recipe was not tried: NNCF is not installed (pip install 'edgekit[convert]')")
    return False


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    from edgekit.quantize.onnx.graph import run_batches, session

    return run_batches(session(str(path)), x)[0]


DECIDE_SAMPLES = 64  # a named recipe's detection outputs are recognised on this many calibration samples


def detection_decode(pre: Path, model: Any, x: np.ndarray, kinds: KindSource | None) -> tuple[Any, Any]:
    """(the first output's KindChoice, the DecodeRegion of every detection output) of the float model PRE on X,
    its kinds decided as validation decides them (edgekit.fidelity.decide: the source's metadata, what was asked,
    shapes and values); (None, None) where no output is a detector, or no KINDS were given."""
    if kinds is None:
        return None, None
    from edgekit.fidelity.decide import decide_kinds
    from edgekit.quantize.detect_decode import onnx_decode
    from edgekit.quantize.onnx.graph import run_batches, session

    names = [o.name for o in model.graph.output]
    ys = dict(zip(names, run_batches(session(str(pre)), x), strict=True))
    asked = {n: k for n, k in (kinds.asked or {}).items() if n in ys}
    if len(ys) == 1 and not asked and kinds.asked and len(kinds.asked) == 1:  # one output, renamed by an exporter
        asked = {names[0]: next(iter(kinds.asked.values()))}
    from edgekit.fidelity.landmarks import image_size

    # the input's size, as validation gives it: landmarks are points inside it, anchor presets are of one size
    choices = decide_kinds(ys, kinds.layout, asked, kinds.metadata, image_size(x, kinds.layout))
    found = [n for n in names if choices[n].kind == "detection"]
    if not found:
        return choices[names[0]], None
    return choices[names[0]], onnx_decode(model, found)


Held = tuple[OnnxRecipe, Path, Path, Path]  # a candidate: its recipe, its float model, its int8 model, its folder


class OnnxCandidates:
    """ONNX's side of the int8 search (edgekit.quantize.driver): a candidate for a recipe, quantized by onnxruntime
    (or NNCF) on the calibrating samples and run on the judged ones; mixed precision's steps are `_Mixed`."""

    def __init__(self, pre: Path, data: QuantData, log: Log, searching: bool, kinds: KindSource | None = None
                 ) -> None:
        import onnx

        from edgekit.quantize.onnx.graph import node_macs

        self.pre, self.log, self.kinds = pre, log, kinds
        n = len(data.samples)  # a named recipe is not searched for: calibrated on every sample, not judged here
        calib_idx, judge_idx, self.judged_on = split(n) if searching else (np.arange(n), np.arange(n), NOT_JUDGED)
        self.data = replace(data, samples=data.samples[calib_idx])  # the recipes calibrate on these
        self.x = data.samples[judge_idx]  # and are judged on these
        self.y_ref = _run(pre, self.x) if searching else None
        self.model = onnx.load(str(pre))
        self.macs = node_macs(self.model)
        # a detector's output is judged by its boxes, and its decode stays float in every candidate
        self.choice, self.decode = detection_decode(pre, self.model, self.x if searching else
                                                    data.samples[:DECIDE_SAMPLES], kinds)
        self.mask_threshold = kinds.mask_threshold(self.model.graph.output[0].name, len(self.model.graph.output)) \
            if kinds is not None else None
        self.decode_nodes: tuple[str, ...] = self.decode.nodes if self.decode is not None else ()
        self.decode_heads: tuple[str, ...] = self.decode.head_layers if self.decode_nodes else ()
        if self.decode_nodes:
            log(f"int8: the detection decode after the head's last layers stays float ({len(self.decode_nodes)} "
                f"nodes, {100 * macs_fraction(self.decode_nodes, self.macs):.2f}% of MACs): "
                "one int8 scale cannot hold pixel coordinates and scores")
        self.built = 0  # candidates built: each gets its own folder
        self.needed_over: float | None = None  # mixed precision missed with this share of MACs in float
        self.error_share: float | None = None  # mixed precision's worst layer group's share of its base's error
        # by base candidate's folder: (base recipe, its float model, its data, the layer groups ranked)
        self.rankings: dict[Path, tuple[OnnxRecipe, Path, QuantData, list[tuple[str, ...]]]] = {}

    def judging(self) -> Judging:
        """What the search judges candidates against: the float model's outputs on the judged samples."""
        assert self.y_ref is not None  # only a search judges
        return Judging(self.y_ref, self.y_ref, self.choice, self.mask_threshold,
                       self.kinds.layout if self.kinds is not None else "NCHW")

    def candidate(self, recipe: OnnxRecipe, make: Callable[[Path, QuantData], Path], label: str = "",
                  more: str = "") -> Built[Held]:
        """RECIPE's candidate, written by MAKE (its int8 model's path, its data -> its float model), run on the
        judged samples where searching."""
        work = self.data.work / f"candidate-{self.built}"  # each candidate's float files stay its own
        self.built += 1
        work.mkdir(exist_ok=True)
        out = work / "model.int8.onnx"
        cache = work / "calibration.json"  # this candidate's ranges, for mixed precision to reuse
        if self.data.cache is None:  # onnxruntime reads any file there (checking only its method): a folder kept from
            cache.unlink(missing_ok=True)  # an earlier run would lend that run's model's ranges to this one
        src = make(out, replace(self.data, work=work, cache=self.data.cache or cache))
        nodes, sixteen = recipe.config.float_nodes, recipe.config.int16_nodes
        # layers off plain int8: not float-free for best_float_free, dearer in best
        return Built((recipe, src, out, work), _run(out, self.x) if self.y_ref is not None else None, nodes,
                     len(nodes) + len(sixteen), label, more)

    def build(self, name: str) -> Built[Held] | None:
        """The candidate of the float-free recipe NAME; None where the search goes on without it (NNCF missing, or
        failing on this graph: said in the notes)."""
        searching = self.y_ref is not None
        if name == "nncf" and searching and not _nncf_here(self.data.notes):
            return None
        recipe = ONNX_RECIPES[name](decode=self.decode_nodes, heads=self.decode_heads)
        if name != "nncf" or not searching:  # asked for by name: its failure is the artifact's
            return self.candidate(recipe, lambda out, data: recipe.build(self.pre, out, data))
        try:  # a third-party quantizer that fails on a graph is one candidate less, not a failed search
            return self.candidate(recipe, lambda out, data: recipe.build(self.pre, out, data))
        except EdgekitError as exc:
            self.data.notes.append(f"the nncf candidate failed and was skipped: {exc.message}")
            self.log(f"int8 recipe nncf: failed ({exc.message}); the search goes on without it")
            return None

    def units(self) -> tuple[list[tuple[str, ...]], tuple[str, ...]]:
        """Each quantized layer with the layer that writes its input (through activations), kept in float together;
        then one group of every other node (Add, Concat, pooling ...): with it, the whole model is float."""
        from edgekit.quantize.onnx.diagnose import LAYER_OPS
        from edgekit.quantize.onnx.graph import Graph

        g = Graph(self.model)
        out = []
        for node in self.model.graph.node:
            if node.op_type not in LAYER_OPS:
                continue
            path, prod = [node.name], g.producer.get(node.input[0])
            while prod is not None:
                if prod.op_type in PASS_THROUGH:
                    path.append(prod.name)
                    prod = g.producer.get(prod.input[0])
                elif silu := through_silu(prod, g.producer, lambda n: n.op_type, lambda n: list(n.input)):
                    path += [prod.name, silu[0].name]
                    prod = g.producer.get(silu[1])
                else:
                    break
            if prod is not None and prod.op_type in LAYER_OPS:
                path.append(prod.name)
            out.append(tuple(reversed(path)))
        if len(out) > MAX_PROBES:  # the units holding the most MACs
            keep = set(sorted(range(len(out)), key=lambda k: -sum(self.macs.get(n, 0) for n in out[k]))[:MAX_PROBES])
            out = [u for k, u in enumerate(out) if k in keep]
        decode = set(self.decode_nodes)  # float in every candidate already
        out = [u for u in (tuple(n for n in u if n not in decode) for u in out) if u]
        covered = {n for u in out for n in u} | decode
        return out, tuple(n.name for n in self.model.graph.node if n.name not in covered)

    def ranking(self, held: Held) -> tuple[OnnxRecipe, Path, QuantData, list[tuple[str, ...]]]:
        """(base recipe, its float model, its data, the layer groups ranked by damage per MAC) of the candidate
        HELD: each group measured alone (only it quantized) at the output; once per base, shared by mixed16 and
        mixed."""
        base, src, out, work = held
        if work in self.rankings:
            return self.rankings[work]
        assert self.y_ref is not None  # mixed precision is searched for
        cache = work / "calibration.json"
        data = replace(self.data, work=work, cache=cache if cache.is_file() else None)
        units, rest = self.units()
        everything = tuple(n.name for n in self.model.graph.node)
        if base.config.bias_correct:  # SRC's biases are corrected for every layer: floated ones must not be
            src = base.prepare(self.pre, replace(data, notes=[]))
            data = replace(data, cache=None)
        probe, x, y_ref = work / "probe.int8.onnx", self.x[:PROBE_SAMPLES], self.y_ref[:PROBE_SAMPLES]
        head = getattr(self.choice, "head", None)  # a YOLO output's box and score rows: each on its own scale
        damage: list[tuple[float, tuple[str, ...]]] = []
        for unit in units:  # only UNIT quantized: its own damage at the output
            floated = tuple(n for n in everything if n not in set(unit) or n in self.decode_nodes)
            quantize(src, probe, data, replace(base.config, float_nodes=floated))
            damage.append((output_noise(_run(probe, x), y_ref, head), unit))
        probe.unlink(missing_ok=True)
        self.error_share = error_share(damage, output_noise(_run(out, x), y_ref, head))
        ranked = ranked_units(damage, self.macs) + ([rest] if rest else [])
        worst = sorted(damage, key=lambda d: -d[0])[:3]
        self.log(f"int8 mixed precision: measured {len(units)} layer groups alone on {base.name}; most damaging: "
                 + ", ".join(f"{'+'.join(u)}" for _, u in worst))
        self.rankings[work] = (base, src, data, ranked)
        return self.rankings[work]


class _Mixed:
    """Mixed precision, a float step of the search (edgekit.quantize.driver.FloatStep), on a float-free candidate's
    float model and calibration ranges: the smallest prefix of its ranked layer groups left in float (`mixed`), or
    kept integer with 16-bit activations (`mixed16`)."""

    def __init__(self, fmt: OnnxCandidates, sixteen: bool) -> None:
        self.fmt, self.sixteen = fmt, sixteen
        self.name = "mixed16" if sixteen else "mixed"

    def base(self, kept: Sequence[Kept]) -> int:
        """mixed16 starts from the best candidate onnxruntime quantized (NNCF's quantizer takes no per-tensor 16-bit
        overrides), mixed from the best of all."""
        where = (lambda recipe: recipe.config.tool == "onnxruntime") if self.sixteen else (lambda recipe: True)
        return _best_judged(kept, where)

    def ranked(self, base: Held) -> list[tuple[str, ...]]:
        return self.fmt.ranking(base)[3]

    def build(self, base: Held, nodes: tuple[str, ...]) -> Built[Held]:
        recipe, src, data, _ = self.fmt.ranking(base)
        cand = recipe.with_int16(nodes) if self.sixteen else recipe.with_float(nodes)

        def make(o: Path, d: QuantData) -> Path:
            if cand.config.bias_correct:  # corrected again, for the layers still quantized only
                return cand.build(self.fmt.pre, o, replace(d, cache=None))
            quantize(src, o, replace(d, cache=data.cache), cand.config)  # the base's float model and ranges
            return src

        sixteen = cand.config.int16_nodes
        more = f" ({len(sixteen)} ops with 16-bit activations)" if sixteen else ""
        return self.fmt.candidate(cand, make, f"{self.name}[{recipe.name}]", more)

    def missed(self, share: float) -> None:
        if not self.sixteen:
            self.fmt.needed_over = share
            return
        cap = f"the {100 * AUTO_FLOAT_CAP:.0f}% cap"  # the record's int16 share is the chosen one's: a miss is a note
        self.fmt.data.notes.append(f"mixed int8/int16 missed with {100 * share:.0f}% of MACs on 16-bit activations "
                                   f"(the most under {cap})" if share else "mixed int8/int16 was not tried: the "
                                   f"layer group it would take first is alone over {cap}")


def quantize_onnx(pre: Path, dst: Path, data: QuantData, requested: str, log: Log,
                  float_free: bool = False, kinds: KindSource | None = None, budget: float | None = None
                  ) -> RecipeChoice:
    """Quantize PRE (the pre-processed fp32 ONNX) to DST with the recipe REQUESTED (or auto); the record.

    KINDS: what decides each output's kind (the source's metadata, --output-kind): a detection output's decode
    stays float in every recipe, and the search judges candidates by their boxes. BUDGET: the seconds the search
    may spend starting candidates (--int8-budget; None: no limit)."""
    if requested not in ("auto", *NAMES):  # another target's recipe (planner-checked): noted, auto's order used
        data.notes.append(f"recipe '{requested}' is not one of ONNX's ({', '.join(NAMES)}); auto's order used")
        requested = "auto"
    searching = requested in ("auto", "mixed", "mixed16")
    fmt = OnnxCandidates(pre, data, log, searching, kinds)
    found: Outcome[Held] | None = None
    if searching:
        names = AUTO_ORDER if requested == "auto" else ("plain",)
        # 16-bit activations on the fewest layers first: int8 weights everywhere (about int8's size), integer
        # throughout; float layers only where that misses (an integer-only 8-bit target gets neither: float_free)
        steps = [] if float_free else [_Mixed(fmt, sixteen) for sixteen in (True, False)
                                       if requested != ("mixed" if sixteen else "mixed16")]
        found = Search(fmt.judging(), fmt.macs, log, data.notes, budget).run(fmt, names, steps)
        recipe, src, out, _ = held = found.held
    else:  # a named recipe: built on every calibration sample, judged by validation
        built = fmt.build(requested)
        assert built is not None  # a named recipe is built or raises
        recipe, src, out, _ = held = built.held
    if len(fmt.data.samples) < len(data.samples):  # judged on a held-out part: rebuilt on every calibration sample
        work = data.work / "chosen"
        work.mkdir(exist_ok=True)
        src = recipe.build(pre, dst, replace(data, work=work, cache=None))
    else:
        shutil.copyfile(out, dst)
    t = found.trial if found else None
    noise = input_noise_agreement(lambda x: _run(pre, x), fmt.x, fmt.y_ref) if fmt.y_ref is not None else None
    label = t.recipe if t else requested
    choice = RecipeChoice(
        requested=requested, chosen=label, config=recipe.config.to_dict(), met=found.met if found else None,
        judged_on=fmt.judged_on, float_nodes=recipe.config.float_nodes,
        macs_float_fraction=t.macs_float_fraction if t else 0.0, int16_nodes=recipe.config.int16_nodes,
        macs_int16_fraction=round(macs_fraction(recipe.config.int16_nodes, fmt.macs), 4),
        trials=found.trials if found else (), notes=tuple(dict.fromkeys(data.notes)), float_model=str(src),
        cost=_cost(fmt, dst, pre, label, found.candidates if found else (held,)),
        float_input_noise_agreement=None if noise is None else round(noise, 4), macs_float_needed_over=fmt.needed_over,
        top1_margins=found.judged.margins if found else None, worst_group_error_share=fmt.error_share,
        detection_decode=_decode_record(fmt), budget=found.budget if found else None)
    say_missed(log, choice)
    return choice


def _best_judged(kept: Sequence[Kept], where: Callable[[OnnxRecipe], bool]) -> int:
    """The index in KEPT of `best` among the judged candidates whose recipe WHERE takes (a search judges every one
    it keeps)."""
    among = [(i, (judged, floats, what)) for i, (judged, floats, what) in enumerate(kept)
             if judged is not None and where(what[0])]
    return among[best([t for _, t in among])][0]


def quantize_w8a16(pre: Path, dst: Path, data: QuantData, requested: str, log: Log) -> RecipeChoice:
    """PRE quantized to DST with int8 weights, their biases corrected for the weights' mean shift, and int16
    activations everywhere (the w8a16 precision); the record.

    One recipe, not searched: 16-bit activations have 256 times int8's steps, which is what the int8 recipes
    (other statistics, equalization, float layers) try to make up for; a detector's decode needs no float either
    (one 16-bit scale holds pixel coordinates and scores). Validation judges it, by the w8a16 thresholds."""
    from edgekit.quantize.onnx.recipes import W8A16, Plain

    # biases corrected for the int8 weights' mean shift (edgekit.quantize.onnx.bias_correct): with 16-bit activations
    # what is left is the weights' rounding, and on the trained PP-OCRv4 recognizer (weights per channel already) its
    # mean shift was most of it: 98.7/98.1% of CTC steps kept -> 99.5/99.5% (bench/w8a16_weights.py)
    recipe = Plain(replace(W8A16, bias_correct=True))
    recipe.build(pre, dst, data)
    notes = list(data.notes)
    if requested not in ("plain", "auto"):
        notes.append(f"--int8-recipe {requested} applies to int8 artifacts; w8a16 has one recipe")
    log("w8a16: int8 weights (per channel), biases corrected for their mean shift, int16 activations (MinMax), QDQ")
    return RecipeChoice(requested="w8a16", chosen="w8a16", config=recipe.config.to_dict(), met=None,
                        judged_on=NOT_JUDGED, notes=tuple(dict.fromkeys(notes)),
                        cost={"size_bytes": dst.stat().st_size, "fp32_size_bytes": pre.stat().st_size})


def _decode_record(s: OnnxCandidates) -> dict[str, Any] | None:
    """`int8_recipe.detection_decode`: the detector's decode kept in float (edgekit.quantize.detect_decode)."""
    if s.decode is None:
        return None
    return s.decode.record(macs_fraction(s.decode_nodes, s.macs), "onnxruntime nodes_to_exclude: the decode's "
                           "nodes run in float between the head's int8 layers and the output", {
                               "head_outputs": "float: the head's last layers keep int8 weights and inputs and write "
                               "float (their output QuantizeLinear/DequantizeLinear removed), so the class logits "
                               "are not rounded before the sigmoid and the 0.25 cut",
                               "head_layers_macs_fraction": round(macs_fraction(s.decode_heads, s.macs), 6)})


def _cost(s: OnnxCandidates, dst: Path, pre: Path, chosen: str, tried: Sequence[Held]) -> dict[str, object]:
    """Size and latency of the artifact against plain int8 (plain's candidate among those TRIED, or built now) and
    the fp32 model: what the recipe cost."""
    from edgekit.quantize.onnx.graph import latency_ms
    from edgekit.quantize.search import cost_record

    if chosen == "plain":  # nothing to compare with: no latency measured on the default path
        return {"size_bytes": dst.stat().st_size, "fp32_size_bytes": pre.stat().st_size, "size_delta_bytes": 0,
                "latency_delta_ms": 0.0}
    plain = next((out for recipe, _, out, _ in tried if recipe.name == "plain" and not recipe.config.float_nodes),
                 None)
    if plain is None:  # a named recipe: plain is built to be compared with
        work = s.data.work / "plain-for-cost"
        work.mkdir(exist_ok=True)
        plain = work / "model.int8.onnx"
        ONNX_RECIPES["plain"]().build(s.pre, plain, replace(s.data, work=work, cache=None))
    paths = {"artifact": dst, "plain": plain, "fp32": pre}
    return cost_record({k: p.stat().st_size for k, p in paths.items() if p is not None},
                       {k: latency_ms(p, s.x) for k, p in paths.items() if p is not None})


__all__ = ["AUTO_ORDER", "NAMES", "KindSource", "detection_decode", "quantize_onnx", "quantize_w8a16"]
