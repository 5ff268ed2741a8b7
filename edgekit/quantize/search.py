"""What the recipe search shares across formats: the split of the calibration samples, judging a candidate
against the float model, the mixed-precision search over ranked layers, and the choice.

A candidate is judged by `edgekit.validation.artifact.compare` with the int8 thresholds, against the float model, on
a held-out part of the calibration samples (`split`): the recipes calibrate on the rest. Judged on the
samples it was calibrated on, a candidate looked a few points better than on held-out data (MobileNetV2,
issue 9). The search must not see the validation inputs: those judge the chosen artifact afterwards, as
every artifact is judged.

Mixed precision (`smallest_float_set`): every layer group is first measured alone (quantized with the rest
of the model in float: its own damage at the output, as noise power), ranked by damage per MAC, and the
smallest prefix of that ranking that meets the thresholds is found by bisection: a handful of candidates,
not one per layer. Past the 10% of MACs the issue calls cheap it goes on, up to AUTO_FLOAT_CAP, and records
the float share the model needed; where even that misses, auto keeps the best float-free candidate and records
the share that missed (`RecipeChoice.macs_float_needed_over`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgekit.quantize.records import MACS_BUDGET, MACS_CAP, RecipeTrial

AUTO_MACS_TARGET = MACS_BUDGET  # what the issue calls cheap: at most this share of MACs left in float
# The most mixed precision may leave in float. Without a cap the bisection went on to the whole model and auto
# shipped "int8" artifacts with 100% of their MACs in float (issue 9 bench: ResNet-10 and the trained MobileNetV2
# 0.35, ONNX): recorded honestly, useless as int8 (the fp32 model's speed at best, with quantize/dequantize pairs
# around it). Past half the MACs, int8 no longer buys the bulk of its speed or size: keep a float-free recipe and
# say how much float the thresholds would need.
AUTO_FLOAT_CAP = MACS_CAP
JUDGE_SHARE = 2  # every second calibration sample judges the candidates, the others calibrate them
MIN_SPLIT = 48  # fewer calibration samples than this: calibrate and judge on all of them (noted)
# at most this many judge: one standard error of an agreement near 97% is 0.5 points on 1,000 samples, 1.7 on 100
# (the default --calib-size of 200 judges on 100). It was 200, and no --calib-size could give the search more: at
# the bound of the later candidates (2 sigma) a candidate then had to agree on 199 of 200 to pass, on any model
MAX_JUDGE = 1000
# top-1 agreement is a count on few samples: the search asks that its one-sigma (Wilson) lower bound meet the
# threshold, so a candidate that passes by luck does not end the search (plain int8 on a trained MobileNetV2:
# 66 of 67 held-out calibration samples, 94% of 200 validation samples)
MARGIN_Z = 1.0
# ... and the more candidates it has tried, the stricter the bound (`margin_z`): the first of several noisy
# judgements to clear a one-sigma bound is mostly the luckiest one. Measured (issue 9 bench, ResNet-10 ONNX): uint8
# calibrated on the odd calibration samples agreed 98.5% on the even ones it was judged on, 93.5% on the odd ones
# and 94.5% on the validation digits, the same model; every float-free recipe there is 93-95% on validation.
# a named recipe (--int8-recipe plain|equalize|...) is built on every calibration sample and not judged by the
# search: validation judges every artifact on held-out samples, and judging it here first ran both models on every
# calibration sample once more (plus the input-noise runs): ~8.5 s a TFLite int8 artifact on ConvNeXt-T at 160
NOT_JUDGED = "not judged in the search (a named recipe, on every calibration sample): validation judges it"
FALSE_PASS = 0.1587  # the one-sided chance a one-sigma bound leaves: split over the candidates tried (Bonferroni)


@dataclass
class Judged:
    passed: bool
    cosine: float
    top1: float | None
    failures: list[str]
    samples: int = 0  # how many samples judged it (0: not known)
    margins: dict[str, float | int] | None = None  # top1_margins: where its disagreements lie (class outputs)
    # detectors (the detection kind): the source's boxes kept, the artifact's boxes that match, how many source boxes
    recall: float | None = None
    precision: float | None = None
    detections: int | None = None
    # maps and sequences: the agreement their kind is judged by (`kind_agreement`)
    agreement: float | None = None
    drift: float | None = None  # detectors: the kept boxes' mean score change
    landmark_px: float | None = None  # landmarks: their mean move in input pixels (`agreement` is 1 - it / side)

    def score(self) -> tuple[float, float]:
        """What ranks candidates: top-1 agreement (classes), the worse of box recall and precision (detectors), or
        the per-step / per-pixel / mask agreement (sequences, maps), then cosine. Cosine alone ranked a recognizer's
        candidates by a measure its user never reads (PP-OCRv4, issue 29: higher cosine, fewer steps kept)."""
        if self.recall is not None or self.precision is not None:
            return (min(self.recall or 0.0, self.precision or 0.0), self.cosine)
        if self.top1 is None and self.agreement is not None:
            return (self.agreement, self.cosine)
        return (self.top1 if self.top1 is not None else 0.0, self.cosine)


def kind_agreement(fid: Any) -> float | None:
    """The agreement an output's kind is judged by, where it is not top-1 or boxes: per-step (sequence), per-pixel
    (dense) or thresholded-mask (mask) agreement, decisions kept (score); for landmarks one minus their mean error as a
    share of the input side (so that less error ranks higher); None for the other kinds."""
    for key in ("step_agreement", "pixel_agreement", "mask_agreement", "score_agreement"):
        v = getattr(fid, key, None)
        if v is not None:
            return float(v)
    share = getattr(fid, "landmark_error_share", None)
    return None if share is None else 1.0 - float(share)


def judge(y_ref: np.ndarray | dict[str, np.ndarray], y: np.ndarray | dict[str, np.ndarray], precision: str = "int8",
          z: float = MARGIN_Z, choice: Any = None, mask_threshold: float | None = None, layout: str = "NCHW") -> Judged:
    """Candidate outputs Y against the float outputs Y_REF, by validation's own thresholds, the top-1 agreement's
    (or, for a detector, the box recall's and precision's) lower bound (Z sigmas) included.

    CHOICE: the output's KindChoice (edgekit.fidelity.decide) where the step decided it from the source (a
    detector's head from its metadata); None: decided from Y_REF's shape and values, as validation would.
    MASK_THRESHOLD: where a probability map (the mask kind) is cut, as --mask-threshold says for that output (None:
    the kind's default): the search judges the mask its user reads (a text detector's at 0.3), as validation does.
    LAYOUT: the outputs' own (a .tflite's NHWC: its per-pixel class maps judged along the right axis).
    Y_REF and Y as dicts (output name -> array): the outputs of one detector head that keeps boxes and scores apart
    (MediaPipe's regressors and logits), judged together as CHOICE's head, as validation judges them; or, with
    CHOICE a dict of KindChoices by output name, every output of a model of several judged by its own kind (a
    landmark model's points where its presence passes, its presence, handedness and world points)."""
    from edgekit.core.precisions import PRECISIONS
    from edgekit.validation.artifact import Reference, compare

    if isinstance(y_ref, dict):
        return _judge_head(y_ref, y, precision, z, choice, layout)
    assert not isinstance(y, dict)
    if choice is not None and choice.head is not None:  # the head reads the one output judged here, by its name
        several = len(choice.head.outputs) > 1  # boxes and scores apart (SSD): the search runs the first output only
        choice = None if several else dataclasses.replace(choice, head=dataclasses.replace(choice.head,
                                                                                             outputs=["output"]))
    ref = Reference(x=np.zeros((len(y_ref), 1), np.float32), y_ref=y_ref, labels=None, layout=layout,
                    inputs_name="calibration", choices={"output": choice} if choice is not None else {},
                    mask_thresholds={} if mask_threshold is None else {"output": mask_threshold})
    fid = compare(ref, y, precision)
    failures = list(fid.failures)
    need = PRECISIONS[precision].thresholds.get("top1_agreement")
    if fid.passed and fid.top1_agreement is not None and need is not None:
        low = wilson_low(fid.top1_agreement, len(y_ref), z)
        if low < need:
            failures.append(f"top-1 agreement {fid.top1_agreement:.1%} on {len(y_ref)} samples: its lower bound "
                            f"({z:.2g} sigma) {low:.1%} < {need:.0%}")
    if fid.passed and fid.detection_recall is not None:  # counts of boxes, bounded as top-1 is
        from edgekit.quantize.detect_decode import box_bounds

        failures += box_bounds(fid, z, wilson_low)
    return Judged(bool(fid.passed) and not failures, float(fid.cosine), fid.top1_agreement, failures, len(y_ref),
                  top1_margins(y_ref, y), fid.detection_recall, fid.detection_precision, fid.detections,
                  kind_agreement(fid), fid.score_change if fid.detection_recall is not None else None,
                  getattr(fid, "landmark_error_px", None))


def _judge_head(y_ref: dict[str, np.ndarray], y: np.ndarray | dict[str, np.ndarray], precision: str, z: float,
                choice: Any, layout: str) -> Judged:
    """The outputs Y of a detector head of several outputs (CHOICE's head names them, Y_REF's keys) against the
    float ones: its boxes after the head's own decode, their recall and precision bounded as one output's are; or,
    CHOICE a dict by output name, each output of a model of several by its own kind (the record is the worst's)."""
    from edgekit.validation.artifact import Reference, compare

    if not isinstance(y, dict):
        raise TypeError("a head of several outputs is judged on every one of them (a dict by name)")
    first = next(iter(y_ref.values()))
    choices = dict(choice) if isinstance(choice, dict) else dict.fromkeys(y_ref, choice)
    ref = Reference(x=np.zeros((len(first), 1), np.float32), y_ref=first, labels=None, layout=layout,
                    inputs_name="calibration", outputs=dict(y_ref), choices=choices)
    fid = compare(ref, y, precision)
    failures = list(fid.failures)
    if fid.passed and fid.detection_recall is not None:
        from edgekit.quantize.detect_decode import box_bounds

        failures += box_bounds(fid, z, wilson_low)
    # several outputs of their own kinds: ranked by the first (the model's main output: a hand model's points), the
    # verdict and cosine the worst output's
    main = fid.outputs[0].fidelity if isinstance(choice, dict) and fid.outputs and fid.outputs[0].fidelity else fid
    return Judged(bool(fid.passed) and not failures, float(fid.cosine), None, failures, len(first), None,
                  fid.detection_recall, fid.detection_precision, fid.detections, kind_agreement(main),
                  fid.score_change if fid.detection_recall is not None else None,
                  getattr(main, "landmark_error_px", None))


def through_silu(node: Any, producer: dict[Any, Any], op_of: Callable[[Any], str],
                 inputs_of: Callable[[Any], list[Any]]) -> tuple[Any, Any] | None:
    """Where NODE is the product of a SiLU, x * sigmoid(x) (a Mul / MUL of a tensor and its Sigmoid / LOGISTIC):
    (the sigmoid node, x); else None. Mixed precision walks a layer group back through it, as through a ReLU: in a
    YOLO every layer is followed by one, and a layer left float alone kept its int8 input and output (onnxruntime
    and the TFLite quantizer keep a tensor quantized while its producer or a reader is), so floating a layer
    removed only its weights' rounding, never an activation's."""
    if op_of(node) not in ("Mul", "MUL"):
        return None
    ins = inputs_of(node)
    if len(ins) != 2:
        return None
    for a, b in (ins, ins[::-1]):
        sig = producer.get(b)
        if sig is not None and op_of(sig) in ("Sigmoid", "LOGISTIC") and inputs_of(sig)[:1] == [a]:
            return sig, a
    return None


def output_noise(y: np.ndarray | dict[str, np.ndarray], y_ref: np.ndarray | dict[str, np.ndarray],
                 head: Any = None) -> float:
    """The noise power of Y against Y_REF: mean squared error, or, for several outputs (a detector head's boxes in
    pixels and its score logits), the sum of each output's mean squared error as a share of its float variance, so
    that pixel-sized errors do not drown the logits'. HEAD (a single-tensor detector's Head): the same over the parts
    of its one output (edgekit.quantize.detect_decode.role_parts: YOLO's box rows and score rows)."""
    if isinstance(y_ref, dict):
        assert isinstance(y, dict)
        return float(sum(((y[k] - v).astype(np.float64) ** 2).mean() / max(float(v.astype(np.float64).var()), 1e-12)
                         for k, v in y_ref.items()))
    assert not isinstance(y, dict)
    from edgekit.quantize.detect_decode import role_parts

    parts = role_parts(head) if y_ref.ndim == 3 else None
    if parts:
        def part(a: np.ndarray, axis: int, sl: slice) -> np.ndarray:
            return np.take(a, np.arange(a.shape[axis])[sl], axis=axis).astype(np.float64)

        return float(sum(((part(y, ax, sl) - part(y_ref, ax, sl)) ** 2).mean()
                         / max(float(part(y_ref, ax, sl).var()), 1e-12) for ax, sl in parts))
    return float(((y - y_ref).astype(np.float64) ** 2).mean())


def top1_margins(y_ref: np.ndarray, y: np.ndarray) -> dict[str, float | int] | None:
    """Where the disagreements of class scores Y with the float scores Y_REF lie (None for other outputs).

    Each sample's margin is the float model's top score minus its second; the candidate moves that difference by
    some error, whose spread over the samples is `sigma`. `close_share`: the share of samples whose margin is under
    2 sigma, the ones int8 noise can flip; `flips` the disagreements, `flips_close` those among the close ones.
    Why: a model whose decisions are close calls (an undertrained MobileNetV2 at 82% accuracy: its top-1 agreement
    stayed near 96% with up to half its MACs in float) misses 97% because of its margins, not one bad layer."""
    if not has_classes(y_ref) or y.shape != y_ref.shape or len(y_ref) == 0:
        return None
    ref, got = y_ref.astype(np.float64), y.astype(np.float64)
    order = np.argsort(ref, axis=1)
    rows = np.arange(len(ref))
    a, b = order[:, -1], order[:, -2]
    margin = ref[rows, a] - ref[rows, b]
    moved = (got[rows, a] - got[rows, b]) - margin
    sigma = float(np.sqrt(np.mean(moved ** 2)))
    close = margin < 2 * sigma
    flips = got.argmax(1) != a
    return {"samples": len(ref), "sigma": round(sigma, 6), "close_share": round(float(close.mean()), 4),
            "flips": int(flips.sum()), "flips_close": int((flips & close).sum())}


def error_share(damage: list[tuple[float, tuple[str, ...]]], total: float) -> float | None:
    """The most damaging layer group's own output error (quantized alone: DAMAGE's noise power) as a share of the
    whole int8 model's (TOTAL, on the same samples); None where not measured. Small: the error is spread over the
    layers, and a few of them in float remove little of it."""
    finite = [d for d, _ in damage if np.isfinite(d)]
    if not finite or not np.isfinite(total) or total <= 0:
        return None
    return round(min(max(finite) / total, 1.0), 4)


def margin_z(tried: int) -> float:
    """The bound's Z for the TRIED-th candidate of a search: MARGIN_Z for the first, then the normal quantile that
    splits the first one's false-pass chance over the TRIED candidates judged so far (1.41 for the second, 2.05
    for the eighth): the chance that any of them passes by luck stays near what one had."""
    from statistics import NormalDist

    return MARGIN_Z if tried <= 1 else float(NormalDist().inv_cdf(1 - FALSE_PASS / tried))


def wilson_low(p: float, n: int, z: float) -> float:
    """The Wilson score interval's lower end for a proportion P seen on N samples."""
    if n <= 0 or z <= 0:
        return p
    d = 1 + z * z / n
    return float((p + z * z / (2 * n) - z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / d)


def needed_samples(z: float, need: float, agreement: float = 1.0) -> int:
    """The fewest judged samples on which an observed top-1 AGREEMENT clears NEED at the bound of Z sigmas (the
    Wilson bound grows with the samples for a fixed agreement above NEED); 0 where AGREEMENT <= NEED."""
    if agreement <= need:
        return 0
    n = 1
    while wilson_low(agreement, n, z) < need:
        n *= 2
    lo, hi = n // 2, n  # fails at lo (or lo is 0), passes at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if wilson_low(agreement, mid, z) >= need else (mid, hi)
    return hi


def out_of_reach(y_ref: np.ndarray | None, tried: int, precision: str = "int8") -> str | None:
    """Words, where the next candidate of a search (the TRIED+1-th) could not meet the top-1 agreement threshold on
    the judged outputs Y_REF even by agreeing on every one of them: its bound (`margin_z`) asks for more samples than
    the search holds. None where it could, or the outputs have no classes (no top-1 to bound).

    Why: on the default 100 judged samples, the fifth candidate's bound (1.86 sigma) is under 97% at 100 of 100, so
    auto's later recipes and all of mixed precision were built and run for nothing, and could only miss."""
    from edgekit.core.precisions import PRECISIONS

    need = PRECISIONS[precision].thresholds.get("top1_agreement")
    if y_ref is None or need is None or not has_classes(y_ref):
        return None
    n, z = len(y_ref), margin_z(tried + 1)
    if wilson_low(1.0, n, z) >= need:
        return None
    plural = "" if tried == 1 else "s"
    return (f"the search stopped after {tried} candidate{plural}: on {n} judged samples, even agreeing on every "
            f"one cannot show {need:.0%} top-1 agreement at the next candidate's bound ({z:.2g} sigma; that takes "
            f"at least {needed_samples(z, need)}, and {needed_samples(z, need, need + 0.01)} for a candidate at "
            f"{need + 0.01:.0%}): more calibration samples (--calib-size; the search judges on half of them, at "
            f"most {MAX_JUDGE}) let it go on")


@dataclass
class Reach:
    """Whether a search's next candidate could still pass (`out_of_reach`), saying why once where not. The first
    candidate is always tried: it is what a search that misses keeps."""

    notes: list[str]
    log: Callable[[str], None]
    stopped: bool = False

    def __call__(self, y_ref: np.ndarray | None, tried: int) -> bool:
        if not self.stopped and tried and (words := out_of_reach(y_ref, tried)):
            self.stopped = True
            self.notes.append(words)
            self.log(f"int8 recipe search: {words}")
        return not self.stopped


def trial(name: str, judged: Judged, float_nodes: int, macs_fraction: float, started: float) -> RecipeTrial:
    return RecipeTrial(recipe=name, passed=judged.passed, cosine=round(judged.cosine, 6),
                       top1_agreement=None if judged.top1 is None else round(judged.top1, 4),
                       detection_recall=None if judged.recall is None else round(judged.recall, 4),
                       detection_precision=None if judged.precision is None else round(judged.precision, 4),
                       float_nodes=float_nodes, macs_float_fraction=round(macs_fraction, 4),
                       seconds=round(time.perf_counter() - started, 2), failures=tuple(judged.failures),
                       agreement=None if judged.agreement is None else round(judged.agreement, 4),
                       score_change=None if judged.drift is None else round(judged.drift, 4))


def say(log: Callable[[str], None], label: str, judged: Judged, float_ops: int, seconds: float | None = None,
        spent: str = "") -> None:
    """One progress line per candidate as it ends: what it scored, whether it meets the thresholds, the SECONDS it
    took (and SPENT: how much of the search's budget is gone)."""
    top1 = f"top-1 {judged.top1:.1%}, " if judged.top1 is not None else ""
    if judged.recall is not None or judged.precision is not None:
        words = lambda v: "-" if v is None else f"{v:.1%}"  # noqa: E731
        top1 = f"box recall {words(judged.recall)}, precision {words(judged.precision)} ({judged.detections} boxes), "
        top1 += f"score drift {judged.drift:.3f}, " if judged.drift is not None else ""
    elif judged.landmark_px is not None and judged.agreement is not None:  # as its user reads it: pixels, share
        top1 = f"landmarks moved {judged.landmark_px:.2f} px ({1 - judged.agreement:.2%} of the side), "
    elif judged.top1 is None and judged.agreement is not None:
        top1 = f"agreement {judged.agreement:.1%}, "
    more = f" ({float_ops} ops in float)" if float_ops else ""
    took = ", ".join(w for w in (f"{seconds:.1f} s" if seconds is not None else "", spent) if w)
    log(f"int8 recipe {label}{more}: {top1}cosine {judged.cosine:.4f} -> {'meets' if judged.passed else 'misses'} "
        "the int8 thresholds on the samples the search judges" + (f" ({took})" if took else ""))


def split(n: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(calibration indices, judging indices, words) of N calibration samples: every JUDGE_SHARE-th one (at most
    MAX_JUDGE) judges, the rest calibrate; below MIN_SPLIT samples both use all of them."""
    idx = np.arange(n)
    if n < MIN_SPLIT:
        return idx, idx, f"{n} calibration samples against the fp32 model (too few to hold some out)"
    # the chosen recipe is then rebuilt on all N (more samples, better ranges: plain on a trained MobileNetV2 gained
    # 3 points of agreement from 100 to 300; from 200 to 400 the issue 9 bench's ONNX recipes moved -1.0 (ResNet-10)
    # and -0.1 points (trained MobileNetV2) on validation on average, noise: the rebuild is not why auto missed there)
    judge_idx = idx[::JUDGE_SHARE][:MAX_JUDGE]
    calib_idx = np.setdiff1d(idx, judge_idx)
    return calib_idx, judge_idx, (f"{len(judge_idx)} held-out calibration samples against the fp32 model (the recipes "
                                  f"calibrated on the other {len(calib_idx)}; the chosen one rebuilt on all {n})")


def ranked_units(damage: list[tuple[float, tuple[str, ...]]], macs: dict[str, int]) -> list[tuple[str, ...]]:
    """Layer groups by their damage (output noise power with only that group quantized) per MAC, worst first;
    a group without MACs counts as 1% of the model's."""
    floor = 0.01 * max(sum(macs.values()), 1)
    return [u for d, u in sorted(damage, key=lambda du: -du[0] / max(sum(macs.get(n, 0) for n in du[1]), floor))]


def prefix_nodes(ranked: list[tuple[str, ...]], k: int) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n for unit in ranked[:k] for n in unit))


def largest_within(ranked: list[tuple[str, ...]], macs: dict[str, int], share: float) -> int:
    """The largest K whose first K groups of RANKED hold at most SHARE of the MACs (0: not even the first)."""
    return max([k for k in range(1, len(ranked) + 1) if macs_fraction(prefix_nodes(ranked, k), macs) <= share],
               default=0)


def smallest_float_set(ranked: list[tuple[str, ...]], macs: dict[str, int], passes: Callable[[tuple[str, ...]], bool],
                       budget: float = AUTO_MACS_TARGET, cap: float | None = None) -> int | None:
    """The smallest K whose first K groups of RANKED in float PASSES, by bisection (PASSES grows with K, near
    enough): first the largest K within BUDGET of the MACs, then below it where that passes, above it (up to the
    largest K within CAP, AUTO_FLOAT_CAP by default) where not. None where not even that passes, or no group fits
    under CAP (`cap_share` says how much float missed). PASSES is called O(log len(RANKED)) times, never past CAP."""
    top = largest_within(ranked, macs, AUTO_FLOAT_CAP if cap is None else cap)
    if not top:
        return None
    within = min(max(largest_within(ranked, macs, budget), 1), top)
    if passes(prefix_nodes(ranked, within)):
        lo, hi = 0, within  # passes at hi, unknown below
    elif within < top and passes(prefix_nodes(ranked, top)):
        lo, hi = within, top  # fails at lo, passes at hi
    else:
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if passes(prefix_nodes(ranked, mid)):
            hi = mid
        else:
            lo = mid
    return hi


def cap_share(ranked: list[tuple[str, ...]], macs: dict[str, int], cap: float | None = None) -> float:
    """Where `smallest_float_set` found none: the share of MACs in float of the largest candidate it tried (the
    most under CAP), which missed; 0.0 where no group fits under CAP and none was tried."""
    top = largest_within(ranked, macs, AUTO_FLOAT_CAP if cap is None else cap)
    return round(macs_fraction(prefix_nodes(ranked, top), macs), 4)


def cost_record(sizes: dict[str, int], latency: dict[str, float]) -> dict[str, object]:
    """`int8_recipe.cost`: the artifact's size and latency, plain int8's and fp32's where measured, the deltas."""
    out: dict[str, object] = {"size_bytes": sizes["artifact"], "latency_ms": round(latency["artifact"], 3)}
    for k in ("plain", "fp32"):
        if k in sizes:
            out[f"{k}_size_bytes"] = sizes[k]
            out[f"{k}_latency_ms"] = round(latency[k], 3)
    if "plain" in sizes:
        out["size_delta_bytes"] = sizes["artifact"] - sizes["plain"]
        out["latency_delta_ms"] = round(latency["artifact"] - latency["plain"], 3)
    out["latency_measured"] = "1 thread, one batch, median of 20 runs, on the converting machine"
    return out


def input_noise_agreement(run: Callable[[np.ndarray], np.ndarray | None], x: np.ndarray, y_ref: np.ndarray,
                          seed: int = 0) -> float | None:
    """Top-1 agreement of the float model with itself when its input moves by up to half an int8 step (of the
    input's range): what any int8 artifact with an int8 input must live with. None for outputs without classes,
    or where RUN gives no outputs (the TFLite runner's answer for a model that failed on those inputs).

    Why: a model whose top-1 turns on differences below the input's own 8-bit resolution (random-weight
    MobileNetV2 with a fitted head: 51%) cannot reach 97% agreement in int8 however it is calibrated."""
    if not has_classes(y_ref):  # a map or a sequence: nothing to run the model for
        return None
    y = run(noisy(x, seed))
    return _top1_kept(y_ref, y) if y is not None else None


def noisy(x: np.ndarray, seed: int = 0) -> np.ndarray:
    """X moved by up to half an int8 step of its range, uniformly."""
    rng = np.random.default_rng(seed)
    step = float(x.max() - x.min()) / 255.0
    return x + rng.uniform(-step / 2, step / 2, x.shape).astype(x.dtype)


def has_classes(y: np.ndarray) -> bool:
    """Whether Y holds class scores (N, C >= 2): the only outputs with a top-1."""
    return y.ndim == 2 and y.shape[1] >= 2


def _top1_kept(y_ref: np.ndarray, y: np.ndarray) -> float | None:
    if not has_classes(y_ref):
        return None
    return float((y.argmax(1) == y_ref.argmax(1)).mean())


NOISE_SAMPLES = 100  # where input_noise_agreement is measured after validation (a named recipe's miss): a count


def twin_noise_agreement(fmt: str, float_model: str, x: np.ndarray) -> float | None:
    """input_noise_agreement of an int8 artifact's float twin (FLOAT_MODEL, an ONNX or calibrated TFLite model,
    in format FMT) with itself, on up to NOISE_SAMPLES of X (in the twin's layout): for the records whose
    search did not measure it (a named recipe, judged by validation alone), measured only where it is read."""
    from edgekit.core.formats import FORMATS
    from edgekit.core.registry import resolve

    how = FORMATS[fmt].int8_diagnosis if fmt in FORMATS else None
    if how is None:  # no float twin runner for this format
        return None
    x = x[:NOISE_SAMPLES]
    both = np.concatenate([x, noisy(x)])  # one run of the twin (one LiteRT child) for the clean and noisy inputs
    y = resolve({fmt: how.run_float}, fmt, "float twin runner")(float_model, both)
    return _top1_kept(y[:len(x)], y[len(x):])


def macs_fraction(nodes: tuple[str, ...], macs: dict[str, int]) -> float:
    return sum(macs.get(n, 0) for n in nodes) / max(sum(macs.values()), 1)


def best(trials: Sequence[tuple[Judged, int, object]]) -> int:
    """Index of the candidate to keep when none passed: best top-1 then cosine, fewest float layers on a tie.

    The first candidate tried (plain, in auto's order) stays unless the best one's top-1 agreement beats it by
    more than the judged samples can resolve (two standard errors of the difference): on 100-200 samples,
    recipes a few points apart are noise, and the best-looking one came out 2-6 points below plain on
    validation in issue 9's bench (trained MobileNetV2, MobileNetV3-Small on the Edge TPU).
    """
    top = max(range(len(trials)), key=lambda i: (*trials[i][0].score(), -trials[i][1]))
    first, cand = trials[0][0], trials[top][0]
    if top == 0 or first.top1 is None or cand.top1 is None or first.samples <= 0:
        return top
    p1, p2 = first.top1, cand.top1
    se = ((p1 * (1 - p1) + p2 * (1 - p2)) / first.samples) ** 0.5
    return top if p2 - p1 > 2 * se else 0


def best_float_free(trials: Sequence[tuple[Judged | None, int, object]]) -> int:
    """Index of the float-free candidate to keep when none passed (`best` among those without float layers): a
    mixed-precision candidate that missed is no better a trade than the float-free one it started from, whatever
    its score (the cap's point: a 40%-float artifact that misses is neither fast int8 nor exact)."""
    free = [(i, (judged, floats, what)) for i, (judged, floats, what) in enumerate(trials)
            if floats == 0 and judged is not None]
    return free[best([t for _, t in free])][0]


Log = Callable[[str], None]

__all__ = ["AUTO_FLOAT_CAP", "AUTO_MACS_TARGET", "Judged", "NOT_JUDGED", "Reach", "best", "best_float_free",
           "cap_share", "cost_record", "error_share", "has_classes", "input_noise_agreement", "judge", "kind_agreement",
           "largest_within", "macs_fraction", "margin_z", "needed_samples", "out_of_reach", "output_noise",
           "through_silu",
           "prefix_nodes", "ranked_units", "say", "smallest_float_set", "split", "top1_margins", "trial",
           "twin_noise_agreement", "wilson_low"]
