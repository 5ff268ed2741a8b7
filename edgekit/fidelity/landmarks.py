"""Landmark outputs (a hand's 21 points, a face's 468), read as points in input pixels and judged by their distance.

A landmark regressor's (1, 63) or (1, 1, 1, 1404) output looks like class scores or a one-pixel map to a rule that
reads shapes. Its user reads points in the input's pixels (x, y, and a relative depth z), so the measure is the
distance each point moved, in pixels and as a share of the input's side: MediaPipe's int8 hand landmarks moved 4 px
on average on a 224 px input and were "passed" as class scores, its face mesh moved 1.6 px on 192 px and "failed"
as a map (issue 37). The kind is recognised by the values, not the shape alone (edgekit.fidelity.decide): points whose
x and y lie inside the input and spread over a good part of it, which a classifier's probabilities or logits do not.

- `read_landmarks`: the layout of an output (how many values per point, x and y first) where its values are
  coordinates in pixels of an input of a known size; None otherwise.
- `errors`: each point's 2-D distance between two outputs, in input pixels (z is not in it: its scale is the
  model's own; the record's cosine and relative error cover every value).
- `scalar`: an output of one value per sample (a presence, visibility or handedness score), judged beside the
  landmarks by the decision its user makes at 0.5, after a sigmoid where the values are logits (`score_of`).

Plain numpy: importing this module imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

DIMS = (3, 2, 5, 4)  # values per point tried on a flat output, in this order where two read the data equally well
MIN_POINTS = 4
INSIDE = 0.9  # of the x and y values inside [0, side] (2% margin): coordinates, not logits centred on 0
SPREAD = 0.2  # the x and y values' 5th-95th percentile range, as a share of the side: points, not small scores
CUT = 0.5  # where a presence / visibility score decides (MediaPipe's hand and face presence thresholds)


@dataclass
class Landmarks:
    """How a landmark output is read: POINTS points of DIMS values each (x, y first), in pixels of an input of SIZE
    (height, width); NORMALIZED: in fractions of the input instead. SIZE None: the input is not an image of a known
    size, and errors are shares of the source coordinates' extent."""

    dims: int
    points: int
    size: tuple[int, int] | None = None
    normalized: bool = False

    @property
    def side(self) -> int | None:
        """The input's longer side in pixels, which errors are a share of."""
        return max(self.size) if self.size else None

    def to_dict(self) -> dict[str, Any]:
        return {"dims": self.dims, "points": self.points, "size": list(self.size) if self.size else None,
                "normalized": self.normalized}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Landmarks:
        size = d.get("size")
        return cls(int(d["dims"]), int(d["points"]), (int(size[0]), int(size[1])) if size else None,
                   bool(d.get("normalized", False)))


def image_size(x: np.ndarray | None, layout: str) -> tuple[int, int] | None:
    """(height, width) of a batch of images X in LAYOUT (NCHW or NHWC); None where X is not a 4-D image batch."""
    if x is None or getattr(x, "ndim", 0) != 4:
        return None
    h, w = (x.shape[1], x.shape[2]) if layout.upper() == "NHWC" else (x.shape[2], x.shape[3])
    return (int(h), int(w)) if h > 1 and w > 1 else None


def values_per_sample(shape: tuple[int, ...]) -> tuple[int, int | None] | None:
    """(values per sample, the values per point a (N, K, 2|3) shape fixes, else None) where SHAPE can hold points:
    (N, D), (N, 1, 1, D), (N, D, 1, 1) or (N, K, 2|3); None otherwise."""
    rest = [int(d) for d in shape[1:]]
    if not rest:
        return None
    if len(rest) == 2 and rest[1] in (2, 3) and rest[0] > 1:
        return rest[0] * rest[1], rest[1]
    big = [d for d in rest if d > 1]
    return (big[0], None) if len(big) == 1 else None


def points(y: np.ndarray, dims: int) -> np.ndarray:
    """(N, K, 2) x, y of each point of an output Y read as DIMS values per point."""
    flat = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
    return flat.reshape(len(y), -1, dims)[..., :2]


def _inside(xy: np.ndarray, side: float) -> float:
    margin = 0.02 * side
    return float(((xy >= -margin) & (xy <= side + margin)).mean())


