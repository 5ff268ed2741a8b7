"""Raspberry Pi 5 PMIC: recorded `vcgencmd pmic_read_adc` outputs (tests/fixtures/sensors/README.md)."""

from __future__ import annotations

import stat
import sys
import time
from pathlib import Path

import pytest

from edgekit.sensors.pi5 import Pi5PmicSensor, parse_pmic_adc, rails_watts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sensors"


def test_parse_recorded_outputs() -> None:
    idle = parse_pmic_adc((FIXTURES / "pi5_pmic_read_adc_idle.txt").read_text())
    assert len(idle) == 14  # 12 rails with current and voltage, EXT5V and BATT with voltage only
    assert idle["VDD_CORE"] == {"A": 0.56259, "V": 0.7679846}
    assert idle["EXT5V"] == {"V": 5.14158}
    # the sums were worked out by hand from the 12 (A, V) pairs
    assert rails_watts(idle) == pytest.approx(1.7667065, abs=1e-6)
    load = parse_pmic_adc((FIXTURES / "pi5_pmic_read_adc_load.txt").read_text())
    assert rails_watts(load) == pytest.approx(5.9216122, abs=1e-6)


def fake_vcgencmd(tmp_path: Path, text_file: Path | None, rc: int = 0, message: str = "") -> Path:
    script = tmp_path / "vcgencmd"
    body = f"sys.stdout.write(open({str(text_file)!r}).read())" if text_file else f"print({message!r})"
    script.write_text(f"#!{sys.executable}\nimport sys\nassert sys.argv[1:] == ['pmic_read_adc']\n{body}\n"
                      f"sys.exit({rc})\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_sensor_runs_vcgencmd(tmp_path: Path) -> None:
    cmd = fake_vcgencmd(tmp_path, FIXTURES / "pi5_pmic_read_adc_load.txt")
    s = Pi5PmicSensor(vcgencmd=str(cmd))
    assert s.read_watts() == pytest.approx(5.9216122, abs=1e-6)
    s.interval = 0.02
    s.start()
    time.sleep(0.1)
    r = s.stop()
    assert r.avg_watts == pytest.approx(5.9216122, abs=1e-6) and r.samples >= 2
    assert "excludes" in r.scope


def test_not_a_pi5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cmd = fake_vcgencmd(tmp_path, None, rc=0, message='error=1 error_msg="Command not registered"')
    s = Pi5PmicSensor(vcgencmd=str(cmd))
    with pytest.raises(Exception, match="only a Raspberry Pi 5"):
        s._check()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    ok, why = Pi5PmicSensor.probe()
    assert not ok and "vcgencmd is not installed" in why
