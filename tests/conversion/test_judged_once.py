"""One conversion judges its request once: each check runs one time, the output folder is locked once, metered once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from edgekit.conversion import outdir, pipeline, plan
from edgekit.measure import run_meter


def test_a_conversion_checks_each_thing_once_and_locks_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.testing.onnx_graphs import tiny_onnx

    calls: Counter[str] = Counter()

    def spy(module: Any, name: str) -> None:
        real = getattr(module, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)

    for name in ("check_request", "check_modules", "check_outputs"):
        spy(plan, name)
        monkeypatch.setattr(pipeline, name, getattr(plan, name))  # the pipeline's own imports of them
    spy(outdir, "output_lock")
    spy(run_meter, "metering")
    model = tiny_onnx(tmp_path / "tiny.onnx")
    pipeline.convert(model, "onnx", "fp32", out=tmp_path / "out")
    assert (tmp_path / "out" / "manifest.json").is_file()
    assert calls == {"check_request": 1, "check_modules": 1, "check_outputs": 1, "output_lock": 1, "metering": 1}
