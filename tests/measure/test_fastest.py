"""`profile --device auto` (edgekit.api.measure.profile, which the CLI calls) takes the runtime and device this
machine's bench report measured fastest for the file (edgekit.measure.fastest); only a row of this very file on this
very machine counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgekit.api.measure import profile
from edgekit.core.fsutil import sha256_path
from edgekit.measure.bench_report import BenchReport, BenchRow
from edgekit.measure.devices import host_info
from edgekit.measure.fastest import fastest_for


def _bench(model: Path, rows: list[tuple[str, float]], host: dict | None = None, sha: str | None = None) -> None:
    report = BenchReport(host=host_info() if host is None else host, rows=[
        BenchRow(label=f"onnx fp32 {rt}", path=str(model), sha256=sha or sha256_path(model), runtime=rt, device="cpu",
                 p50_ms=p50, status="ok") for rt, p50 in rows])
    (model.parent / "bench").mkdir(exist_ok=True)
    (model.parent / "bench" / "bench.json").write_text(json.dumps(report.to_dict()))


def test_only_this_files_rows_on_this_machine_count(tmp_path: Path) -> None:
    from edgekit.testing.onnx_graphs import tiny_onnx

    model = tiny_onnx(tmp_path / "tiny.onnx")
    sha = sha256_path(model)
    assert fastest_for(model, sha) is None  # no report
    _bench(model, [("onnxruntime", 0.30), ("openvino", 0.12)])
    runtime, device, why = fastest_for(model, sha) or ("", "", "")
    assert (runtime, device) == ("openvino", "cpu") and "p50 0.120 ms of 2 rows" in why
    assert fastest_for(model, "another-sha") is None  # converted again since: the rows are of another file
    _bench(model, [("openvino", 0.12)], host={**host_info(), "cpu_model": "Cortex-A72"})
    assert fastest_for(model, sha) is None  # another machine's speed
    (model.parent / "bench" / "bench.json").write_text("{not json")
    assert fastest_for(model, sha) is None  # unreadable: the defaults decide, as without a report


def test_profile_device_auto_measures_on_the_fastest_row_and_says_so(tmp_path: Path) -> None:
    pytest.importorskip("openvino")
    from edgekit.testing.onnx_graphs import tiny_onnx

    model = tiny_onnx(tmp_path / "tiny.onnx")
    _bench(model, [("onnxruntime", 0.30), ("openvino", 0.12)])
    quick = {"runs": 5, "min_seconds": 0.01, "warmup": 1, "quiet": True}
    result = profile(model, **quick)
    assert result.runtime.name == "openvino" and any("fastest row" in n for n in result.notes)
    assert profile(model, runtime="onnxruntime", **quick).runtime.name == "onnxruntime"
    assert profile(model, device="cpu", **quick).runtime.name == "onnxruntime"  # a device named: the user's choice
