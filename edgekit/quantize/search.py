"""What the recipe search shares across formats: judging a candidate against the float model, the order
of the mixed-precision sets, and the choice.

A candidate is judged by `edgekit.validate.compare` with the int8 thresholds, against the float model
on the calibration samples (the search must not see the held-out validation inputs: those judge the
chosen artifact afterwards, as every artifact is judged).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from edgekit.quantize.records import RecipeTrial

MAX_FLOAT_MACS = 0.5  # mixed precision stops adding float layers past half the model's MACs
AUTO_MACS_TARGET = 0.10  # what the issue calls cheap: at most this share of MACs left in float


@dataclass
class Judged:
    passed: bool
    cosine: float
    top1: float | None
    failures: list[str]

    def score(self) -> tuple[float, float]:
        return (self.top1 if self.top1 is not None else 0.0, self.cosine)


def judge(y_ref: np.ndarray, y: np.ndarray, precision: str = "int8") -> Judged:
    """Candidate outputs Y against the float outputs Y_REF, by validation's own thresholds."""
    from edgekit.validate import Reference, compare

    ref = Reference(x=np.zeros((len(y_ref), 1), np.float32), y_ref=y_ref, labels=None, layout="NCHW",
                    inputs_name="calibration")
    fid = compare(ref, y, precision)
    return Judged(fid.passed, float(fid.cosine), fid.top1_agreement, list(fid.failures))


def trial(name: str, judged: Judged, float_nodes: int, macs_fraction: float, started: float) -> RecipeTrial:
    return RecipeTrial(recipe=name, passed=judged.passed, cosine=round(judged.cosine, 6),
                       top1_agreement=None if judged.top1 is None else round(judged.top1, 4),
                       float_nodes=float_nodes, macs_float_fraction=round(macs_fraction, 4),
                       seconds=round(time.perf_counter() - started, 2), failures=tuple(judged.failures))


def say(log: Callable[[str], None], label: str, judged: Judged, float_ops: int) -> None:
    """One progress line per candidate: what it scored and whether it meets the thresholds."""
    top1 = f"top-1 {judged.top1:.1%}, " if judged.top1 is not None else ""
    more = f" ({float_ops} ops in float)" if float_ops else ""
    log(f"int8 recipe {label}{more}: {top1}cosine {judged.cosine:.4f} -> {'meets' if judged.passed else 'misses'} "
        "the int8 thresholds on the calibration samples")


def float_sets(ranked: list[tuple[str, ...]], macs: dict[str, int], limit: float = MAX_FLOAT_MACS
               ) -> list[tuple[str, ...]]:
    """Growing unions of the most rewarding layer groups (RANKED best first): 1, 2, 3, 4, 6, 9 ... groups,
    until a set's share of MACs passes LIMIT (that set is not tried). Smallest first: the search stops at the
    first that passes."""
    total = max(sum(macs.values()), 1)
    sizes, k = [], 1
    while k <= len(ranked):
        sizes.append(k)
        k = k + 1 if k < 4 else int(k * 1.5)
    if ranked and sizes[-1] != len(ranked):
        sizes.append(len(ranked))
    out: list[tuple[str, ...]] = []
    for k in sizes:
        nodes = tuple(dict.fromkeys(n for unit in ranked[:k] for n in unit))
        if sum(macs.get(n, 0) for n in nodes) / total > limit:
            break
        if not out or nodes != out[-1]:
            out.append(nodes)
    return out


def macs_fraction(nodes: tuple[str, ...], macs: dict[str, int]) -> float:
    return sum(macs.get(n, 0) for n in nodes) / max(sum(macs.values()), 1)


def best(trials: list[tuple[Judged, int, object]]) -> int:
    """Index of the candidate to keep when none passed: best top-1 then cosine, fewest float layers on a tie."""
    return max(range(len(trials)), key=lambda i: (*trials[i][0].score(), -trials[i][1]))


Log = Callable[[str], None]

__all__ = ["AUTO_MACS_TARGET", "Judged", "MAX_FLOAT_MACS", "best", "float_sets", "judge", "macs_fraction", "say",
           "trial"]
