"""The ONNX `nncf` recipe (nncf.quantize with its full bias correction) as one candidate of auto (issue 29)."""

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


def test_where_nncf_fails_on_a_graph_auto_skips_its_candidate_and_says_why(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.core.errors import ConversionError
    from edgekit.quantize.onnx import nncf_recipe
    from edgekit.quantize.onnx.recipes import QuantData
    from edgekit.quantize.onnx.search import OnnxCandidates

    def fails(*_a: object) -> None:
        raise ConversionError("NNCF int8 quantization failed: no quantizer for op X")

    monkeypatch.setattr(nncf_recipe, "nncf_quantize", fails)
    src, data = conv_chain(tmp_path / "chain.onnx"), QuantData("x", images(64), 1, tmp_path)
    s = OnnxCandidates(src, data, lambda _m: None, searching=True)
    assert s.build("nncf") is None  # no candidate: the search goes on without it
    assert any("nncf candidate failed and was skipped" in n and "op X" in n for n in data.notes)
    with pytest.raises(ConversionError):  # asked for by name: the failure is the artifact's
        OnnxCandidates(src, QuantData("x", images(64), 1, tmp_path), lambda _m: None, searching=False).build("nncf")
