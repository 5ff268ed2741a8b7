"""Raspberry Pi 5 power from its PMIC's ADCs, read with `vcgencmd pmic_read_adc`.

The PMIC reports current (A) and voltage (V) for each of its rails, as lines such as
`VDD_CORE_A current(7)=0.70283150A` and `VDD_CORE_V volt(15)=0.88085220V`. Power is the sum over
rails with both figures of V x A. This covers what the PMIC supplies (SoC, RAM, I/O rails); it
does not include the 5 V input's conversion losses or what USB devices draw, as the scope says.
Each read runs vcgencmd (a few ms), so the sampling interval is longer than for sysfs gauges.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

from edgekit.sensors.base import SamplingSensor, SensorUnavailable

_LINE = re.compile(r"^\s*(?P<rail>\S+)_(?P<kind>[AV])\s+(?:current|volt)\(\d+\)=(?P<value>[-+0-9.eE]+)[AV]\s*$")


def parse_pmic_adc(text: str) -> dict[str, dict[str, float]]:
    """{rail: {"A": amps, "V": volts}} from `vcgencmd pmic_read_adc` output."""
    rails: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            rails.setdefault(m["rail"], {})[m["kind"]] = float(m["value"])
    return rails


def rails_watts(rails: dict[str, dict[str, float]]) -> float:
    return sum(r["A"] * r["V"] for r in rails.values() if "A" in r and "V" in r)


class Pi5PmicSensor(SamplingSensor):
    name: ClassVar[str] = "pi5"
    interval = 0.25

    def __init__(self, root: str | Path = "/", vcgencmd: str | None = None) -> None:
        super().__init__(root)
        self.vcgencmd = vcgencmd

    def _command(self) -> str:
        cmd = self.vcgencmd or shutil.which("vcgencmd")
        if not cmd:
            raise SensorUnavailable("vcgencmd is not installed (Raspberry Pi OS: sudo apt install "
                                    "libraspberrypi-bin); the PMIC is read through it.")
        return cmd

    def read_rails(self) -> dict[str, dict[str, float]]:
        cmd = self._command()
        try:
            proc = subprocess.run([cmd, "pmic_read_adc"], capture_output=True, text=True, timeout=5, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SensorUnavailable(f"could not run {cmd} pmic_read_adc: {exc}") from exc
        rails = parse_pmic_adc(proc.stdout)
        if proc.returncode != 0 or not any("A" in r and "V" in r for r in rails.values()):
            why = (proc.stderr or proc.stdout).strip().splitlines()[:1]
            raise SensorUnavailable("`vcgencmd pmic_read_adc` gave no PMIC readings (only a Raspberry Pi 5 has "
                                    f"this PMIC){': ' + why[0] if why else ''}.")
        return rails

    def _check(self) -> None:
        self.read_rails()

    def read_watts(self) -> float:
        return rails_watts(self.read_rails())

    def scope(self) -> str:
        return "Pi 5 PMIC rails (SoC, RAM, I/O; excludes 5 V conversion losses and USB devices)"
