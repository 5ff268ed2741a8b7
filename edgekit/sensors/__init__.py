"""Power sensors, by name. Plain strings: listing them imports nothing.

Adding a sensor: a module here with a PowerSensor subclass, one line in SENSORS; a device file
(edgekit/measure/device_profiles/*.toml) names the sensors to try on that hardware.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgekit.core.registry import resolve
from edgekit.sensors.base import EnergyReading, PowerSensor, SensorUnavailable

SENSORS: dict[str, str] = {
    "rapl": "edgekit.sensors.rapl:RaplSensor",
    "nvml": "edgekit.sensors.nvml:NvmlSensor",
    "hwmon": "edgekit.sensors.hwmon:HwmonSensor",
    "pi5": "edgekit.sensors.pi5:Pi5PmicSensor",
}

# What to try when neither the user nor the device profile names a sensor, per device.
DEFAULT_ORDER: dict[str, tuple[str, ...]] = {
    "cpu": ("rapl", "pi5", "hwmon"),
    "gpu": ("nvml", "hwmon"),
    "edgetpu": ("pi5", "hwmon", "rapl"),
    "tpu": (),
}


def get_sensor(name: str) -> type[PowerSensor]:
    return resolve(SENSORS, name, "power sensor")


def open_sensor(names: list[str] | tuple[str, ...], root: str | Path = "/",
                **options: Any) -> tuple[PowerSensor | None, list[str]]:
    """The first sensor of NAMES that can be read here, and why each one before it could not."""
    reasons: list[str] = []
    for name in names:
        cls = get_sensor(name)
        sensor = cls(root, **options.get(name, {}))
        try:
            sensor._check()
        except SensorUnavailable as exc:
            reasons.append(f"{name}: {exc}")
            continue
        return sensor, reasons
    return None, reasons


__all__ = ["SENSORS", "DEFAULT_ORDER", "EnergyReading", "PowerSensor", "SensorUnavailable", "get_sensor",
           "open_sensor"]
