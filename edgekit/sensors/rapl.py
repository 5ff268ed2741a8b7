"""Intel/AMD RAPL energy counters via the Linux powercap interface.

Reads /sys/class/powercap/intel-rapl:N/energy_uj (microjoules, wrapping at max_energy_range_uj)
for each CPU package, plus the DRAM sub-zones where the platform has them. Since Linux 5.10 the
counters are readable by root only (CVE-2020-8694, "Platypus"): then the sensor reports not
available, with the command an administrator can run; edgekit never calls sudo itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from edgekit.sensors.base import CounterSensor, SensorUnavailable

_TOP = re.compile(r"^intel-rapl:\d+$")
_SUB = re.compile(r"^intel-rapl:\d+:\d+$")


class RaplSensor(CounterSensor):
    name: ClassVar[str] = "rapl"
    poll_seconds = 5.0  # a package at 200 W wraps a 262 kJ range in ~20 min: 5 s is far inside that

    def _zones(self) -> list[tuple[str, Path]]:
        """(name, folder) of the zones summed: top-level packages, and DRAM sub-zones."""
        base = self.root / "sys/class/powercap"
        if not base.is_dir():
            raise SensorUnavailable("no powercap interface (/sys/class/powercap): not Linux, or no RAPL.")
        zones: list[tuple[str, Path]] = []
        for d in sorted(base.iterdir()):
            if not (_TOP.match(d.name) or _SUB.match(d.name)):
                continue
            try:
                zname = (d / "name").read_text().strip()
            except OSError:
                continue
            if (_TOP.match(d.name) and zname.startswith("package")) or zname == "dram":
                zones.append((f"{zname}@{d.name}", d))
        if not zones:
            raise SensorUnavailable("no RAPL package zone under /sys/class/powercap (no Intel/AMD RAPL here).")
        return zones

    def _check(self) -> None:
        for label, d in self._zones():
            try:
                (d / "energy_uj").read_text()
            except PermissionError as exc:
                raise SensorUnavailable(
                    f"RAPL counters are readable by root only ({d / 'energy_uj'}; Linux >= 5.10, CVE-2020-8694). "
                    "An administrator can allow it until reboot: sudo chmod o+r "
                    "/sys/class/powercap/intel-rapl:*/energy_uj"
                ) from exc
            except OSError as exc:
                raise SensorUnavailable(f"cannot read {d / 'energy_uj'} ({label}): {exc.strerror}") from exc

    def read_counters(self) -> dict[str, tuple[float, float | None]]:
        out: dict[str, tuple[float, float | None]] = {}
        for label, d in self._zones():
            value = int((d / "energy_uj").read_text().strip()) / 1e6
            try:
                wrap: float | None = int((d / "max_energy_range_uj").read_text().strip()) / 1e6
            except (OSError, ValueError):
                wrap = None
            out[label] = (value, wrap)
        return out

    def scope(self) -> str:
        return "CPU " + " + ".join(label for label, _ in self._zones())
