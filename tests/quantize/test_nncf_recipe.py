"""The ONNX `nncf` recipe (nncf.quantize with its full bias correction) as one candidate of auto, and the search's
ranking of non-classifier candidates by the agreement their kind is judged by (issue 29)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from onnx_models import conv_chain, images  # noqa: E402

pytest.importorskip("nncf")


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_nncf_recipe_writes_a_qdq_model_that_onnxruntime_runs_and_leaves_asked_nodes_float(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import onnx

    from edgekit.quantize.onnx.graph import run_batches, session
    from edgekit.quantize.onnx.recipes import ONNX_RECIPES, QuantData

    src = conv_chain(tmp_path / "chain.onnx")
    x = images(48)
    recipe = ONNX_RECIPES["nncf"]()
    assert recipe.config.tool == "nncf" and recipe.config.bias_correct and recipe.config.to_dict()["tool"] == "nncf"
    dst = tmp_path / "int8.onnx"
    assert recipe.build(src, dst, QuantData("x", x[:32], 1, tmp_path)) == src
    ops = [n.op_type for n in onnx.load(str(dst)).graph.node]
    assert ops.count("QuantizeLinear") >= 3 and ops.count("DequantizeLinear") >= 6  # weights and activations
    y_ref, y = run_batches(session(str(src)), x[32:])[0], run_batches(session(str(dst)), x[32:])[0]
    assert _cos(y_ref, y) > 0.99
    assert capsys.readouterr().out == ""  # NNCF's progress bars stay off stdout (`convert --json` prints there)

    floated = tmp_path / "floated.onnx"
    recipe.with_float(("fc",)).build(src, floated, QuantData("x", x[:32], 1, tmp_path))
    m = onnx.load(str(floated))
    producers = {o: n.op_type for n in m.graph.node for o in n.output}
    fc = next(n for n in m.graph.node if n.op_type == "Gemm")
    assert producers.get(fc.input[1]) != "DequantizeLinear"  # its weights stay float: nothing quantizes them


def test_nncf_recovers_the_channel_range_problem_plain_int8_collapses_on(spread_model: Path, samples: np.ndarray,
                                                                          tmp_path: Path) -> None:
    """Two channels 100x wider than the rest (tests/quantize/conftest.py): plain int8 keeps 57% of the top-1 on
    held-out samples (test_search.py), NNCF's recipe (its placement and full bias correction) nearly all of it."""
    from edgekit.quantize.onnx.graph import run_batches, session
    from edgekit.quantize.onnx.recipes import ONNX_RECIPES, QuantData

    dst = tmp_path / "int8.onnx"
    ONNX_RECIPES["nncf"]().build(spread_model, dst, QuantData("x", samples[:160], 1, tmp_path))
    y_ref = run_batches(session(str(spread_model)), samples[160:])[0]
    y = run_batches(session(str(dst)), samples[160:])[0]
    assert (y.argmax(1) == y_ref.argmax(1)).mean() >= 0.97


def test_auto_goes_on_without_nncf_where_it_is_not_installed_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.quantize.onnx import nncf_recipe, search

    notes: list[str] = []
    monkeypatch.setattr(nncf_recipe, "available", lambda: False)
    assert not search._nncf_here(notes)
    assert "NNCF is not installed" in notes[0] and "nncf" in search.AUTO_ORDER


def test_sequence_candidates_are_ranked_by_the_steps_they_keep_not_by_cosine() -> None:
    from edgekit.quantize.search import best, judge

    rng = np.random.default_rng(0)
    y_ref = rng.standard_normal((40, 20, 12)).astype(np.float32)
    # a: small noise everywhere but one large swap per sample (high cosine, a few steps lost)
    a = y_ref + 0.05 * rng.standard_normal(y_ref.shape).astype(np.float32)
    b = y_ref.copy()  # b: the same argmax on every step, lower cosine (scaled noise on the losing scores)
    top = y_ref.argmax(-1)
    noise = 0.6 * np.abs(rng.standard_normal(y_ref.shape)).astype(np.float32)
    np.put_along_axis(noise, top[..., None], 0.0, axis=-1)
    b = b - noise
    flips = rng.choice(20, (40, 4))
    for i in range(40):
        for t in flips[i]:
            a[i, t] = y_ref[i, t] - 3 * (np.arange(12) == top[i, t])  # its top step no longer the largest
    ja, jb = judge(y_ref, a), judge(y_ref, b)
    assert ja.top1 is None and jb.agreement == 1.0 and ja.agreement is not None and ja.agreement < 0.95
    assert ja.cosine > jb.cosine  # what ranked them before: a would have been kept
    assert best([(ja, 0, "a"), (jb, 0, "b")]) == 1
    assert jb.score()[0] == 1.0
