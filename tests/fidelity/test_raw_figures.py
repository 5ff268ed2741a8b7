"""A detector's raw-output figures (cosine, relative error, max abs error) are computed a few samples at a time, and
equal the whole batch's: the whole batch in float64 was 5 GB of copies for a 640x640 YOLOv5's 63 held-out images."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgekit.fidelity import metrics


def test_chunked_figures_equal_the_whole_batchs(monkeypatch: Any) -> None:
    rng = np.random.default_rng(0)
    y_ref = [rng.normal(size=(7, 30, 6)).astype(np.float32), rng.normal(size=(7, 30, 1)).astype(np.float32)]
    y = [r + rng.normal(scale=0.05, size=r.shape).astype(np.float32) for r in y_ref]
    y[0][3, 0, 0] = np.nan  # a non-finite value counts as 0, as before
    a = np.concatenate([r.reshape(7, -1) for r in y_ref], axis=1).astype(np.float64)
    b = np.nan_to_num(np.concatenate([r.reshape(7, -1) for r in y], axis=1).astype(np.float64), nan=0.0)
    whole = (metrics.cosine(a, b), metrics.relative_error(a, b), float(np.abs(a - b).max()))
    monkeypatch.setattr(metrics, "RAW_CHUNK_BYTES", 3 * 210 * 8)  # three samples per chunk: 3, 3, then 1
    chunked = metrics._raw_figures(y_ref, y, 7)
    np.testing.assert_allclose(chunked, whole, rtol=1e-12)
    monkeypatch.setattr(metrics, "RAW_CHUNK_BYTES", 1)  # at least one sample per chunk
    np.testing.assert_allclose(metrics._raw_figures(y_ref, y, 7), whole, rtol=1e-12)
