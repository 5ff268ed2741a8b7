"""The PowerSensor contract: start() before the timed window, stop() -> EnergyReading after it.

Two kinds of hardware exist, and each gets a base class here:
- energy counters (Intel RAPL, NVML total energy): read at start and stop; a poller thread reads
  them every few seconds too, so that a counter that wraps (RAPL's does, every few minutes under
  load) is never missed more than once between two reads;
- instantaneous power/current gauges (INA219/INA226/INA260/INA3221 via hwmon, the Pi 5 PMIC):
  sampled by a background thread and integrated over time (trapezoids).
A sensor that cannot be read says why in `probe()`; profile then reports "not measured", never 0.
Readings are measurements, never estimates: an estimate is made (and labelled) in edgekit.measure.profile.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar


@dataclass
class EnergyReading:
    """Energy over one window: what a sensor measured, and how."""

    sensor: str
    scope: str  # what the figure covers: "CPU package (intel-rapl:0)", "GPU 0", "VDD_IN rail" ...
    seconds: float
    joules: float | None
    samples: int
    method: str  # "energy counter" | "power sampling"
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def avg_watts(self) -> float | None:
        if self.joules is None or self.seconds <= 0:
            return None
        return self.joules / self.seconds

    def to_dict(self) -> dict[str, Any]:
        return {"sensor": self.sensor, "scope": self.scope, "seconds": self.seconds, "joules": self.joules,
                "avg_watts": self.avg_watts, "samples": self.samples, "method": self.method, "detail": self.detail}


class SensorUnavailable(Exception):
    """Raised by a sensor that cannot be read here; the message says why (internal to sensors)."""


class PowerSensor(ABC):
    """A source of energy figures for a time window."""

    name: ClassVar[str]

    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)  # the filesystem root: tests point it at a fake sysfs tree

    @classmethod
    def probe(cls, root: str | Path = "/") -> tuple[bool, str]:
        """Whether this sensor can be read here, and if not, why (and what would fix it)."""
        try:
            cls(root)._check()
        except SensorUnavailable as exc:
            return False, str(exc)
        return True, ""

    @abstractmethod
    def _check(self) -> None:
        """Raise SensorUnavailable when the sensor cannot be read."""

    @abstractmethod
    def start(self) -> None:
        """Begin a measurement window."""

    @abstractmethod
    def stop(self) -> EnergyReading:
        """End the window and return what was measured in it."""


class _Poller:
    """A daemon thread calling FN every INTERVAL seconds until stopped (sleeps on an Event)."""

    def __init__(self, fn: Any, interval: float) -> None:
        self._fn, self._interval = fn, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="edgekit-sensor", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._fn()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class CounterSensor(PowerSensor):
    """A monotonically increasing energy counter that may wrap at a known range."""

    method: ClassVar[str] = "energy counter"
    poll_seconds: float = 5.0

    @abstractmethod
    def read_counters(self) -> dict[str, tuple[float, float | None]]:
        """{domain: (energy in joules, wrap range in joules or None)} now."""

    @abstractmethod
    def scope(self) -> str:
        """What the summed domains cover."""

    def _accumulate(self) -> bool:
        """Read every counter and add what each gained since the last read; False when a read failed."""
        try:
            now = self.read_counters()
        except (SensorUnavailable, OSError, ValueError):
            with self._lock:
                self._errors += 1
            return False
        with self._lock:
            for dom, (value, wrap) in now.items():
                last = self._last.get(dom)
                if last is not None:
                    delta = value - last
                    if delta < 0 and wrap:  # the counter wrapped since the last read
                        delta += wrap
                        self._wraps += 1
                    self._total[dom] = self._total.get(dom, 0.0) + max(delta, 0.0)
                self._last[dom] = value
            self._reads += 1
        return True

    def start(self) -> None:
        self._check()
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._total: dict[str, float] = {}
        self._reads, self._wraps, self._errors = 0, 0, 0
        if not self._accumulate():
            raise SensorUnavailable(f"the first read of {self.name} failed")
        self._t0 = time.perf_counter()
        self._poller = _Poller(self._accumulate, self.poll_seconds)
        self._poller.start()

    def stop(self) -> EnergyReading:
        self._poller.stop()
        ok = self._accumulate() or self._accumulate()  # one retry: a read can race a counter update
        seconds = time.perf_counter() - self._t0
        return EnergyReading(sensor=self.name, scope=self.scope(), seconds=seconds,
                             joules=sum(self._total.values()) if ok else None, samples=self._reads,
                             method=self.method,
                             detail={"domains": dict(self._total), "wraps": self._wraps, "errors": self._errors})


class SamplingSensor(PowerSensor):
    """A gauge read in watts by a background thread every `interval` seconds, integrated over time."""

    method: ClassVar[str] = "power sampling"
    interval: float = 0.05

    @abstractmethod
    def read_watts(self) -> float:
        """Instantaneous power in watts (raise SensorUnavailable when it cannot be read)."""

    @abstractmethod
    def scope(self) -> str:
        """What the figure covers."""

    def _sample(self) -> None:
        try:
            w = self.read_watts()
        except (SensorUnavailable, OSError, ValueError):
            self._errors += 1
            return
        self._samples.append((time.perf_counter(), w))

    def start(self) -> None:
        self._check()
        self._samples: list[tuple[float, float]] = []
        self._errors = 0
        self._t0 = time.perf_counter()
        self._sample()
        self._poller = _Poller(self._sample, self.interval)
        self._poller.start()

    def stop(self) -> EnergyReading:
        self._poller.stop()
        self._sample()
        t1 = time.perf_counter()
        return EnergyReading(sensor=self.name, scope=self.scope(), seconds=t1 - self._t0,
                             joules=integrate(self._samples, self._t0, t1), samples=len(self._samples),
                             method=self.method, detail={"interval_s": self.interval, "errors": self._errors})


def integrate(samples: list[tuple[float, float]], t0: float, t1: float) -> float | None:
    """Energy in joules from (time, watts) samples over [t0, t1]: trapezoids, ends held flat.

    None with fewer than one sample: no figure rather than a made-up one.
    """
    if not samples:
        return None
    pts = sorted(samples)
    energy = pts[0][1] * max(pts[0][0] - t0, 0.0) + pts[-1][1] * max(t1 - pts[-1][0], 0.0)
    for (ta, wa), (tb, wb) in zip(pts, pts[1:], strict=False):
        energy += (wa + wb) / 2.0 * (tb - ta)
    return energy
