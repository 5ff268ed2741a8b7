"""bench/int8_tasks.py: P-Net's per-scene proposal cells and the paired ONNX - TFLite interval built on them.

Why: issue 40's "P-Net's ONNX int8 no worse than its TFLite int8" is read from that interval: it must be the
difference of the two proposal IoUs the table shows, narrow where the inputs agree, and wide only where they do not.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
int8_tasks = pytest.importorskip("int8_tasks")


def _maps(rng: np.random.Generator, n: int) -> np.ndarray:
    """N P-Net probability maps (N, 2, 27, 27) with p(face) spread around the 0.6 threshold."""
    p = rng.uniform(0.3, 0.9, (n, 27, 27)).astype(np.float32)
    return np.stack([1 - p, p], axis=1)


def test_the_cells_sum_to_the_proposal_iou_of_the_figures() -> None:
    rng = np.random.default_rng(0)
    ref = _maps(rng, 20)
    got = ref + rng.normal(0, 0.05, ref.shape).astype(np.float32)
    both, either = int8_tasks.pnet_cells(ref, got)
    assert both.shape == either.shape == (20,) and (both <= either).all()
    assert round(both.sum() / either.sum(), 4) == int8_tasks.pnet_figures(ref, got)["proposal_iou"]


def test_the_paired_difference_is_the_figures_difference_with_an_interval_around_it() -> None:
    rng = np.random.default_rng(1)
    ref = _maps(rng, 400)
    close = ref + rng.normal(0, 0.02, ref.shape).astype(np.float32)
    far = ref + rng.normal(0, 0.08, ref.shape).astype(np.float32)
    one, other = int8_tasks.pnet_cells(ref, close), int8_tasks.pnet_cells(ref, far)
    d = int8_tasks.paired_difference(one, other, draws=400)
    want = 100 * (int8_tasks.pnet_figures(ref, close)["proposal_iou"] - int8_tasks.pnet_figures(ref, far)[
        "proposal_iou"])
    assert abs(d["points"] - want) < 0.02 and d["inputs"] == 400
    assert 0 < d["ci95"][0] < d["points"] < d["ci95"][1]  # clearly better: the interval excludes 0
    same = int8_tasks.paired_difference(one, one, draws=400)
    assert same["points"] == 0 and same["ci95"] == [0, 0]  # paired: the same artifact twice has no spread


def test_the_interval_narrows_with_more_inputs_and_refuses_unpaired_ones() -> None:
    rng = np.random.default_rng(2)
    ref = _maps(rng, 1600)
    a = int8_tasks.pnet_cells(ref, ref + rng.normal(0, 0.05, ref.shape).astype(np.float32))
    b = int8_tasks.pnet_cells(ref, ref + rng.normal(0, 0.05, ref.shape).astype(np.float32))
    width = lambda d: d["ci95"][1] - d["ci95"][0]  # noqa: E731
    few = int8_tasks.paired_difference((a[0][:100], a[1][:100]), (b[0][:100], b[1][:100]), draws=400)
    many = int8_tasks.paired_difference(a, b, draws=400)
    assert width(many) < width(few) / 2.5  # 16 times the inputs: about a quarter of the width
    assert many["ci95"][0] < 0 < many["ci95"][1]  # two artifacts of the same noise are not told apart
    with pytest.raises(ValueError, match="differ in number"):
        int8_tasks.paired_difference(a, (b[0][:10], b[1][:10]))
