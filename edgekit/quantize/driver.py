"""The int8 recipe search, once for every format: which candidates it tries, in what order, how each is judged,
which one it keeps, what it records and says, and when it stops.

The split is Olive's, of a pass and the search over it: a format (ONNX by onnxruntime, TFLite, OpenVINO by NNCF)
supplies only how to build and run a candidate for a recipe name (`Candidates.build`) and, where it can leave
layers out of int8, how (`FloatStep`: rank the layer groups of a base candidate, build the candidate with a set of
them left out). The driver owns the rest:
- the recipes in the order asked (plain first), stopping at the first that meets the int8 thresholds;
- judging each candidate with the shared kinds (edgekit.quantize.search.judge), against the float model's outputs
  on the held-out calibration samples, at a bound that grows with the candidates tried (`margin_z`), and stopping
  where no later candidate could show the thresholds on those samples (`Reach`);
- where none passes, the float-fallback steps in turn: the smallest set of the ranked layer groups left out that
  passes (edgekit.quantize.search.smallest_float_set), up to the float cap;
- where still none passes, the candidate to keep (`best_float_free`);
- the trial records (every candidate tried, with its seconds) and one progress line per candidate as it ends;
- the time budget (--int8-budget, on by default): no candidate starts where what is left of it is less than the
  slowest candidate so far took, the best so far is kept, and the record says the budget ended. The first
  candidate is always tried: it is what a search that misses keeps. A budget in seconds is sized for a
  MobileNetV2-class model on a small machine; where the first candidate alone takes more than a share of it, the
  budget grows to BUDGET_SCALE times that candidate's time (`Search.limit`), so a slower model (or a busier machine)
  still gets auto's second recipe, the strongest float-free one, instead of plain alone. A budget of 0 stays 0.

The format then rebuilds what was kept on every calibration sample and writes its RecipeChoice from the `Outcome`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from edgekit.quantize.records import RecipeChoice, RecipeTrial
from edgekit.quantize.search import (
    MARGIN_Z,
    Judged,
    Log,
    Reach,
    best_float_free,
    cap_share,
    judge,
    macs_fraction,
    margin_z,
    prefix_nodes,
    say,
    smallest_float_set,
    trial,
)

T = TypeVar("T")
Outputs = np.ndarray | dict[str, np.ndarray]
Kept = tuple[Judged, int, Any]  # (its judgement, layers moved off plain int8, what the format holds of it)
# the budget, in units of the first candidate's time where that is the larger: a budget in seconds fits one model on
# one machine at one load, the first candidate's time is this model's cost here now. 2.5: the first, then one more
# of about its time (the PP-OCRv4 recognizer under load: plain 106 s against the default 30 s ended its search after
# plain at 94.5% of CTC steps, where nncf, second in ONNX's order, meets 95%; docs/results/int8.md)
BUDGET_SCALE = 2.5


@dataclass
class Built(Generic[T]):
    """One candidate a format built and ran: what the format holds of it (its recipe and files, or its bytes), its
    outputs on the judged samples (None: its runtime could not run it, FAILURE says so), the layers it left in float,
    and how many it moved off plain int8 in all (float and 16-bit: what `best` charges; default: the float ones)."""

    held: T
    outputs: Outputs | None
    float_nodes: tuple[str, ...] = ()
    changed: int | None = None
    label: str = ""  # the trial's name where it is not the recipe's (mixed[plain])
    more: str = ""  # what the progress line adds to the label (" (3 ops with 16-bit activations)")
    failure: str = "its runtime could not run it"


class Candidates(Protocol[T]):
    """What a format supplies: a candidate for the recipe NAME, built on the calibrating samples and run on the judged
    ones; None where it skipped NAME (a third-party quantizer that failed on the graph: it said why in its notes)."""

    def build(self, name: str) -> Built[T] | None: ...


class FloatStep(Protocol[T]):
    """Leaving layer groups out of int8 where the float-free recipes missed (float layers, or 16-bit activations).

    `base` picks the candidate to start from among the float-free ones (its index); `ranked` ranks that candidate's
    layer groups, worst damage per MAC first; `build` makes the candidate with NODES left out of int8 (None: the
    quantizer refused it); `missed` hears the share of MACs of the largest set tried, where even that missed."""

    name: str

    def base(self, kept: Sequence[Kept]) -> int: ...

    def ranked(self, base: T) -> list[tuple[str, ...]]: ...

    def build(self, base: T, nodes: tuple[str, ...]) -> Built[T] | None: ...

    def missed(self, share: float) -> None: ...


def top_score(kept: Sequence[Kept]) -> int:
    """The candidate with the best score (edgekit.quantize.search.Judged.score), the first on a tie."""
    return max(range(len(kept)), key=lambda i: kept[i][0].score())


@dataclass(frozen=True)
class Rules:
    """How a search judges and keeps. The shared rules: a bound that grows with the candidates tried, the search
    stopped where no later candidate could pass, and a float-free candidate kept where none passed."""

    growing_bound: bool = True
    keep: Callable[[Sequence[Kept]], int] = best_float_free


SHARED = Rules()


@dataclass(frozen=True)
class Judging:
    """What the candidates are judged against: the float model's outputs on the judged samples (a detector head's by
    name), its first output (whether a later candidate could still pass), the output's kind where the format decided
    it (a detector's head), where a mask is cut, and the outputs' layout."""

    y_ref: Outputs
    first: np.ndarray
    choice: Any = None
    mask_threshold: float | None = None
    layout: str = "NCHW"

    def top1_outputs(self) -> np.ndarray | None:
        """The first output where its top-1 agreement can bound the search (`Reach`): None where its kind is decided
        and is not classes (a hand model's 63 landmark values looked like 63 classes, and its search was stopped
        after four candidates for a top-1 bound it is never judged by)."""
        choice = next(iter(self.choice.values()), None) if isinstance(self.choice, dict) else self.choice
        return self.first if choice is None or getattr(choice, "kind", "classes") == "classes" else None


@dataclass
class Outcome(Generic[T]):
    """What a search kept and what it recorded."""

    held: T  # what the format holds of the candidate kept
    judged: Judged
    trial: RecipeTrial
    met: bool
    trials: tuple[RecipeTrial, ...]
    candidates: tuple[T, ...]  # every candidate tried, in order
    budget: dict[str, Any] | None = None  # the record of --int8-budget (None: no budget given)


@dataclass
class Search:
    """One search: JUDGING's outputs, the model's MACs by node (the float share of a candidate), where its notes and
    progress lines go, its BUDGET in seconds (None: none) and its RULES."""

    judging: Judging
    macs: dict[str, int]
    log: Log
    notes: list[str]
    budget: float | None = None
    rules: Rules = SHARED
    kept: list[Kept] = field(default_factory=list, init=False)
    trials: list[RecipeTrial] = field(default_factory=list, init=False)
    stopped: bool = field(default=False, init=False)  # by the judged samples or the budget: no candidate starts
    budget_ended: bool = field(default=False, init=False)
    started: float = field(default_factory=time.perf_counter, init=False)

    def __post_init__(self) -> None:
        self.reach = Reach(self.notes, self.log)

    def run(self, fmt: Candidates[T], names: Sequence[str], steps: Sequence[FloatStep[T]] = ()) -> Outcome[T]:
        """The recipes NAMES in order, then the float STEPS in turn, until a candidate meets the thresholds."""
        self.started = time.perf_counter()
        plan = ", ".join(names) + "".join(f", then {s.name}" for s in steps)
        budget = f"; --int8-budget {self.budget:g} s" if self.budget is not None else ""
        self.log(f"int8 recipe search: {plan}, until one meets the int8 thresholds{budget}")
        pick = next((len(self.kept) - 1 for name in names if self._recipe(fmt, name)), None)
        free = list(self.kept)  # the float-free candidates: a float step starts from one of them
        for step in steps:
            if pick is not None or not self._may_start():
                break
            pick = self._float_step(step, free)
        met = pick is not None
        if pick is None:
            pick = self.rules.keep(self.kept)
        judged, _, held = self.kept[pick]
        return Outcome(held, judged, self.trials[pick], met, tuple(self.trials), tuple(k[2] for k in self.kept),
                       self._budget_record())

    def _may_start(self) -> bool:
        """Whether another candidate may start: the judged samples leave it a chance, and the budget leaves it the
        time the slowest candidate so far took, so that the search ends near its budget rather than a whole candidate
        past it (the default budget keeps a whole conversion within minutes). The first always starts."""
        tried = len(self.kept)
        if self.stopped or not tried:
            return not self.stopped
        if self.rules.growing_bound and not self.reach(self.judging.top1_outputs(), tried):
            self.stopped = True
        elif (limit := self.limit()) is not None and (spent := time.perf_counter() - self.started) + (
                slowest := max(t.seconds for t in self.trials)) > limit:
            self.stopped = self.budget_ended = True
            plural = "" if tried == 1 else "s"
            scaled = f" (grown to {limit:.0f} s: {BUDGET_SCALE:g} times the first candidate's)" \
                if limit > (self.budget or 0) else ""
            words = (f"the --int8-budget of {self.budget:g} s{scaled} leaves no room for another candidate after "
                     f"{tried} candidate{plural} ({spent:.0f} s spent, the slowest {slowest:.0f} s): the search "
                     "started no more and kept the best so far")
            self.notes.append(words)
            self.log(f"int8 recipe search: {words}")
        return not self.stopped

    def limit(self) -> float | None:
        """The seconds the search may spend: the budget, or BUDGET_SCALE times the first candidate's seconds where
        that is more (a budget of 0 stays 0: the first candidate only); None: no budget."""
        if self.budget is None or not self.budget or not self.trials:
            return self.budget
        return max(self.budget, BUDGET_SCALE * self.trials[0].seconds)

    def _recipe(self, fmt: Candidates[Any], name: str) -> bool:
        if not self._may_start():
            return False
        t0 = time.perf_counter()
        built = fmt.build(name)
        return built is not None and self._judge(built, built.label or name, t0)

    def _float_step(self, step: FloatStep[Any], free: list[Kept]) -> int | None:
        """The candidate of STEP with the smallest prefix of its ranked layer groups left out that passes (its index
        in the kept candidates); None where none does under the cap, or the search stopped."""
        base = free[step.base(free)][2]
        ranked = step.ranked(base)
        tried: dict[tuple[str, ...], int] = {}

        def passes(nodes: tuple[str, ...]) -> bool:
            if not self._may_start():
                return False
            t0 = time.perf_counter()
            built = step.build(base, nodes)
            if built is None:
                return False
            ok = self._judge(built, built.label or step.name, t0)
            tried[nodes] = len(self.kept) - 1
            return ok

        k = smallest_float_set(ranked, self.macs, passes)
        if k is None:
            if not self.stopped:  # tried up to the cap and missed (a stopped search did not try it)
                step.missed(cap_share(ranked, self.macs))
            return None
        return tried[prefix_nodes(ranked, k)]

    def _judge(self, built: Built[Any], label: str, t0: float) -> bool:
        """Judge BUILT (started at T0) against the float model; record it, say it; whether it passed."""
        j = self.judging
        z = margin_z(len(self.kept) + 1) if self.rules.growing_bound else MARGIN_Z  # stricter as more are tried
        judged = judge(j.y_ref, built.outputs, z=z, choice=j.choice, mask_threshold=j.mask_threshold,
                       layout=j.layout) if built.outputs is not None else \
            Judged(False, float("nan"), None, [built.failure])
        nodes = built.float_nodes
        self.trials.append(trial(label, judged, len(nodes), macs_fraction(nodes, self.macs), t0))
        self.kept.append((judged, len(nodes) if built.changed is None else built.changed, built.held))
        say(self.log, label + built.more, judged, len(nodes), self.trials[-1].seconds, self._spent_words())
        return judged.passed

    def _spent_words(self) -> str:
        limit = self.limit()
        if limit is None:
            return ""
        return f"{time.perf_counter() - self.started:.0f} of the {limit:g} s budget"

    def _budget_record(self) -> dict[str, Any] | None:
        """`int8_recipe.budget`: the seconds given, spent, whether they ended the search, the candidates tried; where
        the first candidate's time grew it, the seconds it grew to (`scaled_seconds`)."""
        if self.budget is None:
            return None
        limit = self.limit()
        grown = {"scaled_seconds": round(limit, 2)} if limit is not None and limit > self.budget else {}
        return {"seconds": self.budget, "spent_seconds": round(time.perf_counter() - self.started, 2),
                "ended": self.budget_ended, "candidates": len(self.kept), **grown}


def say_missed(log: Log, choice: RecipeChoice) -> None:
    """The line a search that missed ends on: the float-free candidate kept, and why where the float steps ran out of
    room (nothing where it met, or did not judge)."""
    if choice.met is False:
        ended = choice.macs_float_needed_over is not None or (choice.budget or {}).get("ended")
        why = f" ({choice.why_words()})" if ended else ""
        log("int8: no recipe met the thresholds on the samples the search judges; keeping the best float-free one, "
            f"{choice.chosen}{why}")


__all__ = ["BUDGET_SCALE", "SHARED", "Built", "Candidates", "FloatStep", "Judging", "Kept", "Outcome", "Rules",
           "Search", "say_missed", "top_score"]