def read_landmarks(y: np.ndarray, size: tuple[int, int] | None, dims: int | None = None) -> Landmarks | None:
    """The landmark layout of the source output Y on an input of SIZE (h, w) pixels, or None where its values are
    not pixel coordinates (or SIZE is unknown).

    Values per point: the shape's (N, K, 2|3), else DIMS, else whichever of 3, 2, 5, 4 (dividing the values, at least
    MIN_POINTS points) puts the most x and y values inside the input: read with the wrong count, x and y mix with z
    or visibility logits, which fall outside it. Then the rule: INSIDE of the x and y values within [0, side] (a 2%
    margin) and their 5th-95th percentile range at least SPREAD of the side (a classifier's probabilities or logits
    do neither)."""
    if size is None or not y.size or not np.isfinite(y).all():
        return None
    layout = values_per_sample(y.shape)
    if layout is None:
        return None
    total, fixed = layout
    side = float(max(size))
    tries = [fixed] if fixed else [dims] if dims else [d for d in DIMS if total % d == 0 and total // d >= MIN_POINTS]
    scored = [(d, _inside(points(y, d), side)) for d in tries if d and total % d == 0 and total // d >= MIN_POINTS]
    if not scored:
        return None
    best = max(s for _, s in scored)
    d, inside = next((d, s) for d, s in scored if s >= best - 0.01)  # the first in DIMS' order among the best
    xy = points(y, d)
    lo, hi = np.percentile(xy, [5, 95])
    if inside < INSIDE or hi - lo < SPREAD * side:
        return None
    return Landmarks(d, total // d, (int(size[0]), int(size[1])))


def asked_landmarks(y: np.ndarray, size: tuple[int, int] | None, dims: int | None = None) -> Landmarks:
    """The layout of Y, which the user says holds landmarks: as `read_landmarks` reads it where it can; else DIMS (or
    3, 2 ... whichever divides) values per point, in fractions of the input where every x and y is within [-0.5,
    1.5], else in pixels."""
    found = read_landmarks(y, size, dims)
    if found is not None:
        return found
    layout = values_per_sample(y.shape)
    total, fixed = layout if layout else (int(np.prod(y.shape[1:])), None)
    d = fixed or dims or next((d for d in DIMS if total % d == 0), 1)
    xy = points(y, d) if total % d == 0 else np.zeros((0, 2))
    normalized = bool(xy.size) and float(np.nanmin(xy)) >= -0.5 and float(np.nanmax(xy)) <= 1.5
    return Landmarks(d, total // d, size, normalized)


def errors(y_ref: np.ndarray, y: np.ndarray, lm: Landmarks) -> tuple[np.ndarray, float]:
    """(each point's 2-D distance between Y and Y_REF in input pixels, the side those are a share of).

    Normalized coordinates are scaled by the input's width and height first. Without an input size the side is the
    source coordinates' extent (max - min of x and y), and distances stay in the output's units."""
    a, b = points(y_ref, lm.dims), points(y, lm.dims)
    if lm.normalized and lm.size:
        scale = np.array([lm.size[1], lm.size[0]], dtype=np.float64)
        a, b = a * scale, b * scale
    d = np.sqrt(((a - b) ** 2).sum(axis=-1)).ravel()
    side = float(lm.side) if lm.side else float(np.ptp(a)) if a.size else 1.0
    return d, side if side > 0 else 1.0


def scalar(y: np.ndarray) -> bool:
    """Whether Y holds one value per sample: (N,), (N, 1), (N, 1, 1, 1) ..."""
    return y.ndim >= 1 and len(y) > 0 and int(np.prod(y.shape[1:])) == 1


def is_logit(y_ref: np.ndarray) -> bool:
    """A score output whose source values leave [0, 1] holds logits, which its user reads through a sigmoid."""
    return bool(y_ref.size) and (float(np.nanmin(y_ref)) < -1e-3 or float(np.nanmax(y_ref)) > 1 + 1e-3)


def score_of(y: np.ndarray, logits: bool) -> np.ndarray:
    """Per-sample probability: Y itself, or the sigmoid of Y (clipped at +-100, as MediaPipe clips) for LOGITS."""
    v = np.asarray(y, dtype=np.float64).reshape(len(y), -1)[:, 0]
    return 1.0 / (1.0 + np.exp(-np.clip(v, -100.0, 100.0))) if logits else v


__all__ = ["CUT", "Landmarks", "asked_landmarks", "errors", "image_size", "is_logit", "points", "read_landmarks",
           "scalar", "score_of", "values_per_sample"]
