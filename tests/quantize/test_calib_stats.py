"""Calibration statistics (edgekit.quantize.calib_stats) and the ONNX `mse` recipe (edgekit.quantize.onnx.mse): the
MSE range is the one of least int8 error, computed here independently by quantizing the values; the recipe
beats plain where rare large values stretch MinMax's step, in bounded memory, and is recorded in the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx_models import heavy_tailed, squash

from edgekit.quantize.calib_stats import BINS, Histogram, expected_error, mse_range, percentile_range


def _int8_error(x: np.ndarray, lo: float, hi: float) -> float:
    """Mean squared error of X quantized to 256 levels over [LO, HI] (zero point rounded, as onnxruntime and
    TFLite do) and back: what the statistic claims to minimise, measured on the values themselves."""
    x = x.astype(np.float64)
    scale = (hi - lo) / 255.0
    zp = np.round(-lo / scale)
    q = np.clip(np.round(x / scale) + zp, 0, 255)
    return float((((q - zp) * scale - x) ** 2).mean())


@pytest.fixture(scope="module")
def gaussian_with_outliers() -> np.ndarray:
    x = np.random.default_rng(0).standard_normal(300_000).astype(np.float32)
    x[[10, 20_000, 150_000, 299_999]] = [30.0, -28.0, 25.0, 32.0]  # four values 25-32 sigma out
    return x


def _folded(x: np.ndarray, parts: int = 7) -> Histogram:
    h = Histogram()
    for part in np.array_split(x, parts):  # streamed: the span grows as larger values come
        h.add(part)
    return h


def test_mse_clips_below_the_outliers_with_less_error_than_minmax_or_a_tighter_clip(
        gaussian_with_outliers: np.ndarray) -> None:
    x = gaussian_with_outliers
    h = _folded(x)
    lo, hi = mse_range(h)
    assert x.min() < lo < -3 and 3 < hi < x.max()  # clipped below the extremes, not into the bulk
    at_mse = _int8_error(x, lo, hi)
    assert at_mse < 0.8 * _int8_error(x, float(x.min()), float(x.max()))  # minmax
    assert at_mse < 0.8 * _int8_error(x, lo / 2, hi / 2)  # half the MSE range
    assert at_mse < _int8_error(x, lo * 0.9, hi * 0.9) and at_mse < _int8_error(x, lo * 1.1, hi * 1.1)
    # the histogram's model of the error is the measured one
    for r in ((lo, hi), (float(x.min()), float(x.max())), (lo / 2, hi / 2)):
        assert float(expected_error(h, *r)) == pytest.approx(_int8_error(x, *r), rel=0.05)


def test_zeros_cost_nothing_and_a_relu_range_starts_at_zero() -> None:
    x = np.maximum(np.random.default_rng(1).standard_normal(100_000), 0).astype(np.float32)
    h = _folded(x)
    assert h.zeros == int((x == 0).sum()) and h.total == x.size
    lo, hi = mse_range(h)
    assert lo == 0.0 and 3 < hi <= x.max()
    assert _int8_error(x, 0.0, hi) <= _int8_error(x, 0.0, float(x.max()))


def test_histogram_memory_is_fixed_and_percentile_matches_the_values() -> None:
    rng = np.random.default_rng(2)
    h, seen = Histogram(), []
    for k in range(12):  # each batch ten times wider than the last: the bins merge, never grow in number
        part = (rng.standard_normal(5_000) * 10.0 ** (k / 3)).astype(np.float32)
        h.add(part)
        seen.append(part)
    x = np.concatenate(seen)
    assert len(h.counts) == BINS and h.total == x.size and (h.lo, h.hi) == (x.min(), x.max())
    lo, hi = percentile_range(h, 99.0)
    width = 2 * h.t / BINS
    assert abs(lo - np.percentile(x, 0.5)) <= width and abs(hi - np.percentile(x, 99.5)) <= width
    assert percentile_range(h, 100.0) == pytest.approx((x.min(), x.max()), abs=width)


def _sqnr(y0: np.ndarray, y: np.ndarray) -> float:
    return float(10 * np.log10((y0.astype(np.float64) ** 2).sum() / ((y - y0).astype(np.float64) ** 2).sum()))


def test_onnx_mse_recipe_beats_plain_where_rare_values_stretch_the_step(tmp_path: Path) -> None:
    from edgekit.quantize.onnx.graph import run_batches, session
    from edgekit.quantize.onnx.recipes import ONNX_RECIPES, QuantData
    from edgekit.quantize.onnx.search import AUTO_ORDER

    model = squash(tmp_path / "squash.onnx")
    calib, held = heavy_tailed(64, seed=0), heavy_tailed(32, seed=1)
    y0 = run_batches(session(str(model)), held)[0]
    sqnr = {}
    for name in ("plain", "mse"):
        work = tmp_path / name
        work.mkdir()
        ONNX_RECIPES[name]().build(model, work / "q.onnx", QuantData("x", calib, 1, work))
        sqnr[name] = _sqnr(y0, run_batches(session(str(work / "q.onnx")), held)[0])
    assert sqnr["mse"] > sqnr["plain"] + 1.0, sqnr
    cache = json.loads((tmp_path / "mse" / "calibration.mse.json").read_text())  # onnxruntime's cache format
    assert cache["calibration_method"]["value"] == "CalibrationMethod.MinMax"
    ranges = cache["data"]
    assert {"x", "h1", "a1", "y"} <= ranges.keys()
    assert ranges["x"]["highest"] < calib.max() and ranges["x"]["lowest"] > calib.min()  # clipped
    # auto tries it among the float-free recipes, before mixed precision
    assert "mse" in AUTO_ORDER and AUTO_ORDER.index("mse") > AUTO_ORDER.index("plain")


def test_onnx_mse_calibrates_a_chunk_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from onnxruntime.quantization import calibrate

    from edgekit.quantize.onnx import calibrate as ort_calibrate
    from edgekit.quantize.onnx.mse import MseCollector
    from edgekit.quantize.onnx.ort import quantize
    from edgekit.quantize.onnx.recipes import OnnxRecipeConfig, QuantData

    model = squash(tmp_path / "squash.onnx")
    held: list[int] = []
    clear = calibrate.HistogramCalibrater.clear_collected_data

    def spy(self: calibrate.HistogramCalibrater) -> None:
        assert isinstance(self.collector, MseCollector)  # edgekit's fixed-size histograms, not onnxruntime's
        held.append(len(self.intermediate_outputs))
        clear(self)

    monkeypatch.setattr(calibrate.HistogramCalibrater, "clear_collected_data", spy)
    monkeypatch.setattr(ort_calibrate, "CHUNK_BYTES", 3 * ort_calibrate.run_bytes(model))
    quantize(model, tmp_path / "q.onnx", QuantData("x", heavy_tailed(12), 1, tmp_path), OnnxRecipeConfig("mse"))
    assert held == [3, 3, 3, 3]  # three samples' tensors at most, folded, dropped
    assert (tmp_path / "q.onnx").is_file()


@pytest.mark.slow
def test_the_manifest_records_the_mse_recipe(tmp_path: Path) -> None:
    from edgekit.conversion.pipeline import convert
    from edgekit.core.artifact import Manifest

    model = squash(tmp_path / "squash.onnx")
    np.save(tmp_path / "calib.npy", heavy_tailed(96))
    result = convert(model, "onnx", "int8", calib=str(tmp_path / "calib.npy"), out=tmp_path / "out",
                     int8_recipe="mse")
    art = Manifest.from_dict(json.loads(result.manifest_path.read_text())).artifacts[0]
    rec = art.extra["int8_recipe"]
    assert rec["requested"] == "mse" and rec["chosen"] == "mse" and rec["config"]["calibrate"] == "mse"
    assert rec["trials"] == [] and rec["met"] is None  # a named recipe: validation judges it, not the search too
    assert rec["cost"]["plain_size_bytes"] > 0  # compared with plain int8, as every named recipe is
