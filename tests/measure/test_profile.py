"""edgekit profile: statistics on known inputs, the timed loop, real profiling of small artifacts, the CLI."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgekit.core.errors import NotAvailable, UsageError
from edgekit.core.fsutil import sha256_file
from edgekit.measure.loop import timed_loop
from edgekit.measure.machine import measured_peak
from edgekit.measure.profile import REQUIRED, ProfileResult, profile_artifact
from edgekit.measure.settings import MeasureSettings
from edgekit.measure.stats import latency_stats

FAST = MeasureSettings(runs=20, min_seconds=0.05, warmup=2)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGEKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "edgekit-cache"))


def test_latency_stats_known_values() -> None:
    s = latency_stats([int(v * 1e6) for v in range(1, 101)])  # 1 .. 100 ms
    assert s.p50 == pytest.approx(50.5) and s.p90 == pytest.approx(90.1) and s.p99 == pytest.approx(99.01)
    assert s.mean == pytest.approx(50.5) and s.std == pytest.approx(29.011491975882016)
    assert (s.min, s.max, s.n) == (1.0, 100.0, 100)
    assert list(s.to_dict()) == ["p50", "p90", "p99", "mean", "std", "min", "max", "n"]
    one = latency_stats([2_000_000])
    assert one.std == 0.0 and one.p99 == 2.0


def test_timed_loop_count_duration_and_rotation() -> None:
    hits = [0, 0, 0]
    calls = [lambda i=i: hits.__setitem__(i, hits[i] + 1) for i in range(3)]
    times, window = timed_loop(calls, runs=30, min_seconds=0.0)
    assert len(times) == 30 and hits == [10, 10, 10] and all(t >= 0 for t in times)
    times, window = timed_loop([lambda: None], runs=5, min_seconds=0.05)
    assert len(times) > 5 and window >= 0.05e9  # the minimum duration holds too
    slow, _ = timed_loop([lambda: time.sleep(0.002)], runs=3, min_seconds=0.0)
    assert len(slow) == 3 and min(slow) >= 2_000_000


def test_profile_onnx(tiny_models: dict[str, Any]) -> None:
    path = Path(tiny_models["models"]["onnx"])
    r = profile_artifact(path, device="cpu", settings=FAST).to_dict()
    assert all(k in r for k in REQUIRED)
    assert r["artifact"] == {"path": str(path), "sha256": sha256_file(path), "format": "onnx", "precision": None,
                             "precision_source": None, "size_bytes": path.stat().st_size}
    assert r["runtime"]["name"] == "onnxruntime" and r["runtime"]["version"]
    assert r["device"]["name"] == "cpu" and r["device"]["cpu_cores_logical"] >= 1 and r["device"]["cpu_model"]
    lat = r["latency_ms"]
    assert lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"] and lat["n"] == r["runs"] >= 20
    assert r["timed_seconds"] >= 0.05 and r["load_ms"] > 0 and r["first_inference_ms"] > 0
    assert r["throughput_per_s"] == pytest.approx(r["runs"] / r["timed_seconds"])
    assert r["memory"]["peak_rss_bytes"] > 10e6 and r["memory"]["artifact_bytes"] == path.stat().st_size
    assert r["settings"] == {"runs": 20, "min_seconds": 0.05, "warmup": 2, "threads": None, "batch": 1,
                             "input": "random", "raw_io": False, "idle_baseline": False}
    assert r["inputs"] == [{"name": "input", "shape": [1, 1, 28, 28], "dtype": "float32"}]
    comp = r["compute"]
    if comp["macs"] is not None:  # counted by edgekit inspect
        assert comp["macs"] == 59264  # conv 26*26*4*9 + conv 11*11*8*36 + dense 8*10
        assert comp["gmacs_per_s"] == pytest.approx(59264 / (lat["p50"] / 1e3) / 1e9)
        assert comp["fraction_of_peak"] == pytest.approx(comp["gmacs_per_s"] / comp["cpu_peak_gmacs_per_s"])
    pw = r["power"]
    assert pw["measured"] is False and pw["avg_watts"] is None and pw["reason"].startswith("not measured")


def test_profile_int8_tflite_batch_and_real_inputs(tiny_models: dict[str, Any]) -> None:
    path = tiny_models["models"]["tflite-int8"]
    r = profile_artifact(path, device="cpu", settings=MeasureSettings(runs=10, min_seconds=0, warmup=1, batch=4),
                         macs=59264).to_dict()
    assert r["inputs"][0]["shape"] == [4, 28, 28, 1] and r["inputs"][0]["dtype"] == "int8"
    assert r["artifact"]["precision"] == "int8" and r["artifact"]["precision_source"] == "file name"
    assert r["compute"]["macs"] == 4 * 59264 and r["compute"]["macs_source"] == "given (--macs)"
    assert r["throughput_per_s"] == pytest.approx(4 * r["runs"] / r["timed_seconds"])
    pytest.importorskip("mlxtend")
    real = profile_artifact(path, device="cpu", settings=MeasureSettings(runs=16, min_seconds=0, warmup=0,
                                                                         input="mnist")).to_dict()
    assert real["settings"]["input"] == "mnist" and real["inputs"][0]["dtype"] == "int8"
    assert any("8 distinct input batches" in n for n in real["notes"])
    with pytest.raises(UsageError, match="--raw-io"):
        profile_artifact(path, device="cpu", settings=MeasureSettings(runs=1, min_seconds=0, input="mnist",
                                                                      raw_io=True))


def test_static_batch_is_refused(tiny_models: dict[str, Any]) -> None:
    pytest.importorskip("torch")
    with pytest.raises(UsageError, match="static batch of 1"):
        profile_artifact(tiny_models["models"]["torch-pt2"], device="cpu", options={"input_shape": [1, 1, 28, 28]},
                         settings=MeasureSettings(runs=1, min_seconds=0, batch=2))


def test_device_profiles_and_absent_devices(tiny_models: dict[str, Any], tmp_path: Path) -> None:
    onnx = tiny_models["models"]["onnx"]
    r = profile_artifact(onnx, device="cpu-x86", settings=FAST)
    assert r.device.profile == "cpu-x86" and r.device.name == "cpu"
    board = tmp_path / "myboard.toml"
    board.write_text('name = "myboard"\ndescription = "test board"\nkind = "cpu"\nthreads = 1\n'
                     'power_sensors = ["hwmon"]\n')
    r = profile_artifact(onnx, device=str(board), settings=FAST, sysfs_root=tmp_path)
    assert r.device.profile == "myboard" and r.settings.threads == 1
    assert r.runtime.details["intra_op_threads"] == 1
    assert "hwmon" in r.power.reason
    with pytest.raises(UsageError) as err:
        profile_artifact(onnx, device="raspbery-pi-5", settings=FAST)
    assert "raspberry-pi-5" in err.value.hint
    from edgekit.runtimes.onnxruntime import OnnxRuntime

    if not OnnxRuntime.available("gpu")[0]:
        with pytest.raises(NotAvailable, match="onnxruntime runtime cannot run on 'gpu'"):
            profile_artifact(onnx, device="gpu", settings=FAST)
    with pytest.raises(UsageError, match="not compiled for the Edge TPU"):
        profile_artifact(tiny_models["models"]["tflite-int8"], device="edgetpu", settings=FAST)


def test_power_measured_over_the_window(tiny_models: dict[str, Any], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """RAPL in a fake sysfs tree whose counter reads as 4 W at rest, then 10 W once timing starts."""
    from edgekit.sensors.rapl import RaplSensor

    zone = tmp_path / "sys/class/powercap/intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    (zone / "energy_uj").write_text("0\n")
    real_read, real_start = RaplSensor.read_counters, RaplSensor.start
    t0 = time.perf_counter()
    starts: list[float] = []

    def joules(t: float) -> float:
        if len(starts) < 2:  # the idle baseline's window (first start)
            return 4.0 * (t - t0)
        return 4.0 * (starts[1] - t0) + 10.0 * (t - starts[1])

    def counters(self: RaplSensor) -> dict[str, tuple[float, float | None]]:
        out = real_read(self)  # parses the fake tree ...
        return {k: (joules(time.perf_counter()), wrap) for k, (_, wrap) in out.items()}  # ... the clock drives it

    def start(self: RaplSensor) -> None:
        starts.append(time.perf_counter())
        real_start(self)

    monkeypatch.setattr(RaplSensor, "read_counters", counters)
    monkeypatch.setattr(RaplSensor, "start", start)
    r = profile_artifact(tiny_models["models"]["onnx"], device="cpu", sensors=["rapl"], sysfs_root=tmp_path,
                         settings=MeasureSettings(runs=10, min_seconds=0.2, warmup=1, idle_baseline=True,
                                                  idle_seconds=0.1))
    pw = r.power
    assert len(starts) == 2
    assert pw.measured is True and pw.sensor == "rapl" and pw.estimated is False
    assert pw.scope == "CPU package-0@intel-rapl:0" and pw.method == "energy counter"
    assert pw.idle_watts == pytest.approx(4.0, rel=0.05)
    assert pw.avg_watts == pytest.approx(10.0, rel=0.05)
    assert pw.net_watts == pytest.approx(6.0, rel=0.08)
    # energy per inference: the net power over the sensor's window, shared by the runs in it; the window holds the timed
    # runs and the gaps between them (wider on a busy machine), and no more than the time since it opened
    window = time.perf_counter() - starts[1]
    assert 6.0 * r.timed_seconds / r.runs * 0.95 <= pw.joules_per_inference <= 6.0 * window / r.runs


def test_measured_peak_is_cached() -> None:
    first = measured_peak(refresh=True, seconds=0.05)
    again = measured_peak()
    assert first["cached"] is False and again["cached"] is True
    assert again["gmacs_per_s"] == first["gmacs_per_s"] > 0.1


def test_result_round_trip_and_version_check(tiny_models: dict[str, Any]) -> None:
    d = profile_artifact(tiny_models["models"]["tflite-fp32"], device="cpu", settings=FAST).to_dict()
    assert json.loads(json.dumps(d)) == d
    assert ProfileResult.from_dict(d).to_dict() == d
    with pytest.raises(UsageError, match="missing latency_ms"):
        ProfileResult.from_dict({k: v for k, v in d.items() if k != "latency_ms"})
    with pytest.raises(UsageError, match="newer"):
        ProfileResult.from_dict({**d, "schema_version": 99})


def test_cli_json_alone_on_stdout(tiny_models: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from edgekit.cli import main

    code = main(["profile", tiny_models["models"]["tflite-int8"], "--json", "--runs", "5", "--min-seconds", "0",
                 "--warmup", "1", "--device", "cpu"])
    out, err = capsys.readouterr()
    assert code == 0
    data = json.loads(out)  # stdout holds the JSON and nothing else
    assert data["schema_version"] == 1 and data["artifact"]["format"] == "tflite"
    assert "timing:" in err
    code = main(["profile", tiny_models["models"]["tflite-int8"], "--runs", "5", "--min-seconds", "0",
                 "--device", "cpu"])
    out, _ = capsys.readouterr()
    assert code == 0 and "latency (ms)" in out and "not measured" in out
    code = main(["profile", tiny_models["models"]["tflite-int8"], "--device", "edgetpu"])
    _, err = capsys.readouterr()
    assert code == 2 and "not compiled for the Edge TPU" in err


def test_docs_schema_matches_a_real_result(tiny_models: dict[str, Any]) -> None:
    """docs/profile.md's example has exactly the keys a real ProfileResult has, nested objects included."""
    text = (REPO / "docs" / "profile.md").read_text()
    example = json.loads(re.search(r"```json\n(.*?)\n```", text, re.S).group(1))
    real = profile_artifact(tiny_models["models"]["onnx"], device="cpu", settings=FAST).to_dict()

    def keys(d: dict[str, Any], prefix: str = "") -> set[str]:
        out = set()
        for k, v in d.items():
            out.add(prefix + k)
            if isinstance(v, dict) and k not in ("details",):
                out |= keys(v, f"{prefix}{k}.")
        return out

    assert keys(example) == keys(real)
    for key in keys(real):
        assert f"`{key.split('.')[-1]}`" in text, f"{key} is not described in docs/profile.md"
    assert np.isfinite(real["latency_ms"]["p50"])


def test_folder_digest_is_the_one_of_fsutil(tmp_path: Path) -> None:
    """A SavedModel folder gets edgekit's one folder digest (the manifest's source sha256 uses it too)."""
    from edgekit.core.fsutil import sha256_tree
    from edgekit.measure.artifact import describe_artifact

    folder = tmp_path / "saved_model_int8"
    (folder / "variables").mkdir(parents=True)
    (folder / "saved_model.pb").write_bytes(b"graph")
    (folder / "variables" / "variables.index").write_bytes(b"index")
    info, notes = describe_artifact(folder, "savedmodel")
    assert info.sha256 == sha256_tree(folder) and info.size_bytes == 10 and notes == []
    assert (info.precision, info.precision_source) == ("int8", "file name")
    (folder / "variables" / "variables.index").write_bytes(b"changed")
    assert describe_artifact(folder, "savedmodel")[0].sha256 != info.sha256
