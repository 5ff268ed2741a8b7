"""bench/zoo_report.py keeps the rows of an earlier docs/zoo.md for the models without a local result JSON.

The last full zoo run's JSONs stayed on the machine that ran it; its rows live only in docs/zoo.md. A report
written here regenerates the rows it has a JSON for and keeps the others, marked with their run's date,
counted honestly in the summary. Hand-written pages and records: no model is built (milliseconds).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
COLS = "| model | source | params | input | src acc | onnx fp32 | onnx int8 | tflite fp32 | tflite int8 | " \
       "edgetpu int8 | Edge TPU (predicted) | time | peak RSS |"
KILLED = "**killed at the 12 GiB RSS cap**"

# An earlier page as the last full run wrote it (no marks): three rows, their failure lines, a planned list.
EARLIER = f"""# Model-zoo coverage

**Summary: 3 of 26 models run: ...**

- Date: 2026-11-23T10:57:03+00:00 to 2026-11-23T11:58:09+00:00
- Machine: Linux x86_64, AMD EPYC, 2 cores, 24 GiB (shared with other work while measuring)

{COLS}
|---|---|---|---|---|---|---|---|---|---|---|---|---|
| `mnist_cnn` | edgekit `models/mnist_cnn.pt2` (bundled, trained) | - | 1x28x28 | 98% | ok: agree 100%, acc 98% | ok: agree 100%, acc 98% | ok: agree 100%, acc 98% | ok: agree 100%, acc 98% | ok: agree 100%, acc 98% | 10/10 ops | 24.0 s | 1.1 GB |
| `hf_resnet18` | transformers `ResNet` (ResNet-18) | 11.2 M | 160x160x3 | 64% | ok: agree 100%, acc 64% | ok, **fidelity miss**: agree 84%, acc 62% | ok: agree 100%, acc 64% | **FAILED** at validate | **FAILED** at validate | - | 104.6 s | 2.6 GB |
| `keras_resnet50` | keras `ResNet50` | 23.6 M | 160x160x3 | - | {KILLED} | {KILLED} | {KILLED} | {KILLED} | {KILLED} | - | 21.4 s | **13.0 GB** (over) |

## Failures

- `hf_resnet18` tflite int8 at validate: LiteRT crashed (SIGABRT) while validating hf_resnet18.int8.tflite
- `hf_resnet18` edgetpu int8 at validate: LiteRT crashed (SIGABRT) while validating hf_resnet18.int8-uint8io.tflite
- `keras_resnet50` convert: killed at the 12 GiB RSS cap after 21.4 s: last line of its log: > calibration

## Planned, not run yet

