"""Integration, sensor choice and the `power` object: measured, not measured (never 0), estimated."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.sensors import SENSORS, get_sensor, open_sensor
from edgekit.sensors.base import EnergyReading, integrate
from edgekit.sensors.window import PowerWindow


def test_integrate_known_samples() -> None:
    # 2 W from t=0 to 1, then a ramp to 4 W at t=2: 2 + 3 = 5 J; ends held flat to [0, 3]: + 4 J
    assert integrate([(0.0, 2.0), (1.0, 2.0), (2.0, 4.0)], 0.0, 3.0) == pytest.approx(9.0)
    assert integrate([(0.5, 3.0)], 0.0, 1.0) == pytest.approx(3.0)
    assert integrate([], 0.0, 1.0) is None


def test_registry_resolves_every_sensor() -> None:
    for name in SENSORS:
        assert get_sensor(name).name == name


def test_open_sensor_collects_reasons(tmp_path: Path) -> None:
    d = tmp_path / "sys/class/hwmon/hwmon0"
    d.mkdir(parents=True)
    (d / "name").write_text("ina219\n")
    (d / "power1_input").write_text("1500000\n")
    sensor, reasons = open_sensor(["rapl", "hwmon"], tmp_path)
    assert sensor is not None and sensor.name == "hwmon"
    assert len(reasons) == 1 and reasons[0].startswith("rapl: ")


def test_not_measured_is_none_not_zero(tmp_path: Path) -> None:
    w = PowerWindow("cpu", ["rapl"], tmp_path)
    w.start()
    r = w.result(w.stop(), n=100, seconds=1.0)
    assert r.measured is False and r.estimated is False
    assert r.avg_watts is None and r.joules_per_inference is None
    assert r.reason.startswith("not measured: rapl:")
    assert PowerWindow("tpu", None, tmp_path).result(None, 1, 1.0).reason == \
        "not measured: no power sensor is known for device 'tpu'"


def test_measured_with_idle_baseline() -> None:
    w = PowerWindow("cpu", [], "/")
    w.idle_watts = 2.0
    reading = EnergyReading(sensor="rapl", scope="CPU package-0", seconds=2.0, joules=10.0, samples=3,
                            method="energy counter")
    r = w.result(reading, n=400, seconds=2.0)
    assert r.measured and r.avg_watts == pytest.approx(5.0) and r.net_watts == pytest.approx(3.0)
    assert r.joules_per_inference == pytest.approx(3.0 * 2.0 / 400)


def test_estimate_only_when_asked_and_labelled() -> None:
    from edgekit.measure.devices import load_profile

    coral = load_profile("coral-usb")
    w = PowerWindow("edgetpu", [], "/", coral)
    assert w.result(None, 100, 1.0).avg_watts is None
    r = w.result(None, 100, 1.0, estimate=True)
    assert r.estimated is True and r.measured is False and r.sensor == "estimate"
    assert r.joules_per_inference == pytest.approx(2.0 / 100)
    assert "not measured" in r.scope and r.reason.startswith("estimated, not measured")
