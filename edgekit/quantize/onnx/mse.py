"""The ONNX `mse` calibration: onnxruntime's histogram calibrator runs the model, edgekit's collector folds the
tensors and picks each one's MSE range (edgekit.quantize.calib_stats), and quantize_static reads the ranges from a
calibration cache.

Why this way: onnxruntime 1.32 has no MSE method (CalibrationMethod: MinMax, Entropy, Percentile, Distribution),
and quantize_static builds its calibrator itself. Its HistogramCalibrater does the rest that is wanted (it adds
every tensor to quantize as a graph output and runs the session) and makes its collector only where none is set,
so edgekit's collector takes that place: the same `collect` call, fed a chunk of samples at a time
(edgekit.quantize.onnx.calibrate), folded into fixed-size histograms, so memory stays bounded. The ranges are then
written as a MinMax calibration cache (`calibration_cache_path`, onnxruntime's own format: per tensor the lowest
and highest value), which quantize_static uses as it would its MinMax ranges; mixed precision reuses that cache.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.quantize.calib_stats import Histogram, mse_range


class MseCollector:
    """onnxruntime's HistogramCollector interface (collect / compute_collection_result), edgekit's histograms."""

    def __init__(self) -> None:
        self.hists: dict[str, Histogram] = {}

    def collect(self, name_to_arr: dict[str, list[np.ndarray]]) -> None:
        for name, arrays in name_to_arr.items():
            h = self.hists.setdefault(name, Histogram())
            for a in arrays:
                h.add(a)

    def compute_collection_result(self) -> dict[str, tuple[np.float32, np.float32]]:
        return {name: tuple(np.float32(v) for v in mse_range(h)) for name, h in self.hists.items()}


def write_mse_cache(src: Path, data: Any, cache: Path) -> dict[str, tuple[float, float]]:
    """Calibrate SRC on DATA's samples (a chunk at a time) and write each tensor's MSE range as onnxruntime's
    MinMax calibration cache at CACHE; the ranges."""
    from onnxruntime.quantization.calibrate import (
        CalibrationMethod,
        TensorsData,
        create_calibrator,
        save_tensors_data,
    )

    from edgekit.quantize.onnx.calibrate import chunked_reader

    with tempfile.TemporaryDirectory(dir=data.work, prefix="mse-") as tmp:
        calibrator = create_calibrator(Path(src), None, augmented_model_path=str(Path(tmp) / "augmented.onnx"),
                                       calibrate_method=CalibrationMethod.Percentile)
        collector = MseCollector()
        calibrator.collector = collector  # HistogramCalibrater.collect_data makes its own only where none is set
        reader = chunked_reader(src, data.name, data.samples, data.batch, data.feeds)
        for k in range(len(reader)):  # each chunk run, folded, dropped (collect_data clears what it held)
            reader.set_range(k, k + 1)
            calibrator.collect_data(reader)
        del calibrator
    ranges = collector.compute_collection_result()
    save_tensors_data(TensorsData(CalibrationMethod.MinMax, dict(ranges)), cache)
    return {k: (float(lo), float(hi)) for k, (lo, hi) in ranges.items()}


__all__ = ["MseCollector", "write_mse_cache"]
