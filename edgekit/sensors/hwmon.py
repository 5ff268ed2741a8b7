"""Power monitors exposed by the kernel's hwmon drivers: INA219/INA226/INA260 (ina2xx) and INA3221.

- ina2xx-style chips give `power1_input` in microwatts (else bus voltage `in1_input` in mV times
  `curr1_input` in mA);
- INA3221 (three channels; the Jetson power rails) gives per channel `inN_label`, bus voltage
  `inN_input` (mV) and `currN_input` (mA), N = 1..3; power is their product.
Which rail is measured: the one named with `rail=` (a label such as "VDD_IN", or "<chip>:<n>");
else the board's input rail where one is labelled as such (VDD_IN on Orin, POM_5V_IN on Xavier/
Nano); else the sum of every rail found, which the scope says (sums double-count nested rails).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from edgekit.sensors.base import SamplingSensor, SensorUnavailable

INA2XX = {"ina209", "ina219", "ina220", "ina226", "ina230", "ina231", "ina238", "ina260"}
INPUT_RAILS = ("VDD_IN", "POM_5V_IN", "VIN_SYS_5V0", "VDD_IN_5V")


@dataclass
class Rail:
    label: str
    power_file: Path | None = None  # microwatts
    volt_file: Path | None = None  # millivolts
    curr_file: Path | None = None  # milliamps

    def watts(self) -> float:
        if self.power_file is not None:
            return int(self.power_file.read_text().strip()) / 1e6
        assert self.volt_file is not None and self.curr_file is not None  # built only with both
        mv = int(self.volt_file.read_text().strip())
        ma = int(self.curr_file.read_text().strip())
        return mv * ma / 1e6


def find_rails(root: Path) -> list[Rail]:
    """Every readable rail of a supported chip under ROOT/sys/class/hwmon."""
    base = root / "sys/class/hwmon"
    rails: list[Rail] = []
    if not base.is_dir():
        return rails
    for dev in sorted(base.iterdir(), key=lambda p: (len(p.name), p.name)):
        try:
            chip = (dev / "name").read_text().strip()
        except OSError:
            continue
        if chip in INA2XX:
            if (dev / "power1_input").exists():
                rails.append(Rail(f"{chip}@{dev.name}", power_file=dev / "power1_input"))
            elif (dev / "in1_input").exists() and (dev / "curr1_input").exists():
                rails.append(Rail(f"{chip}@{dev.name}", volt_file=dev / "in1_input", curr_file=dev / "curr1_input"))
        elif chip == "ina3221":
            for n in (1, 2, 3):
                volt, curr = dev / f"in{n}_input", dev / f"curr{n}_input"
                if not (volt.exists() and curr.exists()):
                    continue
                label_file = dev / f"in{n}_label"
                label = label_file.read_text().strip() if label_file.exists() else f"{chip}@{dev.name}:{n}"
                rails.append(Rail(label, volt_file=volt, curr_file=curr))
    return rails


class HwmonSensor(SamplingSensor):
    name: ClassVar[str] = "hwmon"
    interval = 0.05

    def __init__(self, root: str | Path = "/", rail: str | None = None) -> None:
        super().__init__(root)
        self.rail = rail
        self._chosen: list[Rail] | None = None

    def _select(self) -> list[Rail]:
        if self._chosen is not None:
            return self._chosen
        rails = find_rails(self.root)
        if not rails:
            raise SensorUnavailable("no INA219/INA226/INA260/INA3221 power monitor under /sys/class/hwmon.")
        if self.rail:
            chosen = [r for r in rails if r.label == self.rail]
            if not chosen:
                raise SensorUnavailable(f"no hwmon rail '{self.rail}' (found: {', '.join(r.label for r in rails)}).")
        else:
            inputs = [r for r in rails if r.label in INPUT_RAILS]
            chosen = inputs[:1] or rails
        self._chosen = chosen
        return chosen

    def _check(self) -> None:
        for rail in self._select():
            try:
                rail.watts()
            except (OSError, ValueError) as exc:
                raise SensorUnavailable(f"cannot read hwmon rail {rail.label}: {exc}") from exc

    def read_watts(self) -> float:
        return sum(r.watts() for r in self._select())

    def scope(self) -> str:
        rails = self._select()
        if len(rails) == 1:
            return f"rail {rails[0].label}"
        return "sum of rails " + " + ".join(r.label for r in rails) + " (nested rails would be counted twice)"