- `hf_mobilenet_v2`: transformers `MobileNetV2` (1.0, 224 config)
"""  # noqa: E501 - a page's table rows are one line each



def _artifact(fmt: str, precision: str, path: str, agree: float) -> dict[str, Any]:
    fid = {"samples": 200, "top1_agreement": agree, "accuracy": 0.98, "reference_accuracy": 0.98, "passed": True}
    return {"path": path, "format": fmt, "precision": precision, "status": "ok", "fidelity": fid, "extra": {}}


def _mnist_record(date: str = "2026-11-23T16:40:00+00:00") -> dict[str, Any]:
    arts = [_artifact("onnx", "fp32", "m.fp32.onnx", 1.0), _artifact("onnx", "int8", "m.int8.onnx", 1.0),
            _artifact("tflite", "fp32", "m.fp32.tflite", 1.0), _artifact("tflite", "int8", "m.int8.tflite", 0.99),
            _artifact("tflite", "int8", "m.int8-uint8io.tflite", 0.99)]
    return {"name": "mnist_cnn", "package": "edgekit", "class": "models/mnist_cnn.pt2", "note": "bundled, trained",
            "date": date, "machine": "Linux x86_64, test CPU, 2 cores, 24 GiB",
            "source": {"file": "models/mnist_cnn.pt2", "params": 0, "layout": "NCHW", "input": "1x28x28"},
            "command": "python -m edgekit.cli convert models/mnist_cnn.pt2 ...",
            "convert": {"exit_code": 0, "seconds": 31.5, "peak_rss_bytes": 900_000_000, "peak_tree_rss_bytes": 0,
                        "load_avg": {"mean": 7.5, "max": 9.25, "cores": 2}},
            "status": "ok", "manifest": {"artifacts": arts, "tool_versions": {"onnx": "1.23.2"}, "run": {}}}


def _page(tmp_path: Path, text: str = EARLIER) -> tuple[Path, Path]:
    results, doc = tmp_path / "results", tmp_path / "docs" / "zoo.md"
    results.mkdir()
    doc.parent.mkdir()
    doc.write_text(text)
    return results, doc


def _row(text: str, name: str) -> str:
    return next(ln for ln in text.splitlines() if ln.startswith(f"| `{name}`"))


def test_rows_without_a_json_are_kept_marked_with_their_run(zoo_report: ModuleType, tmp_path: Path) -> None:
    results, doc = _page(tmp_path)
    (results / "mnist_cnn.json").write_text(json.dumps(_mnist_record()))
    text = zoo_report.report(results, doc, use_commit=False).read_text()

    mark = "(earlier run, 2026-11-23 10:57-11:58 UTC)"
    # regenerated from the JSON: its own figures, no mark
    assert _row(text, "mnist_cnn").startswith("| `mnist_cnn` | edgekit")
    assert "31.5 s" in _row(text, "mnist_cnn") and "24.0 s" not in text
    # kept: the earlier cells, marked with the earlier run's date, in the zoo's order
    assert _row(text, "hf_resnet18").startswith(f"| `hf_resnet18` {mark} | transformers `ResNet`")
    assert _row(text, "hf_resnet18").count("**FAILED** at validate") == 2
    assert _row(text, "keras_resnet50").count(KILLED) == 5
    assert text.index("`mnist_cnn` |") < text.index("`hf_resnet18` (") < text.index("`keras_resnet50` (")
    # their failure lines too, marked; the planned list's bullet is not a failure
    fails = text.split("## Failures")[1].split("## Planned")[0]
    assert fails.count(f"- `hf_resnet18` {mark} ") == 2 and f"- `keras_resnet50` {mark} convert: killed" in fails
    assert "hf_mobilenet_v2" not in fails
    # the summary counts both, and says which is which
    n = len(zoo_report.ZOO)  # the catalogue's classifier rows, timm's included
    assert (f"**Summary: 3 of {n} models have a result (1 run here, 2 kept from an earlier run and marked so): "
            "1 fully converted, 1 with per-artifact failures, 1 aborted or timed out; 1 artifact(s) made but "
            f"below the fidelity thresholds; 1 over the resource bounds (180 s, 4 GiB); {n - 3} planned, not run yet.**"
            ) in text
    assert "- `hf_mobilenet_v2`: transformers `MobileNetV2`" in text.split("## Planned, not run yet")[1]
    assert "`keras_resnet50` (killed at the 12 GiB RSS cap)" in text  # in the list to rerun where there is room
    assert "- Date: 2026-11-23T16:40:00+00:00 to 2026-11-23T16:40:00+00:00 (the rows run here)" in text
    assert "- Each row's run (UTC): `mnist_cnn` 2026-11-23 16:40." in text
    assert "load average 7.5 on average, up to 9.2" in text

    # written again from its own output: the same page (the marks keep their dates, nothing doubles)
    assert zoo_report.report(results, doc, use_commit=False).read_text() == text

    # its JSON gone, the regenerated row is kept in turn, dated by its own run
    (results / "mnist_cnn.json").unlink()
    again = zoo_report.report(results, doc, use_commit=False).read_text()
    assert _row(again, "mnist_cnn").startswith("| `mnist_cnn` (earlier run, 2026-11-23 16:40 UTC) | edgekit")
    assert _row(again, "hf_resnet18") == _row(text, "hf_resnet18")
    assert "(0 run here, 3 kept from an earlier run and marked so)" in again


def test_rows_a_page_lost_come_back_from_the_last_commit(zoo_report: ModuleType, tmp_path: Path) -> None:
    """A run under an older report rewrote the page without the rows it had no JSON for: the committed page has
    them."""
    results, doc = _page(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "docs/zoo.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "page"], check=True)
    doc.write_text("# Model-zoo coverage\n\n## Planned, not run yet\n\n- `hf_resnet18`: transformers `ResNet`\n")
    text = zoo_report.report(results, doc).read_text()
    assert _row(text, "hf_resnet18").startswith("| `hf_resnet18` (earlier run, 2026-11-23 10:57-11:58 UTC) |")
    assert "(0 run here, 3 kept from an earlier run and marked so)" in text


def test_task_rows_are_kept_as_well(zoo_report: ModuleType, tmp_path: Path) -> None:
    """`report --tasks` rewrites only its section, keeping a task row without a JSON and its failure lines."""
    task_cols = ("| model | source | params | input | outputs | task (source) | onnx fp32 | onnx int8 | tflite fp32 "
                 "| tflite int8 | edgetpu int8 | time | peak RSS |")
    section = "\n".join([
        zoo_report.TASKS_HEADING, "", "Run 2026-11-23T13:20:20+00:00 to 2026-11-23T14:51:08+00:00 on a machine.", "",
        task_cols, "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        "| `ppocr_cls` | PP-OCR cls (trained) | 133.8 k | 3x48x192 | `y` 2 classes | 99.0% | ok: `y` top-1 100.0% "
        "| ok: `y` top-1 100.0% | **FAILED** at onnx_to_savedmodel (`Add@0`) | **FAILED** at onnx_to_savedmodel "
        "(`Add@0`) | **FAILED** at onnx_to_savedmodel (`Add@0`) | 35.2 s | 1.4 GB |", "",
        zoo_report.TASK_FAILURES, "",
        "- `ppocr_cls` tflite fp32 at onnx_to_savedmodel: at ONNX node Add@0: Dimension -1 must be >= 0", ""])
    results, doc = _page(tmp_path, EARLIER + "\n" + section)
    text = zoo_report.report_tasks(results, doc, use_commit=False).read_text()
    assert text.startswith(EARLIER.rstrip("\n"))  # the classifier part as it was
    mark = "`ppocr_cls` (earlier run, 2026-11-23 13:20-14:51 UTC)"
    assert _row(text, "ppocr_cls").startswith(f"| {mark} | PP-OCR cls")
    assert f"- {mark} tflite fp32 at onnx_to_savedmodel: at ONNX node Add@0" in text
    assert ("**2 of 5 artifacts requested (1 task models x 5) made and passing on every output; 0 made below the "
            "thresholds, 3 failed on their own, 0 never made (their run was killed, timed out or aborted); 1 of the "
            "models from an earlier run.**") in text


def test_the_page_says_inflated_only_when_the_machine_was_busy(zoo_report: ModuleType) -> None:
    def rec(mean: float) -> dict[str, Any]:
        return {"convert": {"load_avg": {"mean": mean, "max": mean + 1, "cores": 2}}}

    assert "little else running" in zoo_report._machine_words([rec(1.2), rec(2.0)])
    assert "inflated" in zoo_report._machine_words([rec(9.0), rec(11.0)])
    assert "inflated" in zoo_report._machine_words([{"convert": {}}])  # not recorded: no quiet claim


def test_the_page_says_which_code_the_rows_ran(zoo_report: ModuleType) -> None:
    def rec(commit: str | None, changed: bool | None = False) -> dict[str, Any]:
        return {"edgekit": {"commit": commit, "edgekit_changed": changed}} if commit else {}

    assert zoo_report.revision_words([rec("d729ab7"), rec("d729ab7")]) == \
        "every row ran at commit d729ab7, edgekit/ unchanged"
    mixed = zoo_report.revision_words([rec("d729ab7"), rec("d729ab7", True), rec(None)])
    assert "commit d729ab7, edgekit/ unchanged (1 row)" in mixed
    assert "commit d729ab7 with local changes to edgekit/ (1 row)" in mixed
    assert "unrecorded commit" in mixed  # an old row claims nothing about its code


def test_a_row_records_the_commit_and_whether_edgekit_differs(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        zoo_models = importlib.import_module("zoo_models")
    finally:
        sys.path.remove(str(BENCH))
    rev = zoo_models.edgekit_revision()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=BENCH.parent, capture_output=True,
                          text=True).stdout.strip()
    if not head:
        pytest.skip("not a git checkout")
    assert rev["commit"] == head and isinstance(rev["edgekit_changed"], bool)


def test_many_kept_runs_are_said_as_a_span(zoo_report: ModuleType) -> None:
    """A page that dated each row keeps one date per row: 26 of them listed would fill a paragraph."""
    kept = [zoo_report.KeptRow(f"m{i}", {}, (), f"2026-11-25 17:{30 + i} UTC") for i in range(4)]
    assert "(4 runs from 2026-11-25 17:30 UTC to 2026-11-25 17:33 UTC)" in zoo_report._kept_note(kept)
    assert "(2026-11-25 17:30 UTC, 2026-11-25 17:31 UTC)" in zoo_report._kept_note(kept[:2])
