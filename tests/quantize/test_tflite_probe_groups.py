"""Mixed precision's probes (TFLite) run in groups whose outputs fit a memory bound, not all in one child.

A YOLOv5n at 640x640 writes 8.6 MB per sample; its 64 layer-group probes and the base on 32 samples were handed back
at once (18 GB), and the conversion was killed for memory on a 24 GB machine. The damage each probe measures is
the same whichever group it runs in.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from edgekit.quantize.tflite import search
from edgekit.quantize.tflite.search import probe_groups


def test_groups_fit_the_bound_and_cover_every_model_once() -> None:
    assert probe_groups(65, 274 << 20, 1 << 30) == [range(i, min(i + 3, 65)) for i in range(0, 65, 3)]
    assert probe_groups(65, 128 << 10, 1 << 30) == [range(0, 65)]  # a classifier's outputs: one child, as before
    assert probe_groups(3, 5 << 30, 1 << 30) == [range(0, 1), range(1, 2), range(2, 3)]  # at least one each
    assert probe_groups(0, 1, 1) == []


def test_each_probe_is_measured_as_alone_and_the_outputs_are_not_held_together(monkeypatch: Any) -> None:
    y_ref = np.zeros((4, 10), np.float32)  # 160 bytes per model's outputs
    calls: list[int] = []

    def run(paths: list[Path], x: np.ndarray) -> list[np.ndarray | None]:
        calls.append(len(paths))
        return [None if p.name == "broken" else np.full_like(y_ref, float(p.name)) for p in paths]

    fmt = SimpleNamespace(run=run)
    monkeypatch.setattr(search, "PROBE_OUTPUT_BYTES", 400)  # two models' outputs per child run
    paths = [Path("1"), Path("2"), Path("broken"), Path("3"), Path("0.5")]
    noise = search._probe_noise(fmt, paths, np.zeros((4, 3), np.float32), y_ref, None)  # type: ignore[arg-type]
    assert calls == [2, 2, 1]
    assert noise[2] == float("inf")  # the one LiteRT could not run
    assert noise[0] < noise[1] < noise[3] and noise[4] < noise[0]  # each its own, in order
