"""The int8 range of a tensor only a sigmoid (or tanh) reads is cut where that op saturates (issue 37): MediaPipe's
selfie segmenter's mask logits ran from about -1,150 to 440, one int8 step of 6.25 logits, and its int8 mask kept an
IoU of 0.81 with the float one on real photos (0.89 with the cut). The test graph is a tiny segmenter in MediaPipe's
form (Convolution2DTransposeBias, rewritten as TRANSPOSE_CONV + ADD of the bias, then LOGISTIC) whose logits run
far past the sigmoid's flat ends."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

if TYPE_CHECKING:
    from edgekit.quantize.tflite.recipes import TfliteJob

tf = pytest.importorskip("tensorflow")

LOGIT_SCALE = 60.0
BIAS = 0.25  # edgekit.testing.mediapipe_graphs.segmenter's


def _float_segmenter(tmp_path: Path) -> bytes:
    import edgekit.testing.mediapipe_graphs as mg
    from edgekit.tflite.custom_ops import rewrite_custom_ops

    blob = mg.to_mediapipe_form(mg.segmenter(tmp_path / "seg.tflite", logit_scale=LOGIT_SCALE).read_bytes())
    return rewrite_custom_ops(blob).blob


def _images(n: int, seed: int) -> np.ndarray:
    r = np.random.default_rng(seed)
    low = tf.image.resize(r.random((n, 4, 4, 3)).astype(np.float32), (16, 16)).numpy()
    return np.clip(low + r.normal(0, 0.03, low.shape), 0, 1).astype(np.float32)


def _job(tmp_path: Path, blob: bytes) -> TfliteJob:
    from edgekit.quantize.tflite.recipes import TfliteJob

    (tmp_path / "w").mkdir(exist_ok=True)
    return TfliteJob(tf, Path(), "serving_default", _images(48, 1), 1, "float32", tmp_path / "w", lambda _m: None,
                     cache=tmp_path / "cache", float_tflite=blob)


def _ranges(cal: bytes) -> dict[str, tuple[float, float]]:
    from edgekit.tflite.flatbuffer import FlatModel

    fm = FlatModel(cal)
    return {fm.tensor_name(k): (float(t.quantization.min[0]), float(t.quantization.max[0]))
            for k, t in enumerate(fm.sg.tensors) if t.quantization is not None and t.quantization.min is not None
            and len(t.quantization.min) == 1}


def test_the_mask_logits_and_the_bias_add_before_them_are_cut(tmp_path: Path) -> None:
    from edgekit.quantize.tflite.ranges import SATURATING, cut_saturated_inputs
    from edgekit.quantize.tflite.recipes import calibrated
    from edgekit.tflite.cache import calibrated as measured

    blob = _float_segmenter(tmp_path)
    job = _job(tmp_path, blob)
    raw = _ranges(measured(blob, job.representative, job.data_key(), None, lambda _w: None))
    lo, hi = raw["segment"]
    assert lo < -10 * SATURATING["LOGISTIC"] and hi > 10 * SATURATING["LOGISTIC"], raw["segment"]  # far past flat

    cal = calibrated(job)  # every recipe's calibration: cut here
    got = _ranges(cal)
    bound = SATURATING["LOGISTIC"]
    assert got["segment"] == pytest.approx((-bound, bound))
    # the TRANSPOSE_CONV's own output reaches the sigmoid through the ADD of the bias (0.25): cut to what it needs
    assert got["segment/transpose_conv"] == pytest.approx((-bound - BIAS, bound - BIAS))
    assert got["features"] == raw["features"]  # a tensor the sigmoid does not read alone keeps its range
    assert any("read only by a sigmoid or tanh cut" in n and "segment" in n for n in job.notes), job.notes
    assert cut_saturated_inputs(cal)[1] == []  # already cut: nothing more


def test_int8_keeps_the_mask_where_the_whole_range_loses_its_edges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    import edgekit.quantize.tflite.ranges as ranges
    from edgekit.quantize.tflite.recipes import plain
    from edgekit.quantize.tflite.run import run_tflite

    blob = _float_segmenter(tmp_path)
    (tmp_path / "float.tflite").write_bytes(blob)
    for name in ("cut", "whole"):
        if name == "whole":
            monkeypatch.setattr(ranges, "SATURATING", {})  # the calibrator's whole range, as before
        (tmp_path / name).mkdir()
        (tmp_path / f"{name}.tflite").write_bytes(plain(_job(tmp_path / name, blob)))
    x = _images(32, 7)
    ref, cut, whole = run_tflite([tmp_path / n for n in ("float.tflite", "cut.tflite", "whole.tflite")], x)
    assert ref is not None and cut is not None and whole is not None
    mask = ref > 0.5
    assert 0.2 < mask.mean() < 0.8  # a mask with edges to keep
    flips_cut, flips_whole = float(((cut > 0.5) != mask).mean()), float(((whole > 0.5) != mask).mean())
    assert flips_whole > 2 * flips_cut, (flips_whole, flips_cut)  # 1.23% and 0.54% of the pixels here
    # over the whole range the int8 logits are a step of about 1.2 apart, so the mask's soft edge has a few values
    # (9 here); cut, a step of 0.063, it has the float model's gradation
    edge = (ref > 0.05) & (ref < 0.95)
    levels_whole, levels_cut = len(np.unique(whole[edge])), len(np.unique(cut[edge]))
    assert levels_cut > 5 * levels_whole, (levels_whole, levels_cut)  # 9 and 107 here
    assert float(np.abs(cut - ref)[edge].mean()) < float(np.abs(whole - ref)[edge].mean())  # 0.067 and 0.083


def test_a_tanh_input_is_cut_at_its_own_bound_and_a_graph_output_keeps_its_range(tmp_path: Path) -> None:
    from edgekit.quantize.tflite.ranges import SATURATING, cut_saturated_inputs
    from edgekit.testing.mediapipe_graphs import FloatGraph
    from edgekit.tflite.cache import calibrated as measured

    rng = np.random.default_rng(0)
    g = FloatGraph()
    x = g.tensor("input", [1, 8, 8, 3])
    same = {"padding": g.fb.Padding.SAME, "strideW": 1, "strideH": 1, "dilationWFactor": 1, "dilationHFactor": 1}
    h = g.tensor("wide", [1, 8, 8, 4])  # read by the TANH and, as a graph output, by the user
    g.op("CONV_2D", [x, g.tensor("w", [4, 1, 1, 3], rng.normal(0, 40, (4, 1, 1, 3))), g.tensor("b", [4], np.zeros(4))],
         [h], g.options("Conv2DOptionsT", **same))
    h2 = g.tensor("inner", [1, 8, 8, 4])  # read by the TANH alone
    g.op("CONV_2D", [x, g.tensor("w2", [4, 1, 1, 3], rng.normal(0, 40, (4, 1, 1, 3))),
                     g.tensor("b2", [4], np.zeros(4))], [h2], g.options("Conv2DOptionsT", **same))
    t1, t2 = g.tensor("t1", [1, 8, 8, 4]), g.tensor("t2", [1, 8, 8, 4])
    g.op("TANH", [h], [t1])
    g.op("TANH", [h2], [t2])
    blob = g.blob([x], [t1, t2, h])
    from edgekit.quantize.tflite.recipes import TfliteJob

    job = TfliteJob(tf, Path(), "serving_default", rng.uniform(0, 1, (32, 8, 8, 3)).astype(np.float32), 1, "float32",
                    tmp_path, lambda _m: None)
    raw = _ranges(measured(blob, job.representative, job.data_key(), None, lambda _w: None))
    assert min(raw["inner"]) < -SATURATING["TANH"] and max(raw["inner"]) > SATURATING["TANH"], raw["inner"]
    cal, cut = cut_saturated_inputs(measured(blob, job.representative, job.data_key(), None, lambda _w: None))
    got = _ranges(cal)
    assert cut == ["inner"] and got["inner"] == pytest.approx((-SATURATING["TANH"], SATURATING["TANH"]))
    assert got["wide"] == raw["wide"]  # the user reads it: its range is kept
