"""examples/notebook/quickstart.py runs end to end as a notebook runs: its cells, in order, in a real Jupyter kernel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "notebook" / "quickstart.py"

# Appended to the notebook by the test: what the cells computed, printed where the test can read it.
REPORT_CELL = """import json
print("REPORT " + json.dumps({"accuracy": float(accuracy), "agree": int((got.argmax(1) == want.argmax(1)).sum()),
                             "verdict": verdict.verdict, "bench_rows": len(bench.rows), "out": str(out.resolve())}))"""


def notebook_cells(text: str) -> list[tuple[str, str]]:
    """The percent-format script's cells as (kind, source), as jupytext reads them: `# %%` opens a code cell,
    `# %% [markdown]` a markdown cell whose lines lose their leading `# `."""
    cells: list[tuple[str, str]] = []
    for chunk in text.split("# %%")[1:]:
        head, _, body = chunk.partition("\n")
        if head.strip() == "[markdown]":
            lines = [line[2:] if line.startswith("# ") else line.lstrip("#") for line in body.strip().splitlines()]
            cells.append(("markdown", "\n".join(lines)))
        elif body.strip():
            cells.append(("code", body.strip()))
    return cells


def test_the_example_is_a_percent_format_notebook() -> None:
    text = EXAMPLE.read_text()
    cells = notebook_cells(text)
    assert sum(k == "code" for k, _ in cells) >= 6 and sum(k == "markdown" for k, _ in cells) >= 4
    assert "edgekit.convert(model," in text  # the model object, not a file


@pytest.mark.slow  # a real conversion to ONNX and TFLite, a profile and a bench, in a kernel of its own
def test_the_notebook_converts_runs_profiles_and_benches_a_model_in_memory(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.v4.new_notebook()
    for kind, source in notebook_cells(EXAMPLE.read_text()):
        nb.cells.append(nbformat.v4.new_markdown_cell(source) if kind == "markdown" else
                        nbformat.v4.new_code_cell(source))
    nb.cells.append(nbformat.v4.new_code_cell(REPORT_CELL))
    # python3 is the kernel of the interpreter running the tests (jupyter_client's native kernel)
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=600,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", ())
                   if o.get("output_type") == "stream")
    report = json.loads(text.split("REPORT ", 1)[1].splitlines()[0])
    out = tmp_path / "edgekit-out" / "notebook"
    assert Path(report["out"]) == out.resolve()  # not a folder named after the kernel's `-f` flag
    assert not (tmp_path / "-f").exists()
    assert report["accuracy"] >= 0.95  # the least-squares head fits the synthetic task
    for name in ("model.fp32.onnx", "model.int8.onnx", "model.fp32.tflite", "model.int8.tflite"):
        assert name in text, name  # the table
    assert "<LoadedModel model.int8.tflite on litert/cpu: (input: [1, 3, 32, 32] float32 (quantized))" in text
    assert report["agree"] >= 7  # of 8 inputs, int8 TFLite vs torch
    assert "tflite: " in text and "MACs" in text and "p50 " in text
    assert report["verdict"] == "pass" and "edgekit check: pass" in text
    manifest = json.loads((out / "manifest.json").read_text())
    assert all(a["status"] == "ok" and a["fidelity"]["passed"] for a in manifest["artifacts"])
    assert manifest["source"]["path"].endswith("source/model.pt2")
    assert (out / "source" / "calibration.npz").is_file() and (out / "bench" / "bench.json").is_file()
    assert report["bench_rows"] >= 4
