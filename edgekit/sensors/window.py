"""A power measurement around the timed window of `edgekit profile`: which sensor, idle baseline, result.

The result is the `power` object of a ProfileResult. It is measured when a sensor was read, and
then says which sensor and what it covers (a CPU package is not the whole board); where nothing
could be read it says "not measured" with every sensor's reason; only with `--estimate-power` and a
device profile that gives `typical_watts` is an estimate filled in, labelled `estimated: true`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgekit.core.records import Record
from edgekit.sensors import DEFAULT_ORDER, EnergyReading, SensorUnavailable, open_sensor

# What a sensor may raise mid-measurement (a file that vanished, a command that failed): the power
# figure is then "not measured" with the reason; the latency measurement goes on regardless.
_SENSOR_ERRORS = (SensorUnavailable, OSError, ValueError, RuntimeError)


@dataclass
class PowerReport(Record):
    """The `power` object of a ProfileResult. Never 0 for "not measured": the figures are then None."""

    measured: bool = False  # a sensor was read over the timed window
    sensor: str | None = None  # the sensor's name, or "estimate"
    scope: str | None = None  # what the sensor covers (a CPU package is not the whole board)
    method: str | None = None  # "energy counter", "sampled power", "estimate" ...
    avg_watts: float | None = None
    idle_watts: float | None = None  # with --idle-baseline
    net_watts: float | None = None  # avg_watts - idle_watts
    joules_per_inference: float | None = None  # of the net power where an idle baseline was measured
    estimated: bool = False  # from the device profile's typical_watts, not measured
    samples: int = 0
    reason: str | None = None  # why not measured (every sensor's reason), or why estimated


class PowerWindow:
    """One sensor (the first of the device's that opens) read over an idle baseline and the timed window."""

    def __init__(self, device: str, names: list[str] | None, root: str | Path = "/", profile: Any = None) -> None:
        kind = "gpu" if device in ("cuda", "tensorrt") else device
        order = list(names) if names is not None else list(DEFAULT_ORDER.get(kind, ()))
        options = dict(getattr(profile, "sensor_options", {}) or {})
        self.profile = profile
        self.sensor, self.reasons = open_sensor(order, root, **options) if order else (None, [])
        if not order:
            self.reasons = [f"no power sensor is known for device '{device}'"]
        self.idle_watts: float | None = None
        self.idle_reading: EnergyReading | None = None

    def idle(self, seconds: float) -> None:
        """Measure the power at rest (nothing running) for SECONDS: the baseline subtracted later."""
        if self.sensor is None:
            return
        try:
            self.sensor.start()
            time.sleep(seconds)
            self.idle_reading = self.sensor.stop()
        except _SENSOR_ERRORS as exc:
            self.reasons.append(f"{self.sensor.name} (idle baseline): {exc}")
            return
        self.idle_watts = self.idle_reading.avg_watts

    def start(self) -> None:
        if self.sensor is None:
            return
        try:
            self.sensor.start()
        except _SENSOR_ERRORS as exc:
            self.reasons.append(f"{self.sensor.name}: {exc}")
            self.sensor = None

    def stop(self) -> EnergyReading | None:
        if self.sensor is None:
            return None
        try:
            return self.sensor.stop()
        except _SENSOR_ERRORS as exc:
            self.reasons.append(f"{self.sensor.name}: {exc}")
            return None

    def result(self, reading: EnergyReading | None, n: int, seconds: float, estimate: bool = False) -> PowerReport:
        """The `power` object for N inference calls over SECONDS."""
        if reading is not None and reading.avg_watts is not None and n > 0:
            avg = reading.avg_watts
            net = avg - self.idle_watts if self.idle_watts is not None else None
            return PowerReport(measured=True, sensor=reading.sensor, scope=reading.scope, method=reading.method,
                               avg_watts=avg, idle_watts=self.idle_watts, net_watts=net,
                               joules_per_inference=(net if net is not None else avg) * reading.seconds / n,
                               samples=reading.samples)
        reason = "; ".join(self.reasons) or "the sensor gave no reading in the window"
        typical = getattr(self.profile, "typical_watts", None)
        if estimate and typical and n > 0:
            return PowerReport(estimated=True, sensor="estimate", avg_watts=float(typical),
                               scope=f"typical_watts of device profile '{self.profile.name}' (not measured)",
                               method="estimate", joules_per_inference=float(typical) * seconds / n,
                               reason=f"estimated, not measured: {reason}")
        return PowerReport(reason=f"not measured: {reason}")
