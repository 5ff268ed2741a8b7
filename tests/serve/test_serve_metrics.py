"""/metrics energy: a power sensor's window is read at each scrape and added up (a fake RAPL tree here)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from edgekit.serve.metrics import Metrics  # noqa: E402


def _package(root: Path, microjoules: int) -> Path:
    zone = root / "sys/class/powercap/intel-rapl:0"
    zone.mkdir(parents=True, exist_ok=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    (zone / "energy_uj").write_text(f"{microjoules}\n")
    return zone


def test_energy_since_start_is_counted_at_each_scrape(tmp_path: Path) -> None:
    _package(tmp_path, 1_000_000)
    m = Metrics()
    assert m.watch_power("cpu", root=str(tmp_path)) == "rapl"
    _package(tmp_path, 3_500_000)  # +2.5 J
    m.refresh({"net": 3})
    _package(tmp_path, 4_000_000)  # +0.5 J
    m.refresh({"net": 0})
    text = m.exposition()[0].decode()
    line = next(ln for ln in text.splitlines() if ln.startswith("edgekit_energy_joules_total{"))
    assert float(line.split()[-1]) == pytest.approx(3.0) and 'sensor="rapl"' in line
    assert 'edgekit_queue_depth{model="net"} 0.0' in text
    m.close()


def test_no_sensor_no_energy_metric(tmp_path: Path) -> None:
    m = Metrics()
    assert m.watch_power("cpu", root=str(tmp_path)) is None
    m.refresh({})
    assert "edgekit_energy_joules_total{" not in m.exposition()[0].decode()
