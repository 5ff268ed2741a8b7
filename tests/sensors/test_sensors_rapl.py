"""RAPL on a powercap tree recreated in a temp dir (the layout of /sys/class/powercap on Intel hosts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.sensors.rapl import RaplSensor

MAX = 262143328850  # max_energy_range_uj of a real package domain


def make_tree(root: Path, package0: int, dram: int, package1: int | None = None) -> Path:
    base = root / "sys/class/powercap"
    zones = {"intel-rapl:0": ("package-0", package0), "intel-rapl:0:0": ("core", 123), "intel-rapl:0:1": ("dram", dram),
             "intel-rapl:1": ("package-1", package1)} if package1 is not None else \
        {"intel-rapl:0": ("package-0", package0), "intel-rapl:0:0": ("core", 123), "intel-rapl:0:1": ("dram", dram)}
    (base / "intel-rapl").mkdir(parents=True)  # the control type folder, not a zone
    (base / "intel-rapl/enabled").write_text("1\n")
    for zone, (name, value) in zones.items():
        d = base / zone
        d.mkdir()
        (d / "name").write_text(name + "\n")
        (d / "energy_uj").write_text(f"{value}\n")
        (d / "max_energy_range_uj").write_text(f"{MAX}\n")
    return base


def set_energy(base: Path, zone: str, value: int) -> None:
    (base / zone / "energy_uj").write_text(f"{value}\n")


def test_packages_and_dram_summed_core_not(tmp_path: Path) -> None:
    base = make_tree(tmp_path, package0=1_000_000, dram=50_000, package1=2_000_000)
    s = RaplSensor(tmp_path)
    s.start()
    set_energy(base, "intel-rapl:0", 3_500_000)  # +2.5 J
    set_energy(base, "intel-rapl:0:1", 550_000)  # +0.5 J
    set_energy(base, "intel-rapl:1", 3_000_000)  # +1.0 J
    set_energy(base, "intel-rapl:0:0", 9_999_999)  # core is inside the package: not added
    r = s.stop()
    assert r.joules == pytest.approx(4.0)
    assert r.method == "energy counter" and r.detail["wraps"] == 0
    assert set(r.detail["domains"]) == {"package-0@intel-rapl:0", "dram@intel-rapl:0:1", "package-1@intel-rapl:1"}
    assert r.scope.startswith("CPU ") and "package-1" in r.scope
    assert r.avg_watts == pytest.approx(4.0 / r.seconds)


def test_counter_wrap_around(tmp_path: Path) -> None:
    base = make_tree(tmp_path, package0=MAX - 300_000, dram=0)
    s = RaplSensor(tmp_path)
    s.start()
    set_energy(base, "intel-rapl:0", 200_000)  # wrapped: 300,000 to the top, then 200,000
    r = s.stop()
    assert r.joules == pytest.approx(0.5)
    assert r.detail["wraps"] == 1


def test_poller_catches_each_wrap(tmp_path: Path) -> None:
    """Between two reads a counter can wrap at most once: the poller reads in between."""
    base = make_tree(tmp_path, package0=0, dram=0)
    s = RaplSensor(tmp_path)
    s.start()
    s._poller.stop()  # drive the reads by hand instead of by the clock
    for value in (MAX // 2, MAX - 10, 40, MAX // 2):  # two wraps' worth of energy in total, one wrap
        set_energy(base, "intel-rapl:0", value)
        s._accumulate()
    s._poller = type(s._poller)(lambda: None, 1.0)
    s._poller.start()
    r = s.stop()
    assert r.joules == pytest.approx((MAX + MAX // 2) / 1e6)
    assert r.detail["wraps"] == 1


def test_not_available_reasons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ok, why = RaplSensor.probe(tmp_path)
    assert not ok and "no powercap interface" in why
    base = tmp_path / "sys/class/powercap"
    base.mkdir(parents=True)
    ok, why = RaplSensor.probe(tmp_path)
    assert not ok and "no RAPL package zone" in why
    make_tree(tmp_path / "root2", package0=1, dram=1)
    real_read = Path.read_text

    def root_only(self: Path, *a: object, **k: object) -> str:
        if self.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", root_only)
    ok, why = RaplSensor.probe(tmp_path / "root2")
    assert not ok and "root only" in why and "chmod o+r" in why
