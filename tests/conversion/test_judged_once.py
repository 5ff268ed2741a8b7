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


@pytest.mark.slow  # torch.export of a module held in memory, then a real conversion
def test_a_model_in_memory_is_judged_once_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np
    import torch

    import edgekit
    from edgekit.conversion.options import ConvertOptions

    calls: Counter[str] = Counter()
    real_check, real_parse = plan.check_request, ConvertOptions.from_keywords.__func__  # type: ignore[attr-defined]

    def check(*args: Any, **kwargs: Any) -> Any:
        calls["check_request"] += 1
        return real_check(*args, **kwargs)

    def parse(cls: type, **keywords: Any) -> Any:
        calls["parse"] += 1
        return real_parse(cls, **keywords)

    monkeypatch.setattr(plan, "check_request", check)
    monkeypatch.setattr(pipeline, "check_request", check)
    monkeypatch.setattr(ConvertOptions, "from_keywords", classmethod(parse))
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 2)).eval()
    x = np.random.default_rng(0).random((40, 3, 8, 8), dtype=np.float32)
    result = edgekit.convert(model, targets="onnx", quantize="fp32", input_shape=(1, 3, 8, 8), calib=x,
                             out=tmp_path / "out", quiet=True)
    assert [a.status for a in result.manifest.artifacts] == ["ok"]
    assert calls == {"check_request": 1, "parse": 1}
