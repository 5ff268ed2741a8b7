"""examples/notebook/quickstart.py runs end to end as written (plain python runs its cells in order)."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "notebook" / "quickstart.py"


def test_the_example_is_a_percent_format_notebook() -> None:
    text = EXAMPLE.read_text()
    cells = [c for c in text.split("# %%") if c.strip()]
    assert len(cells) >= 8 and text.count("# %% [markdown]") >= 4
    assert "edgekit.convert(model," in text  # the model object, not a file


@pytest.mark.slow  # a real conversion to ONNX and TFLite, a profile and a bench
def test_the_notebook_converts_runs_profiles_and_benches_a_model_in_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Run as `python quickstart.py OUT` runs it, in this process (the frameworks are imported once per suite)."""
    out = tmp_path / "run"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE), str(out)])
    cells = runpy.run_path(str(EXAMPLE), run_name="__main__")
    text = capsys.readouterr().out
    assert cells["accuracy"] >= 0.95  # the least-squares head fits the synthetic task
    for name in ("model.fp32.onnx", "model.int8.onnx", "model.fp32.tflite", "model.int8.tflite"):
        assert name in text, name  # the table
    assert "<LoadedModel model.int8.tflite on litert/cpu: (input: [1, 3, 32, 32] float32 (quantized))" in text
    assert (cells["got"].argmax(1) == cells["want"].argmax(1)).sum() >= 7  # of 8 inputs, int8 TFLite vs torch
    assert "tflite: " in text and "MACs" in text and "p50 " in text
    assert cells["verdict"].verdict == "pass" and "edgekit check: pass" in text
    manifest = json.loads((out / "manifest.json").read_text())
    assert all(a["status"] == "ok" and a["fidelity"]["passed"] for a in manifest["artifacts"])
    assert manifest["source"]["path"].endswith("source/model.pt2")
    assert (out / "source" / "calibration.npz").is_file() and (out / "bench" / "bench.json").is_file()
    assert len(cells["bench"].rows) >= 4
