"""NVIDIA GPU energy via NVML's total-energy counter (millijoules since the driver loaded).

`nvmlDeviceGetTotalEnergyConsumption` exists on Volta and newer GPUs. pynvml (the
`nvidia-ml-py` package) is imported only when the sensor is used; where it or the driver is
missing, the sensor reports not available with what to install.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, ClassVar

from edgekit.core.border import is_edgekit_bug, vendor_message
from edgekit.sensors.base import CounterSensor, SensorUnavailable

INSTALL = "pip install nvidia-ml-py (NVIDIA's NVML bindings; needs the NVIDIA driver)"


class NvmlSensor(CounterSensor):
    name: ClassVar[str] = "nvml"
    poll_seconds = 30.0  # a 64-bit millijoule counter does not wrap; polling only bounds reads

    def __init__(self, root: str | Path = "/", index: int = 0) -> None:
        super().__init__(root)
        self.index = index
        self._nvml: Any = None
        self._handle: Any = None

    def _open(self) -> None:
        if self._handle is not None:
            return
        try:
            nvml = importlib.import_module("pynvml")
        except ImportError as exc:
            raise SensorUnavailable(f"pynvml is not installed: {INSTALL}") from exc
        try:
            nvml.nvmlInit()
            handle = nvml.nvmlDeviceGetHandleByIndex(self.index)
            nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
            name = nvml.nvmlDeviceGetName(handle)
        except Exception as exc:  # pynvml.NVMLError_* (driver missing, not supported on this GPU ...)
            if is_edgekit_bug(exc):
                raise
            raise SensorUnavailable(
                f"NVML cannot report GPU {self.index}'s energy ({vendor_message(exc)}); it needs an NVIDIA driver "
                "and a Volta or newer GPU."
            ) from exc
        self._nvml, self._handle = nvml, handle
        self._gpu = name.decode() if isinstance(name, bytes) else str(name)

    def _check(self) -> None:
        self._open()

    def read_counters(self) -> dict[str, tuple[float, float | None]]:
        self._open()
        mj = self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        return {f"gpu{self.index}": (float(mj) / 1000.0, None)}

    def scope(self) -> str:
        self._open()
        return f"GPU {self.index} ({self._gpu}) board energy"
