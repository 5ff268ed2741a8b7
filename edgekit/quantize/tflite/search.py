"""The TFLite int8 recipe search: the recipe asked for, or `auto`'s order (plain, equalize, equalize+bias,
percentile, mse, bias; for a raw-anchor detector plain, mse, percentile, equalize, equalize+bias, bias; then mixed
precision on the best of them), judged against the float TFLite model, and what the chosen recipe cost. The search
itself (order, judging, what is kept, the budget, the records) is edgekit.quantize.driver's; this module builds and
runs TFLite's candidates (`TfliteCandidates`) and its float step (`_Mixed`).

As for ONNX (edgekit.quantize.onnx.search): when searching, the recipes calibrate on part of the calibration
samples and are judged on the rest (edgekit.quantize.search.split), and the chosen recipe is rebuilt on all of
them. Mixed precision measures each layer group's own damage (only that group quantized: every other op on the
quantizer's denylist), ranks the groups by damage per MAC and bisects for the smallest prefix that meets the
thresholds, past 10% of the MACs where the model needs it, up to edgekit.quantize.search.AUTO_FLOAT_CAP; where
even that misses, the best float-free candidate is kept and the record says how much float did not suffice.
A named recipe is built on every calibration sample and not judged here: validation judges it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.quantize.driver import Built, Judging, Kept, Outcome, Search, say_missed
from edgekit.quantize.records import RecipeChoice
from edgekit.quantize.search import (
    NOT_JUDGED,
    best,
    cost_record,
    error_share,
    input_noise_agreement,
    macs_fraction,
    output_noise,
    ranked_units,
    split,
)
from edgekit.quantize.tflite.heads import detection, every_output, regressor_range, regressor_tensors, score_logits
from edgekit.quantize.tflite.ranges import (
    LOGIT_BOUND,
    REGRESSOR_FLOOR,
    REGRESSOR_MARGIN,
    STATISTICS,
    cut_logit_ranges,
    cut_regressor_ranges,
    with_statistic,
)
from edgekit.quantize.tflite.recipes import (
    BIAS_CORRECTING,
    EQUALIZING,
    MAX_PROBES,
    TFLITE_RECIPES,
    TfliteJob,
    _units,
    _write,
    auto_order,
    calibrated,
    float_model,
    plain,
    quantized,
    saturated_cut,
)
from edgekit.quantize.tflite.run import run_tflite, run_tflite_outputs

PROBE_SAMPLES = 32  # damage is a noise power, not a count: fewer samples measure it well enough
# outputs one child run of mixed precision's probes may hand back at once: the probes run in groups that fit, since a
# YOLOv5n at 640x640 writes 8.6 MB per sample (25,200 x 85 floats), and its 64 probes and base on 32 samples at once
# were 18 GB, which killed the conversion on a 24 GB machine
PROBE_OUTPUT_BYTES = 1 << 30
# label, model, float ops, calibrated model, what the recipe's edits of the float model add to the config
Candidate = tuple[str, bytes, tuple[str, ...], Path | None, dict[str, Any]]


class TfliteCandidates:
    """TFLite's side of the int8 search (edgekit.quantize.driver): a candidate for a recipe, calibrated on the
    calibrating samples, quantized by the TFLite quantizer and run by LiteRT on the judged ones; mixed precision's
    step is `_Mixed`."""

    def __init__(self, job: TfliteJob, searching: bool, float_free: bool = False) -> None:
        from edgekit.tflite.model import read_tflite

        self.all = job
        self._equalizable: int | None = None  # op pairs equalization would scale, counted once where asked
        n = len(job.samples)
        calib_idx, judge_idx, self.judged_on = split(n) if searching else (np.arange(n), np.arange(n), NOT_JUDGED)
        self.job = replace(job, samples=job.samples[calib_idx])  # the recipes calibrate on these
        self.x = job.samples[judge_idx]  # and are judged on these
        self.ref_path = _write(job, "float.tflite", float_model(job))
        self.y_ref = run_tflite([self.ref_path], self.x)[0] if searching else None
        if searching and self.y_ref is None:
            raise RuntimeError("the float TFLite model did not run on the calibration samples")
        fm = read_tflite(self.ref_path)
        self.macs = {fm.tensors[op.outputs[0]].name: fm.op_macs(op) for op in fm.ops if op.outputs}
        # a detector: judged by its boxes, its decode on the quantizer's denylist (edgekit.quantize.detect_decode)
        self.choice, self.decode = detection(fm, self.ref_path, self.y_ref, job)
        # a head whose boxes and scores are separate outputs (MediaPipe's regressors and logits): every one of them
        # is run and judged, as validation judges them; the first output alone said nothing of the scores
        self.head_outputs: tuple[str, ...] = ()
        self.y_head: dict[str, np.ndarray] | None = None
        head = getattr(self.choice, "head", None)
        if searching and self.decode is not None and head is not None and len(head.outputs) > 1:
            got = run_tflite_outputs([self.ref_path], self.x)[0]
            if got is not None and set(head.outputs) <= set(got):
                self.head_outputs = tuple(head.outputs)
                self.y_head = {n: got[n] for n in self.head_outputs}
        # several outputs, no detector among them (a landmark model's points, presence, handedness, world points):
        # every one is run and judged by its own kind, by name, as validation judges them
        self.choices: dict[str, Any] | None = None
        if searching and self.decode is None and len(fm.outputs) > 1:
            got = run_tflite_outputs([self.ref_path], self.x)[0]
            self.choices = every_output(fm, got, job) if got is not None else None
            if got is not None and self.choices is not None:
                self.head_outputs = tuple(got)
                self.y_head = dict(got)
                job.log(f"int8 recipe search: judges each of the {len(got)} outputs by its kind ("
                        + ", ".join(f"{n} {c.kind}" for n, c in self.choices.items()) + ")")
        if self.decode is not None and self.decode.nodes:
            job.score_logits = self.job.score_logits = score_logits(fm, head)
            regs = regressor_tensors(fm, head)
            bound = regressor_range(self.ref_path, self.job.samples, head) if regs and not job.feeds else None
            if bound is not None:
                job.regressors, job.regressor_bound = self.job.regressors, self.job.regressor_bound = regs, bound
        self.mask_threshold = job.kinds.mask_threshold(fm.tensors[fm.outputs[0]].name, len(fm.outputs)) \
            if job.kinds is not None else None
        # the outputs' layout (the SavedModel's, NHWC from onnx2tf): judged along it, not as NCHW (a P-Net's
        # (N, 27, 27, 2) face map was compared along its rows: 44% "per-pixel agreement" for every candidate)
        self.layout = job.kinds.layout if job.kinds is not None else "NCHW"
        if self.decode is not None and self.decode.nodes:
            job.decode = self.job.decode = self.decode.nodes
            if not float_free:  # an integer-only target runs the heads on the TPU: int8, the decode after them float
                job.decode_heads = self.job.decode_heads = self.decode.head_layers
            job.log(f"int8: the detection decode after the head's last layers stays float ({len(job.decode)} ops, "
                    f"{100 * macs_fraction(job.decode, self.macs):.2f}% of MACs): one int8 scale cannot hold pixel "
                    "coordinates and scores")
        self.built = 0  # candidates built: each gets its own file
        self.needed_over: float | None = None  # mixed precision missed with this share of MACs in float
        self.error_share: float | None = None  # mixed precision's worst layer group's share of its base's error

    def judging(self) -> Judging:
        """What the search judges candidates against: the float model's outputs (a head's, by name) on the judged
        samples."""
        assert self.y_ref is not None  # only a search judges
        return Judging(self.y_head if self.y_head is not None else self.y_ref, self.y_ref,
                       self.choices if self.choices is not None else self.choice, self.mask_threshold, self.layout)

    def candidate(self, held: Candidate, label: str = "") -> Built[Candidate]:
        """The candidate HELD (its model's bytes among them), run by LiteRT on the judged samples."""
        path = _write(self.job, f"candidate-{self.built}.tflite", held[1])
        self.built += 1
        y = self.run([path], self.x)[0]
        path.unlink(missing_ok=True)
        return Built(held, y, held[2], label=label, failure="LiteRT could not run it")

    def build(self, name: str) -> Built[Candidate] | None:
        if name in EQUALIZING and self.nothing_to_equalize():
            same = "plain" if name == "equalize" else name.replace("equalize+", "")
            words = (f"{name} skipped: no op pair of this model can be equalized (its convolutions' outputs pass "
                     f"through activations no scale passes through, such as SiLU, or feed more than one op), so it "
                     f"would be {same} again")
            self.job.notes.append(words)
            self.job.log(f"int8 recipe {words}")
            return None
        blob, cal_path, edits = build(self.job, name, ())
        return self.candidate((name, blob, (), cal_path, edits))

    def nothing_to_equalize(self) -> bool:
        """Whether cross-layer equalization finds no op pair in the float model (asked once)."""
        if self._equalizable is None:
            from edgekit.quantize.tflite.equalize import equalizable

            self._equalizable = equalizable(self.job.fixed or float_model(self.job))
        return self._equalizable == 0

    def run(self, paths: list[Path], x: np.ndarray) -> list[Any]:
        """Each model's outputs on X as the search judges them: the head's outputs by name where it has several
        (None for a model LiteRT could not run or that lacks one), else the first output."""
        if not self.head_outputs:
            return run_tflite(paths, x)
        assert self.y_head is not None
        shapes = {n: tuple(self.y_head[n].shape[1:]) for n in self.head_outputs}
        return [None if y is None else _named(y, shapes) for y in run_tflite_outputs(paths, x)]

    def quantized(self, cal: bytes, denylist: tuple[str, ...]) -> bytes | None:
        """CAL quantized with DENYLIST in float; None (noted) where the quantizer refuses: with every op that reads
        the input in float, int8 I/O cannot be set ("Model input is not dequantized")."""
        try:
            return quantized(self.job, cal, denylist)
        except ValueError as exc:
            note = f"mixed precision: the TFLite quantizer refused {len(denylist)} ops in float ({exc})"
            if note not in self.job.notes:
                self.job.notes.append(note)
            return None


class _Mixed:
    """Mixed precision, the float step of the search (edgekit.quantize.driver.FloatStep): selective quantization on
    the best float-free candidate's calibration: each layer group's damage alone, ranked, the smallest prefix left
    on the quantizer's denylist."""

    name = "mixed"

    def __init__(self, fmt: TfliteCandidates) -> None:
        self.fmt = fmt
        self.cal: dict[str, tuple[Path, bytes]] = {}  # by base: its calibrated float model and its bytes

    def base(self, kept: Sequence[Kept]) -> int:
        return best(kept)

    def ranked(self, base: Candidate) -> list[tuple[str, ...]]:
        """BASE's layer groups, each measured alone (only it quantized: every other op on the denylist), ranked."""
        s = self.fmt
        assert s.y_ref is not None  # only a search mixes
        name, base_blob, _, cal_path, _ = base
        if cal_path is None:
            cal_path = _write(s.job, "plain.calibrated.tflite", calibrated(s.job))
        cal = cal_path.read_bytes()
        self.cal[name] = (cal_path, cal)
        units = _units(cal_path)
        if len(units) > MAX_PROBES:
            units = sorted(units, key=lambda u: -sum(s.macs.get(n, 0) for n in u))[:MAX_PROBES]
        everything, readers = _op_names(cal_path)
        if s.job.io_dtype != "float32":  # int8 input: "Model input is not dequantized" with all its readers float
            everything = tuple(n for n in everything if n not in readers)
            units = [tuple(n for n in u if n not in readers) for u in units]
            units = [u for u in units if u]
        covered = {n for u in units for n in u}
        rest = tuple(n for n in everything if n not in covered)
        blobs = [s.quantized(cal, tuple(n for n in everything if n not in set(u))) for u in units]  # only U int8
        paths = [_write(s.job, f"probe-{i}.tflite", b) for i, b in enumerate([*blobs, base_blob]) if b is not None]
        x = s.x[:PROBE_SAMPLES]
        y_ref = {k: v[:PROBE_SAMPLES] for k, v in s.y_head.items()} if s.y_head is not None else \
            s.y_ref[:PROBE_SAMPLES]
        head = getattr(s.choice, "head", None)  # a YOLO output's box and score rows: each on its own scale
        noise = iter(_probe_noise(s, paths, x, y_ref, head))  # each probe's, then the base's (every group quantized)
        damage = [(next(noise) if b is not None else float("inf"), u) for b, u in zip(blobs, units, strict=True)]
        whole = next(noise)
        for p in paths:
            p.unlink(missing_ok=True)
        ranked = ranked_units(damage, s.macs) + ([rest] if rest else [])
        if whole != float("inf"):
            s.error_share = error_share(damage, whole)
        s.job.log(f"int8 mixed precision: measured {len(units)} layer groups alone on {name}; most damaging: "
                  + ", ".join(f"{len(u)} ops ending {u[-1]}" for _, u in sorted(damage, key=lambda d: -d[0])[:3]))
        return ranked

    def build(self, base: Candidate, nodes: tuple[str, ...]) -> Built[Candidate] | None:
        name, _, _, _, edits = base
        cal_path, cal = self.cal[name]
        blob = self.fmt.quantized(cal, nodes)
        if blob is None:
            return None
        label = f"mixed[{name}]"
        return self.fmt.candidate((label, blob, nodes, cal_path, edits), label)

    def missed(self, share: float) -> None:
        self.fmt.needed_over = share


def _named(y: dict[str, np.ndarray], shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray] | None:
    """A candidate's outputs Y (by its tensor names, in its graph's order) under the float model's output names
    (SHAPES: each one's shape past the batch, in the float graph's order): by name, or else by place where the count
    and every shape agree (None where neither does). The quantizer keeps the float model's outputs in their order,
    but with int8 outputs it renames them ('Identity' -> 'Identity1' in MediaPipe's hand model), and such a
    candidate was judged as one LiteRT could not run."""
    if set(shapes) <= set(y):
        return {n: y[n] for n in shapes}
    got = list(y.values())
    if len(got) != len(shapes) or any(a.shape[1:] != want for a, want in zip(got, shapes.values(), strict=True)):
        return None
    return dict(zip(shapes, got, strict=True))


def probe_groups(count: int, per_model: int, limit: int | None = None) -> list[range]:
    """COUNT models' indices in groups whose outputs (PER_MODEL bytes each) stay within LIMIT (PROBE_OUTPUT_BYTES)
    together: one child run per group, at least one model each."""
    size = max(1, (PROBE_OUTPUT_BYTES if limit is None else limit) // max(per_model, 1))
    return [range(i, min(i + size, count)) for i in range(0, count, size)]


def _probe_noise(s: TfliteCandidates, paths: list[Path], x: np.ndarray, y_ref: Any, head: Any) -> list[float]:
    """Each model's output noise against Y_REF on X (inf for one LiteRT could not run), run in groups whose outputs
    fit PROBE_OUTPUT_BYTES, each group's outputs dropped once measured."""
    per_model = sum(v.nbytes for v in y_ref.values()) if isinstance(y_ref, dict) else int(np.asarray(y_ref).nbytes)
    out: list[float] = []
    for group in probe_groups(len(paths), per_model):
        out += [output_noise(y, y_ref, head) if y is not None else float("inf")
                for y in s.run([paths[i] for i in group], x)]
    return out


def _decode_record(s: TfliteCandidates, float_free: bool, moved: int = 0) -> dict[str, Any] | None:
    """`int8_recipe.detection_decode` of a TFLite artifact: what the quantizer's denylist kept in float."""
    if s.decode is None:
        return None
    where = ("the TFLite quantizer's denylist: the decode's ops stay float after the head's int8 layers (a "
             "DEQUANTIZE between), and the outputs are float32")
    heads = s.decode.head_layers
    cut = {"score_logits_cut": {"tensors": list(s.job.score_logits), "bound": LOGIT_BOUND, "why": (
        "the score logits' int8 range is cut to +-16, where the sigmoid is flat (a score within 1.2e-7 of 0 or 1): "
        "over the whole range (MediaPipe's pose detector: -385 to 0.36) one int8 step is 1.5 logits")}} \
        if s.job.score_logits else {}
    if s.job.regressors and s.job.regressor_bound is not None:
        cut["regressors_cut"] = {"tensors": list(s.job.regressors), "bound": round(s.job.regressor_bound, 3), "why": (
            f"the regressors' int8 range is cut to {REGRESSOR_MARGIN:g} times their largest value at the anchors "
            f"scored over {REGRESSOR_FLOOR:g} logits on the calibration samples: the anchors a detector scores near 0 "
            "are never decoded and can hold huge values (MediaPipe's face detector: up to 10,529 px on a 128 px "
            "input), which made one int8 step of 60 px")}
    if float_free:
        where += ("; on an integer-only target such as the Edge TPU these float ops run on the CPU after the TPU "
                  "part (the compiler maps ops in order up to the first float one), so the ops are ordered to run "
                  f"every int8 op first ({moved} ops moved, edgekit.edgetpu.order)")
        return s.decode.record(macs_fraction(s.decode.nodes, s.macs), where, {
            "head_outputs": "int8: on an integer-only target the head's last layers run on the TPU, so they keep "
            "int8 outputs; only the decode after them is float",
            "head_layers_macs_fraction": round(macs_fraction(heads, s.macs), 6), "ops_moved": moved, **cut})
    return s.decode.record(macs_fraction(s.decode.nodes, s.macs), where, {
        "head_outputs": "float: the head's last layers are on the denylist too (TFLite has no int8 layer with a float "
        "output), so the class logits are not rounded before the sigmoid and the 0.25 cut (mini DFL detector: box "
        "recall 92.0% with the decode alone in float, 97.2% with these layers too)",
        "head_layers_macs_fraction": round(macs_fraction(heads, s.macs), 6), **cut})


def build(job: TfliteJob, base: str, nodes: tuple[str, ...]) -> tuple[bytes, Path | None, dict[str, Any]]:
    """The int8 model of recipe BASE (plain | equalize | equalize+bias | bias | percentile | mse) with NODES in
    float, calibrated on JOB's samples; the calibrated float model it was quantized from (None for the converter's
    own plain path); and what BASE's edits of the float model add to the recipe's config."""
    if base == "plain" and job.fixed is None and not nodes and not job.decode:
        return plain(job), None, {}
    edited = job.fixed
    edits: dict[str, Any] = {}
    if base in EQUALIZING:
        from edgekit.quantize.tflite.equalize import equalize_tflite

        edited, words = equalize_tflite(edited or float_model(job), job.samples)
        job.notes.append(words)
    if base in BIAS_CORRECTING:  # on the equalized model where both: its own weights' shift
        from edgekit.quantize.tflite.bias import correct_biases

        single = (b for b in job.representative() if isinstance(b, list))  # the recipes past plain take one input
        edited, done = correct_biases(edited or float_model(job), single)
        job.notes.append(done.words())
        edits = {"bias_corrected_layers": list(done.corrected), "bias_skipped_layers": list(done.no_bias)}
    if base == "bias-shift":  # every layer's output-mean shift in the int8 model, measured and removed in rounds
        from edgekit.quantize.tflite.bias_shift import correct_shifts

        edited, shifted = correct_shifts(job, edited or float_model(job))
        job.notes.append(shifted.words())
        edits = {"bias_shift_layers": list(shifted.corrected), "bias_shift_largest": list(shifted.largest)}
    cal = calibrated(job, edited)  # a changed float model gets its own calibration (edgekit.tflite.cache keys it)
    if base in STATISTICS:  # the calibrator's min/max replaced by the statistic, measured on the same float model
        cal, words = with_statistic(cal, edited or float_model(job), base, job.representative())
        job.notes.append(words)
        cal = saturated_cut(job, cal)  # the statistic set every range again
    if job.score_logits:  # after any statistic: the cut is the sigmoid's, not the data's
        cal, _ = cut_logit_ranges(cal, job.score_logits)
    if job.regressors and job.regressor_bound is not None:  # and the decoded anchors', not every anchor's
        cal, _ = cut_regressor_ranges(cal, job.regressors, job.regressor_bound)
    cal_path = _write(job, f"{base}.calibrated.tflite", cal)
    return quantized(job, cal_path.read_bytes(), nodes), cal_path, edits


def _op_names(path: Path) -> tuple[tuple[str, ...], set[str]]:
    """Every op's name (its first output tensor's), and those of the ops reading a model input."""
    from edgekit.tflite.model import read_tflite

    m = read_tflite(path)
    names = tuple(dict.fromkeys(m.tensors[op.outputs[0]].name for op in m.ops if op.outputs))
    readers = {m.tensors[op.outputs[0]].name for op in m.ops if op.outputs and set(m.inputs) & set(op.inputs)}
    return names, readers


def quantize_tflite(job: TfliteJob, requested: str, float_free: bool = False, budget: float | None = None
                    ) -> tuple[bytes, RecipeChoice]:
    """The int8 model by the recipe REQUESTED (or auto), and the record of how it was chosen. BUDGET: the seconds
    the search may spend starting candidates (--int8-budget; None: no limit)."""
    from edgekit.quantize.tflite.w8a16 import auto_notes

    auto_notes(job, requested)  # auto's record says what ONNX's auto would add (mixed16) and why TFLite does not
    if requested not in ("auto", *TFLITE_RECIPES):
        job.notes.append(f"recipe '{requested}' exists for ONNX only; TFLite used auto's recipes instead")
        requested = "auto"
    if requested == "mixed" and float_free:
        job.notes.append("mixed precision leaves layers in float, which the Edge TPU cannot run: not tried")
    fixes = _edgetpu_fixes(job) if job.edgetpu_fixes else None
    rewritten: dict[str, int] = {}
    if fixes is None:  # the rewrites every int8 model needs (the Edge TPU's include them)
        _range_fixes(job)
        if not float_free:  # a CPU target: what XNNPACK leaves to LiteRT in int8, as ops it takes
            rewritten = _xnnpack_rewrites(job)
    searching = requested in ("auto", "mixed")
    s = TfliteCandidates(job, searching, float_free)
    found: Outcome[Candidate] | None = None
    if searching:
        names = auto_order(s.choice) if requested == "auto" else ("plain",)
        found = Search(s.judging(), s.macs, job.log, s.job.notes, budget).run(s, names, [] if float_free else
                                                                                 [_Mixed(s)])
        label, blob, nodes, cal_path, edits = found.held
        if len(s.job.samples) < len(job.samples):  # judged on a held-out part: rebuilt on every calibration sample
            blob, cal_path, edits = build(job, label.split("[")[-1].rstrip("]"), nodes)
    else:  # a named recipe, on every calibration sample: validation judges it
        label, nodes = requested, ()
        blob, cal_path, edits = build(job, requested, nodes)
    t = found.trial if found else None  # the search's record of the candidate kept
    base = label.split("[")[-1].rstrip("]")
    if cal_path is None:  # the diagnosis re-quantizes a calibrated twin with the debugger's checks
        cal_path = _write(job, "plain.calibrated.tflite", calibrated(job))
    if fixes is not None and fixes.get("applied"):
        fixes["preflight_after"] = _preflight_counts(job, blob)
        job.log(f"Edge TPU fixes: {fixes['words']}; predicted ops on the TPU {_counts_words(fixes['preflight_before'])}"
                f" -> {_counts_words(fixes['preflight_after'])}")
    moved = 0
    if float_free and job.decode:  # the float decode after every int8 op, so Edge TPU mapping does not stop early
        from edgekit.edgetpu.order import float_ops_last

        blob, moved = float_ops_last(blob)
    _refuse_absurd_ranges(job, blob)
    _refuse_float_weights(job, blob)
    noise = input_noise_agreement(lambda x: run_tflite([s.ref_path], x)[0], s.x, s.y_ref) \
        if s.y_ref is not None else None  # (a search's: it ran the float model)
    choice = RecipeChoice(
        requested=requested, chosen=label, config={"recipe": base, "denylisted_nodes": list(nodes),
                                                   "decode_nodes": list(job.decode),
                                                   "decode_head_nodes": list(job.decode_heads),
                                                   "io_dtype": job.io_dtype, "calibrate": _statistic(base),
                                                   "equalize": base in EQUALIZING,
                                                   "bias_correct": base in BIAS_CORRECTING,
                                                   "xnnpack_rewrites": rewritten, **edits},
        met=found.met if found else None, judged_on=s.judged_on.replace("fp32 model", "fp32 TFLite model"),
        float_nodes=nodes, macs_float_fraction=t.macs_float_fraction if t else 0.0,
        trials=found.trials if found else (), notes=tuple(dict.fromkeys(job.notes)), float_model=str(cal_path),
        edgetpu_fixes=fixes, cost=_cost(s, blob, label, found.candidates if found else ()),
        float_input_noise_agreement=None if noise is None else round(noise, 4), macs_float_needed_over=s.needed_over,
        top1_margins=found.judged.margins if found else None, worst_group_error_share=s.error_share,
        detection_decode=_decode_record(s, float_free, moved), budget=found.budget if found else None)
    say_missed(job.log, choice)
    return blob, choice


def _statistic(base: str) -> str:
    """The activation ranges' statistic of recipe BASE, as the ONNX recipes' `calibrate` names it."""
    return base if base in STATISTICS else "minmax"


def _cost(s: TfliteCandidates, blob: bytes, label: str, tried: Sequence[Candidate]) -> dict[str, Any]:
    """Size and latency of the artifact against plain int8 (plain's candidate among those TRIED, or built now) and
    the fp32 model."""
    if label == "plain":  # nothing to compare with: no latency measured on the default path
        return {"size_bytes": len(blob), "fp32_size_bytes": s.ref_path.stat().st_size, "size_delta_bytes": 0,
                "latency_delta_ms": 0.0}
    plain_blob = next((k[1] for k in tried if k[0] == "plain"), None) or build(s.job, "plain", ())[0]
    paths = {"artifact": _write(s.job, "cost-artifact.tflite", blob),
             "plain": _write(s.job, "cost-plain.tflite", plain_blob), "fp32": s.ref_path}
    lat = run_tflite(list(paths.values()), s.x[:1], latency=True)
    return cost_record({k: p.stat().st_size for k, p in paths.items()},
                       {k: float(v[0]) if v is not None else float("nan") for k, v in zip(paths, lat, strict=True)})


def _edgetpu_fixes(job: TfliteJob) -> dict[str, Any]:
    """Apply the Edge TPU graph fixes to the float model (job.fixed); the pre-flight of plain int8 without them."""
    from edgekit.edgetpu.fixes import apply_fixes

    fixed, report = apply_fixes(float_model(job))
    out: dict[str, Any] = {"applied": dict(report.applied), "words": report.words()}
    if report.applied:
        job.fixed = fixed
        out["preflight_before"] = _preflight_counts(job, plain(job))
    return out


def _range_fixes(job: TfliteJob) -> None:
    """Rewrite what would put an infinity into an int8 range (edgekit.quantize.tflite.int8_ranges); say what changed."""
    from edgekit.quantize.tflite.int8_ranges import range_fixes

    fixed, applied = range_fixes(float_model(job))
    if applied:
        job.fixed = fixed
        job.notes.append("int8 range fixes before calibration: " + ", ".join(f"{n} x {k}" for k, n in applied.items())
                         + " (a pad with -inf would make the range infinite)")


def _xnnpack_rewrites(job: TfliteJob) -> dict[str, int]:
    """The float model (job.fixed) with the ops XNNPACK leaves to LiteRT in int8 rewritten into ops it takes
    (edgekit.quantize.tflite.xnnpack); what changed, said in the notes."""
    from edgekit.quantize.tflite.xnnpack import xnnpack_rewrites

    fixed, applied = xnnpack_rewrites(job.fixed or float_model(job))
    if applied:
        job.fixed = fixed
        words = ("rewritten so that LiteRT's XNNPACK delegate runs them in int8 (it takes them in float only, and "
                 "the int8 model ran in pieces, several times slower than the float one): "
                 + ", ".join(f"{k} x {n}" for k, n in applied.items()))
        job.notes.append(words)
        job.log(f"int8: {words}")
    return applied


def _refuse_absurd_ranges(job: TfliteJob, blob: bytes) -> None:
    """ConversionError naming the tensor and the op that brought it, where the int8 model has a range its values do
    not fill; a note where the range is the model's own (grown layer by layer), which validation then judges."""
    from edgekit.core.errors import ConversionError
    from edgekit.quantize.tflite.int8_ranges import absurd_ranges, absurd_words, range_cause

    path = _write(job, "range-check.tflite", blob)
    found = absurd_ranges(path)
    if not found:
        return
    cause = range_cause(path, found)
    if not cause.refused:
        job.notes.append(cause.note())
        return
    raise ConversionError(absurd_words(found, cause), hint=cause.hint(), step="tflite_convert", op=found[0].tensor)


def _refuse_float_weights(job: TfliteJob, blob: bytes) -> None:
    """ConversionError naming the layer, where the int8 model has one LiteRT cannot load for its float weights."""
    from edgekit.quantize.tflite.loadable import refuse_float_weights

    refuse_float_weights(_write(job, "weights-check.tflite", blob))


def _preflight_counts(job: TfliteJob, blob: bytes) -> dict[str, Any]:
    from edgekit.edgetpu.preflight import preflight

    pf = preflight(_write(job, "preflight.tflite", blob))
    return {"ops_on_tpu": pf.ops_on_tpu, "ops_total": pf.ops_total, "macs_on_tpu_fraction": pf.macs_on_tpu_fraction}


def _counts_words(c: dict[str, Any]) -> str:
    return f"{c['ops_on_tpu']} of {c['ops_total']}"


__all__ = ["build", "quantize_tflite"]
