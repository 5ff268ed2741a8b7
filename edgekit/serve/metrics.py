"""Prometheus metrics of one server, in their own registry (so two apps in one process never clash).

Requests by model, endpoint and status code; latency split into time waiting in the queue and time
computing; requests in flight; queue depth; batch sizes; model load time; and, where a power sensor
can be read here (edgekit.sensors), the energy it measured since start-up. Served at /metrics in the
Prometheus text format.
"""

from __future__ import annotations

import threading
from typing import Any

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


class Metrics:
    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("edgekit_requests", "Requests answered, by model, endpoint and HTTP status.",
                                ["model", "endpoint", "code"], registry=r)
        self.queue_seconds = Histogram("edgekit_queue_seconds", "Time a request waited for a runtime.",
                                       ["model"], buckets=LATENCY_BUCKETS, registry=r)
        self.inference_seconds = Histogram("edgekit_inference_seconds", "Time the runtime computed a request's "
                                           "batch.", ["model"], buckets=LATENCY_BUCKETS, registry=r)
        self.request_seconds = Histogram("edgekit_request_seconds", "Time from request read to answer ready.",
                                         ["model", "endpoint"], buckets=LATENCY_BUCKETS, registry=r)
        self.in_flight = Gauge("edgekit_in_flight_requests", "Inference requests being handled now.", registry=r)
        self.queue_depth = Gauge("edgekit_queue_depth", "Requests waiting for a runtime.", ["model"], registry=r)
        self.batch_size = Histogram("edgekit_batch_size", "Requests run together in one batch.", ["model"],
                                    buckets=(1, 2, 4, 8, 16, 32, 64), registry=r)
        self.load_seconds = Gauge("edgekit_model_load_seconds", "Time to load and warm up the model's runtimes.",
                                  ["model"], registry=r)
        self.energy_joules = Counter("edgekit_energy_joules", "Energy a power sensor measured since the server "
                                     "started (absent where no sensor can be read here).", ["sensor", "scope"],
                                     registry=r)
        self._sensor: Any = None
        self._lock = threading.Lock()

    def watch_power(self, device: str = "cpu", root: str = "/") -> str | None:
        """Start the first power sensor readable here for DEVICE (edgekit.sensors); its name, or None."""
        from edgekit.sensors import DEFAULT_ORDER, open_sensor

        sensor, _why = open_sensor(list(DEFAULT_ORDER.get(device, DEFAULT_ORDER["cpu"])), root=root)
        if sensor is None:
            return None
        sensor.start()
        self._sensor = sensor
        return sensor.name

    def refresh(self, depths: dict[str, int]) -> None:
        """Before a scrape: queue depth per model; the energy of the window since the last scrape."""
        for model, depth in depths.items():
            self.queue_depth.labels(model).set(depth)
        with self._lock:
            if self._sensor is not None:
                reading = self._sensor.stop()
                self._sensor.start()
                if reading.joules is not None:
                    self.energy_joules.labels(reading.sensor, reading.scope).inc(max(0.0, reading.joules))

    def close(self) -> None:
        with self._lock:
            if self._sensor is not None:
                self._sensor.stop()
                self._sensor = None

    def exposition(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


__all__ = ["Metrics"]
