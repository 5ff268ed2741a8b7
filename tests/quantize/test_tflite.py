"""TFLite int8 recipes and Edge TPU graph fixes on small real TensorFlow models."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # TensorFlow: SavedModels built and converted in the test

sys.path.insert(0, str(Path(__file__).parent))
from tf_models import build, images  # noqa: E402


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidates run in this process: these small float-compatible models do not crash LiteRT, and a child per
    stage would cost seconds each (tflite_run's isolation is exercised by the conversion tests)."""
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")


@pytest.fixture(scope="module")
def xs() -> np.ndarray:
    return images(96)


def _job(tf, saved: Path, xs: np.ndarray, work: Path, io: str = "int8", fixes: bool = False):
    from edgekit.quantize.tflite_recipes import TfliteJob

    work.mkdir(parents=True, exist_ok=True)
    return TfliteJob(tf, saved, "serving_default", xs, 1, io, work, lambda _m: None, edgetpu_fixes=fixes)


@pytest.fixture(scope="module")
def spread_saved(tmp_path_factory: pytest.TempPathFactory, tf) -> Path:
    return build(tmp_path_factory.mktemp("tf") / "spread", "plain", spread=1000.0)


@pytest.fixture(scope="module")
def head_saved(tmp_path_factory: pytest.TempPathFactory, tf) -> Path:
    return build(tmp_path_factory.mktemp("tf") / "head", "plain", head_spread=1000.0)


def test_equalization_keeps_the_float_tflite_and_recovers_int8(tf, spread_saved: Path, xs: np.ndarray,
                                                               tmp_path: Path) -> None:
    from edgekit.quantize.tflite_equalize import equalize_tflite
    from edgekit.quantize.tflite_recipes import float_model
    from edgekit.quantize.tflite_run import run_tflite
    from edgekit.quantize.tflite_search import quantize_tflite

    job = _job(tf, spread_saved, xs, tmp_path / "w")
    fb = float_model(job)
    eb, words = equalize_tflite(fb)
    (tmp_path / "f.tflite").write_bytes(fb)
    (tmp_path / "e.tflite").write_bytes(eb)
    y0, y1 = run_tflite([tmp_path / "f.tflite", tmp_path / "e.tflite"], xs)
    assert words.startswith("equalized 3 op pairs")
    np.testing.assert_allclose(y1, y0, rtol=1e-4, atol=1e-5 * float(np.abs(y0).max()))
    r6 = build(tmp_path / "relu6", "relu6", spread=1000.0)  # fused ReLU6 with activations far above 6
    f6 = float_model(_job(tf, r6, xs, tmp_path / "r6"))
    e6, words6 = equalize_tflite(f6)
    (tmp_path / "f6.tflite").write_bytes(f6)
    (tmp_path / "e6.tflite").write_bytes(e6)
    z0, z1 = run_tflite([tmp_path / "f6.tflite", tmp_path / "e6.tflite"], xs)
    assert "3 fused ReLU6 made ReLU + a per-channel MINIMUM" in words6
    np.testing.assert_allclose(z1, z0, rtol=1e-4, atol=1e-5 * float(np.abs(z0).max()))
    _, choice = quantize_tflite(job, "auto")
    assert [t.recipe for t in choice.trials] == ["plain", "equalize"]
    assert not choice.trials[0].passed and choice.met and choice.chosen == "equalize"


def test_mixed_precision_meets_what_plain_misses_but_never_for_an_integer_only_target(
        tf, head_saved: Path, xs: np.ndarray, tmp_path: Path) -> None:
    from edgekit.quantize.tflite_search import quantize_tflite

    _, mixed = quantize_tflite(_job(tf, head_saved, xs, tmp_path / "m"), "mixed")
    assert mixed.met and mixed.chosen == "mixed[plain]" and mixed.float_nodes
    assert 0 < mixed.macs_float_fraction <= 0.5
    _, tpu = quantize_tflite(_job(tf, head_saved, xs, tmp_path / "t", io="uint8"), "mixed", float_free=True)
    assert all(t.float_nodes == 0 for t in tpu.trials) and not tpu.float_nodes
    assert any("Edge TPU" in n for n in tpu.notes)


def test_debugger_diagnosis_ranks_layers(tf, spread_saved: Path, xs: np.ndarray, tmp_path: Path) -> None:
    from edgekit.quantize.tflite_recipes import diagnose_tflite
    from edgekit.quantize.tflite_search import quantize_tflite

    _, choice = quantize_tflite(_job(tf, spread_saved, xs, tmp_path / "d"), "plain")
    diag = diagnose_tflite(choice, xs, "calibration")
    assert diag.layers_total == 4 and {layer.op for layer in diag.layers} >= {"CONV_2D", "DEPTHWISE_CONV_2D"}
    assert diag.layers[0].sqnr_db <= diag.layers[-1].sqnr_db  # worst first
    assert any(layer.act_spread and layer.act_spread > 20 for layer in diag.layers)  # the wide channels are seen


@pytest.mark.parametrize(("pattern", "fix", "min_runtime"), [
    ("hard_swish", "HARD_SWISH -> ADD+RELU6, MUL, MUL", None),
    ("transpose_fc", "TRANSPOSE folded into FULLY_CONNECTED", 13),  # TRANSPOSE maps from runtime 14 only
    ("padv2", "PADV2(-inf) after ReLU -> PAD", None),
])
def test_each_edgetpu_fix_keeps_fidelity_and_raises_the_tpu_op_count(
        tf, xs: np.ndarray, tmp_path: Path, pattern: str, fix: str, min_runtime: int | None) -> None:
    from edgekit.edgetpu.preflight import preflight
    from edgekit.quantize.search import judge
    from edgekit.quantize.tflite_recipes import TfliteJob, float_model, plain
    from edgekit.quantize.tflite_run import run_tflite
    from edgekit.quantize.tflite_search import quantize_tflite

    saved = build(tmp_path / pattern, pattern)
    job = _job(tf, saved, xs, tmp_path / "on", "uint8", fixes=True)
    fixed, choice = quantize_tflite(job, "plain", float_free=True)
    assert choice.edgetpu_fixes is not None and list(choice.edgetpu_fixes["applied"]) == [fix]
    unfixed_job = TfliteJob(tf, saved, "serving_default", xs, 1, "uint8", job.work, lambda _m: None)
    paths = [tmp_path / "fixed.tflite", tmp_path / "unfixed.tflite", tmp_path / "float.tflite"]
    for p, blob in zip(paths, (fixed, plain(unfixed_job), float_model(unfixed_job)), strict=True):
        p.write_bytes(blob)
    before, after = preflight(paths[1], min_runtime), preflight(paths[0], min_runtime)
    assert after.ops_on_tpu == after.ops_total and (before.ops_on_tpu or 0) < before.ops_total
    if min_runtime is None:  # what the record says is what the pre-flight says
        assert choice.edgetpu_fixes["preflight_before"]["ops_on_tpu"] == before.ops_on_tpu
        assert choice.edgetpu_fixes["preflight_after"]["ops_on_tpu"] == after.ops_on_tpu
    from edgekit.tflite_model import read_tflite

    m = read_tflite(paths[0])
    assert [m.tensors[i].dtype for i in (*m.inputs, *m.outputs)] == ["uint8", "uint8"]  # the I/O type asked for
    y_fixed, y_unfixed, y_float = run_tflite(paths, xs)
    assert judge(y_float, y_fixed).passed  # validation's thresholds, against the float model
    assert judge(y_float, y_fixed).cosine >= judge(y_float, y_unfixed).cosine - 1e-3
