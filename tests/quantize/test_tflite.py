"""TFLite int8 recipes and Edge TPU graph fixes on small real TensorFlow models."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # TensorFlow: SavedModels built and converted in the test

sys.path.insert(0, str(Path(__file__).parent))
from onnx_models import heavy_tailed  # noqa: E402
from tf_models import build, images, squash  # noqa: E402


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


SEARCHED = images(160)  # a search's later candidates need more judged samples (edgekit.quantize.search.margin_z)


def _job(tf, saved: Path, xs: np.ndarray, work: Path, io: str = "int8", fixes: bool = False):
    from edgekit.quantize.tflite.recipes import TfliteJob

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
    from edgekit.quantize.tflite.equalize import equalize_tflite
    from edgekit.quantize.tflite.recipes import float_model
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.quantize.tflite.search import quantize_tflite

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
    # the second candidate must clear a 1.4-sigma bound: 100% of 48 judged samples cannot show 97%, of 80 can
    _, choice = quantize_tflite(_job(tf, spread_saved, SEARCHED, tmp_path / "a"), "auto")
    assert [t.recipe for t in choice.trials] == ["plain", "equalize"]
    assert not choice.trials[0].passed and choice.met and choice.chosen == "equalize"


def test_a_search_whose_judged_samples_cannot_show_the_threshold_stops_there(
        tf, head_saved: Path, tmp_path: Path) -> None:
    """96 calibration samples judge on 48: the second candidate's bound (1.4 sigma) needs 65 even at 100%. Mixed
    precision would be next after plain: never built, and no float share claimed as not enough."""
    from edgekit.quantize.tflite.search import quantize_tflite

    log: list[str] = []
    job = _job(tf, head_saved, SEARCHED[:96], tmp_path / "few")
    job.log = log.append
    _, choice = quantize_tflite(job, "mixed")
    assert [t.recipe for t in choice.trials] == ["plain"] and choice.met is False
    assert choice.macs_float_needed_over is None and not choice.float_nodes
    assert any(n.startswith("the search stopped after 1 candidate: on 48 judged samples") for n in choice.notes)
    assert any("int8 recipe search: the search stopped" in m for m in log)


def test_mixed_precision_meets_what_plain_misses_but_never_for_an_integer_only_target(
        tf, head_saved: Path, xs: np.ndarray, tmp_path: Path) -> None:
    from edgekit.quantize.tflite.search import quantize_tflite

    _, mixed = quantize_tflite(_job(tf, head_saved, SEARCHED, tmp_path / "m"), "mixed")
    assert mixed.met and mixed.chosen == "mixed[plain]" and mixed.float_nodes
    assert 0 < mixed.macs_float_fraction <= 0.5 and mixed.macs_float_needed_over is None
    # the head's wide tensor holds the error: its group alone makes most of it, not a spread error
    assert mixed.worst_group_error_share is not None and mixed.worst_group_error_share > 0.25
    assert mixed.top1_margins is not None and mixed.top1_margins["samples"] == 80
    # with the float cap just under what it needed: plain kept (float-free), the share that missed recorded
    import edgekit.quantize.search as search

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(search, "AUTO_FLOAT_CAP", 0.99 * mixed.macs_float_fraction)
        _, capped = quantize_tflite(_job(tf, head_saved, SEARCHED, tmp_path / "c"), "mixed")
    assert capped.met is False and capped.chosen == "plain" and not capped.float_nodes
    assert all(t.macs_float_fraction <= 0.99 * mixed.macs_float_fraction for t in capped.trials)
    assert capped.macs_float_needed_over is not None and "float-free recipe was kept" in capped.why_words()
    _, tpu = quantize_tflite(_job(tf, head_saved, xs, tmp_path / "t", io="uint8"), "mixed", float_free=True)
    assert all(t.float_nodes == 0 for t in tpu.trials) and not tpu.float_nodes
    assert any("Edge TPU" in n for n in tpu.notes)


def test_debugger_diagnosis_ranks_layers(tf, spread_saved: Path, xs: np.ndarray, tmp_path: Path) -> None:
    from edgekit.quantize.tflite.recipes import diagnose_tflite
    from edgekit.quantize.tflite.search import quantize_tflite

    _, choice = quantize_tflite(_job(tf, spread_saved, xs, tmp_path / "d"), "plain")
    diag = diagnose_tflite(choice, xs, "calibration")
    assert diag.layers_total == 4 and {layer.op for layer in diag.layers} >= {"CONV_2D", "DEPTHWISE_CONV_2D"}
    assert diag.layers[0].sqnr_db <= diag.layers[-1].sqnr_db  # worst first
    assert any(layer.act_spread and layer.act_spread > 20 for layer in diag.layers)  # the wide channels are seen


@pytest.mark.parametrize(("pattern", "fix", "min_runtime"), [
    ("hard_swish", "HARD_SWISH -> ADD+RELU6, MUL, MUL", None),
    ("transpose_fc", "TRANSPOSE folded into FULLY_CONNECTED", 13),  # TRANSPOSE maps from runtime 14 only
    ("padv2", "PADV2(-inf) after ReLU -> PAD", None),
    ("fc4d", "FULLY_CONNECTED on 3-D/4-D -> CONV_2D 1x1", None),
    ("fc3d", "FULLY_CONNECTED on 3-D/4-D -> CONV_2D 1x1", None),
    ("gelu", "GELU -> MUL, LOGISTIC, MUL (x sigmoid(1.702 x))", None),
    ("neg", "NEG -> MUL by -1", None),
    ("square", "SQUARE -> MUL(x, x)", None),
])
def test_each_edgetpu_fix_keeps_fidelity_and_raises_the_tpu_op_count(
        tf, xs: np.ndarray, tmp_path: Path, pattern: str, fix: str, min_runtime: int | None) -> None:
    from edgekit.edgetpu.preflight import preflight
    from edgekit.quantize.search import judge
    from edgekit.quantize.tflite.recipes import TfliteJob, float_model, plain
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.quantize.tflite.search import quantize_tflite

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
    from edgekit.tflite.model import read_tflite

    m = read_tflite(paths[0])
    assert [m.tensors[i].dtype for i in (*m.inputs, *m.outputs)] == ["uint8", "uint8"]  # the I/O type asked for
    y_fixed, y_unfixed, y_float = run_tflite(paths, xs)
    assert judge(y_float, y_fixed).passed  # validation's thresholds, against the float model
    assert judge(y_float, y_fixed).cosine >= judge(y_float, y_unfixed).cosine - 1e-3


# The percentile and mse recipes (edgekit.quantize.tflite.ranges): the calibrated activation ranges, and nothing
# else, replaced by the statistic of the float model's activations.

@pytest.fixture(scope="module")
def squash_saved(tmp_path_factory: pytest.TempPathFactory, tf) -> Path:
    return squash(tmp_path_factory.mktemp("tf") / "squash")


def _quant_fields(blob: bytes) -> list[tuple[str, object, object, object]]:
    from edgekit.tflite.flatbuffer import FlatModel

    fm = FlatModel(blob)
    out = []
    for t in fm.sg.tensors:
        q = t.quantization
        rng = None if q is None or q.min is None else (q.min.tolist(), q.max.tolist())
        out.append((t.name, rng, None if q is None or q.scale is None else q.scale.tolist(), t.buffer))
    return out


def test_the_rewrite_changes_exactly_the_activation_ranges_and_the_model_runs(tf, squash_saved: Path,
                                                                              tmp_path: Path) -> None:
    from edgekit.quantize.tflite.ranges import _ranged, rewrite_ranges
    from edgekit.quantize.tflite.recipes import calibrated, quantized
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.tflite.flatbuffer import FlatModel

    xs = heavy_tailed(16, layout="NHWC")
    job = _job(tf, squash_saved, xs, tmp_path / "w", io="float32")
    cal = calibrated(job)
    names = list(_ranged(FlatModel(cal)))
    assert len(names) == 4  # the input, conv1 (before tanh), tanh, the output: the weights have no calibrated range
    new = {n: (-0.5 - k, 0.25 + k) for k, n in enumerate(names)}
    blob, done = rewrite_ranges(cal, new)
    assert done == 4
    before, after = _quant_fields(cal), _quant_fields(blob)
    assert len(before) == len(after)
    changed = {}
    for b, a in zip(before, after, strict=True):
        assert (a[0], a[2], a[3]) == (b[0], b[2], b[3])  # names, scales, buffers untouched
        if a[1] != b[1]:
            changed[a[0].decode()] = a[1]
    assert changed == {n: ([np.float32(lo)], [np.float32(hi)]) for n, (lo, hi) in new.items()}
    fm0, fm1 = FlatModel(cal), FlatModel(blob)  # the weights and the graph are the same bytes
    assert [bytes(np.asarray(b.data, np.uint8)) if b.data is not None else b"" for b in fm0.model.buffers] == \
        [bytes(np.asarray(b.data, np.uint8)) if b.data is not None else b"" for b in fm1.model.buffers]
    assert [list(o.inputs) for o in fm0.sg.operators] == [list(o.inputs) for o in fm1.sg.operators]
    q = tmp_path / "q.tflite"
    q.write_bytes(quantized(job, blob))
    fq = FlatModel(q.read_bytes())  # the quantizer took the new ranges: scale (hi - lo) / 255, but tanh's own 1/128
    scales = [float(t.quantization.scale[0]) for t in fq.sg.tensors
              if t.quantization is not None and t.quantization.scale is not None and len(t.quantization.scale) == 1]
    for n, (lo, hi) in new.items():
        if n != "Tanh":
            assert min(abs(s / ((hi - lo) / 255) - 1) for s in scales) < 1e-4, n
    (y,) = run_tflite([q], xs)
    assert y is not None and y.shape == (16, 16, 16, 4) and np.isfinite(y).all()


def _sqnr(y0: np.ndarray, y: np.ndarray) -> float:
    return float(10 * np.log10((y0.astype(np.float64) ** 2).sum() / ((y - y0).astype(np.float64) ** 2).sum()))


def test_mse_beats_plain_and_both_statistics_are_recorded(tf, squash_saved: Path, tmp_path: Path) -> None:
    from edgekit.quantize.tflite.recipes import AUTO_ORDER, TFLITE_RECIPES, float_model
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.quantize.tflite.search import quantize_tflite

    calib, held = heavy_tailed(64, seed=0, layout="NHWC"), heavy_tailed(32, seed=1, layout="NHWC")
    paths = [tmp_path / "f.tflite"]
    paths[0].write_bytes(float_model(_job(tf, squash_saved, calib, tmp_path / "f", io="float32")))
    choices = {}
    for name in ("plain", "percentile", "mse"):
        job = _job(tf, squash_saved, calib, tmp_path / name, io="float32")
        blob, choices[name] = quantize_tflite(job, name, float_free=True)
        paths.append(tmp_path / f"{name}.tflite")
        paths[-1].write_bytes(blob)
    y0, *ys = run_tflite(paths, held)
    sqnr = dict(zip(choices, (_sqnr(y0, y) for y in ys), strict=True))
    assert sqnr["mse"] > sqnr["plain"] + 0.5, sqnr
    assert sqnr["percentile"] >= sqnr["plain"] - 0.1, sqnr  # never clips more than 0.001% of the values
    for name, choice in choices.items():  # the manifest's extra.int8_recipe
        d = choice.to_dict()
        assert d["chosen"] == name and d["config"]["calibrate"] == ("minmax" if name == "plain" else name)
        assert d["trials"] == [] and d["met"] is None and d["float_nodes"] == []  # named: validation judges it
    assert any(n.startswith("mse: 4 activation ranges") for n in choices["mse"].notes)
    assert {"percentile", "mse"} <= set(TFLITE_RECIPES) and AUTO_ORDER[-3:-1] == ("percentile", "mse")


def test_relu_0_to_1_becomes_two_muls_the_tpu_maps(tf, tmp_path: Path) -> None:
    """The converter writes RELU_0_TO_1 only from onnx2tf's graphs (PaddleOCR's hard sigmoids), so the model here is
    made by hand: MINIMUM(RELU(t), 1) rewritten as the one op. The fix must give the same floats and leave no op
    the Edge TPU lacks."""
    from tf_models import relu_0_to_1

    from edgekit.edgetpu.fixes import apply_fixes
    from edgekit.edgetpu.rules import RULES
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.tflite.model import read_tflite

    paths = [tmp_path / "relu01.tflite", tmp_path / "fixed.tflite"]
    paths[0].write_bytes(relu_0_to_1(tf, tmp_path))
    fixed, report = apply_fixes(paths[0].read_bytes())
    paths[1].write_bytes(fixed)
    assert report.applied == {"RELU_0_TO_1 -> MUL+RELU6, MUL": 1}
    assert "RELU_0_TO_1" not in [op.op for op in read_tflite(paths[1]).ops]
    assert [op.op for op in read_tflite(paths[0]).ops if op.op not in RULES] == ["RELU_0_TO_1"]  # Coral's table
    assert [op.op for op in read_tflite(paths[1]).ops if op.op not in RULES] == []
    x = np.random.default_rng(0).uniform(-3, 3, (8, 8, 8, 4)).astype(np.float32)
    y0, y1 = run_tflite(paths, x)
    assert 0.0 < y0.mean() < 1.0 and y0.min() == 0.0 and y0.max() == 1.0  # both ends are reached
    np.testing.assert_allclose(y1, y0, atol=1e-6)
