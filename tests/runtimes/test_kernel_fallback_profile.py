"""`edgekit profile` and `bench` on models LiteRT cannot run as asked: a native crash is exit 6, an
XNNPACK refusal is measured with the builtin kernels and the JSON says so (runtime.details.kernels)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bad_tflite import aborts_everywhere, xnnpack_refuses_builtin_aborts, xnnpack_refuses_builtin_runs
from tflite_builder import conv_chain

from edgekit.measure.settings import MeasureSettings

pytest.importorskip("ai_edge_litert")
FAST = ["--runs", "3", "--min-seconds", "0", "--warmup", "1", "--device", "cpu", "--json"]


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGEKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "edgekit-cache"))


@pytest.mark.parametrize("make", [aborts_everywhere, xnnpack_refuses_builtin_aborts])
def test_profile_of_a_model_that_aborts_litert_exits_6(tmp_path: Path, make, capsys) -> None:
    from edgekit.cli import main

    code = main(["profile", str(make(tmp_path / "bad.tflite")), *FAST])
    _, err = capsys.readouterr()
    assert code == 6
    assert "LiteRT crashed (SIGABRT) while loading and running bad.tflite" in err
    assert "Traceback" not in err


def test_profile_falls_back_to_builtin_kernels_and_says_so(tmp_path: Path, capsys) -> None:
    from edgekit.cli import main

    code = main(["profile", str(xnnpack_refuses_builtin_runs(tmp_path / "m.tflite")), *FAST])
    out, _ = capsys.readouterr()
    assert code == 0
    data = json.loads(out)
    details = data["runtime"]["details"]
    assert details["kernels"] == "builtin" and "failed to prepare" in details["kernels_note"]
    assert any(n.startswith("measured with LiteRT's builtin kernels (no delegate): XNNPACK refused")
               for n in data["notes"])


def test_profile_kernels_option_and_the_default(tmp_path: Path) -> None:
    from edgekit.core.errors import RuntimeFailure
    from edgekit.measure.profile import profile_artifact

    s = MeasureSettings(runs=3, min_seconds=0, warmup=1)
    good = conv_chain(tmp_path / "conv.tflite")
    assert profile_artifact(good, device="cpu", settings=s).runtime.details["kernels"] == "xnnpack"
    r = profile_artifact(good, device="cpu", settings=s, options={"kernels": "builtin"})
    assert r.runtime.details["kernels"] == "builtin" and r.runtime.details["delegates"] == []
    with pytest.raises(RuntimeFailure, match="failed to prepare"):  # asked for XNNPACK: no fallback
        profile_artifact(xnnpack_refuses_builtin_runs(tmp_path / "m.tflite"), device="cpu", settings=s,
                         options={"kernels": "xnnpack"})


def test_bench_rows_fall_back_and_crash_alone(tmp_path: Path) -> None:
    """Bench's rows are `edgekit profile` children: the refused model is measured on the builtin kernels,
    the crashing one fails its row only."""
    from edgekit.measure.bench import bench
    from edgekit.measure.bench_report import BenchSettings

    conv_chain(tmp_path / "good_int8.tflite")
    xnnpack_refuses_builtin_runs(tmp_path / "refused_int8.tflite")
    aborts_everywhere(tmp_path / "crash_int8.tflite")
    report = bench(tmp_path, BenchSettings(runtimes=["litert"], include_source=False, runs=3, min_seconds=0,
                                           warmup=1), out_dir=tmp_path / "out").to_dict()
    rows = {Path(r["path"]).name: r for r in report["rows"]}
    assert rows["good_int8.tflite"]["status"] == "ok"
    assert rows["refused_int8.tflite"]["status"] == "ok" and "builtin kernels" in rows["refused_int8.tflite"]["note"]
    assert rows["crash_int8.tflite"]["status"] == "failed" and "SIGABRT" in rows["crash_int8.tflite"]["note"]
    kernels = {Path(r["artifact"]["path"]).name: r["runtime"]["details"]["kernels"] for r in report["results"]}
    assert kernels == {"good_int8.tflite": "xnnpack", "refused_int8.tflite": "builtin"}
