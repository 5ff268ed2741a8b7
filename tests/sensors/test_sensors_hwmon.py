"""hwmon power monitors on a recreated sysfs tree: an INA226 (power1_input) and a Jetson INA3221."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.sensors.hwmon import HwmonSensor, find_rails


def hwmon(root: Path, name: str, chip: str, files: dict[str, str]) -> Path:
    d = root / "sys/class/hwmon" / name
    d.mkdir(parents=True)
    (d / "name").write_text(chip + "\n")
    for k, v in files.items():
        (d / k).write_text(v + "\n")
    return d


def jetson(root: Path) -> Path:
    # the mainline ina3221 driver's files: inN_label, inN_input (bus mV), currN_input (mA)
    return hwmon(root, "hwmon1", "ina3221", {
        "in1_label": "VDD_IN", "in1_input": "5072", "curr1_input": "1460",
        "in2_label": "VDD_CPU_GPU_CV", "in2_input": "5064", "curr2_input": "320",
        "in3_label": "VDD_SOC", "in3_input": "5072", "curr3_input": "560",
    })


def test_ina3221_prefers_the_input_rail(tmp_path: Path) -> None:
    hwmon(tmp_path, "hwmon0", "cpu_thermal", {"temp1_input": "45000"})
    jetson(tmp_path)
    labels = [r.label for r in find_rails(tmp_path)]
    assert labels == ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"]
    s = HwmonSensor(tmp_path)
    assert s.read_watts() == pytest.approx(5.072 * 1.460)
    assert s.scope() == "rail VDD_IN"
    named = HwmonSensor(tmp_path, rail="VDD_SOC")
    assert named.read_watts() == pytest.approx(5.072 * 0.560)
    ok, why = HwmonSensor.probe(tmp_path)
    assert ok and why == ""
    missing = HwmonSensor(tmp_path, rail="VDD_GPU")
    with pytest.raises(Exception, match="no hwmon rail 'VDD_GPU'"):
        missing._check()


def test_ina226_power_and_sampling_window(tmp_path: Path) -> None:
    d = hwmon(tmp_path, "hwmon3", "ina226", {"power1_input": "2500000", "in1_input": "5000", "curr1_input": "500"})
    s = HwmonSensor(tmp_path)
    s.interval = 0.01
    assert s.read_watts() == pytest.approx(2.5)  # power1_input (uW) wins over V x I
    s.start()
    import time

    time.sleep(0.08)
    r = s.stop()
    assert r.method == "power sampling" and r.samples >= 3
    assert r.avg_watts == pytest.approx(2.5)  # constant power integrates to exactly 2.5 W
    (d / "power1_input").unlink()
    assert HwmonSensor(tmp_path).read_watts() == pytest.approx(2.5)  # 5000 mV x 500 mA


def test_two_chips_are_summed_and_say_so(tmp_path: Path) -> None:
    hwmon(tmp_path, "hwmon2", "ina219", {"power1_input": "1000000"})
    hwmon(tmp_path, "hwmon10", "ina260", {"power1_input": "3000000"})
    s = HwmonSensor(tmp_path)
    assert s.read_watts() == pytest.approx(4.0)
    assert "sum of rails" in s.scope() and "counted twice" in s.scope()


def test_no_monitor(tmp_path: Path) -> None:
    hwmon(tmp_path, "hwmon0", "nvme", {"temp1_input": "30000"})
    ok, why = HwmonSensor.probe(tmp_path)
    assert not ok and "INA219" in why
