"""How the int8 search reads a model of several outputs (issue 37, MediaPipe's hand landmark model): a candidate
whose outputs the quantizer renamed is still judged, and a search judged by landmarks is not stopped by a top-1
bound it is never judged by."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from edgekit.quantize.driver import Judging
from edgekit.quantize.tflite.search import _named


def _outputs(names: tuple[str, ...]) -> dict[str, np.ndarray]:
    shapes = ((63,), (1,), (1,), (63,))
    return {n: np.full((4, *s), k, np.float32) for k, (n, s) in enumerate(zip(names, shapes, strict=True))}


def test_renamed_outputs_are_taken_by_place_where_every_shape_agrees() -> None:
    ref = _outputs(("Identity", "Identity_1", "Identity_2", "Identity_3"))
    shapes = {n: a.shape[1:] for n, a in ref.items()}
    assert _named(ref, shapes) is not None  # the same names: by name
    renamed = _outputs(("Identity1", "Identity_11", "Identity_21", "Identity_31"))  # int8 outputs, renamed
    got = _named(renamed, shapes)
    assert got is not None and list(got) == list(ref)
    assert all(float(got[n][0, 0]) == k for k, n in enumerate(ref))  # each in its place
    items = list(renamed.items())
    swapped = dict(items[1:] + items[:1])  # shapes that do not agree in place: not guessed
    assert _named(swapped, shapes) is None
    assert _named(dict(list(renamed.items())[:3]), shapes) is None  # one missing


def test_the_top1_bound_applies_only_where_the_first_output_is_judged_as_classes() -> None:
    first = np.zeros((100, 63), np.float32)
    landmarks, classes = SimpleNamespace(kind="landmarks"), SimpleNamespace(kind="classes")
    assert Judging(first, first, landmarks).top1_outputs() is None
    assert Judging({"a": first}, first, {"a": landmarks, "b": classes}).top1_outputs() is None
    assert Judging(first, first, classes).top1_outputs() is first
    assert Judging(first, first, None).top1_outputs() is first  # undecided: as before
