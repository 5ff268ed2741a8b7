"""NVML energy with a stand-in pynvml module (pynvml is not installed here), and its absent path."""

from __future__ import annotations

import sys
import types

import pytest

from edgekit.sensors.nvml import NvmlSensor


def fake_pynvml(readings_mj: list[int]) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    it = iter(readings_mj)
    m.nvmlInit = lambda: None
    m.nvmlDeviceGetHandleByIndex = lambda i: f"handle{i}"
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H200"
    m.nvmlDeviceGetTotalEnergyConsumption = lambda h: next(it)
    return m


def test_energy_from_the_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    # probe read, start read, stop read (millijoules since driver load)
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([1_000_000, 1_000_500, 1_350_500]))
    s = NvmlSensor()
    s.start()
    r = s.stop()
    assert r.joules == pytest.approx(350.0)
    assert r.scope == "GPU 0 (NVIDIA H200) board energy"


def test_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails, as where it is not installed
    ok, why = NvmlSensor.probe()
    assert not ok and "pip install nvidia-ml-py" in why
    m = fake_pynvml([])

    def no_driver() -> None:
        raise RuntimeError("NVML Shared Library Not Found")

    m.nvmlInit = no_driver
    monkeypatch.setitem(sys.modules, "pynvml", m)
    ok, why = NvmlSensor.probe()
    assert not ok and "NVIDIA driver" in why and "Shared Library Not Found" in why
