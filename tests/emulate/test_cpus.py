"""The emulated Pi cores: read from the device profiles' [cpu] tables, named as users type them."""

from __future__ import annotations

import pytest

from edgekit.core.errors import UsageError
from edgekit.emulate.cpus import emulable, emulated_cpu, emulated_cpus


def test_each_pi_generation_names_its_core() -> None:
    assert [emulated_cpu(n).core for n in ("pi3", "pi4", "pi5")] == ["cortex-a53", "cortex-a72", "cortex-a76"]
    assert emulated_cpu("raspberry-pi-5") == emulated_cpu("pi5")
    assert set(emulable()) >= {"raspberry-pi-3", "raspberry-pi-4", "raspberry-pi-5"}


def test_the_features_the_cores_differ_in() -> None:
    pi4, pi5 = emulated_cpu("pi4"), emulated_cpu("pi5")
    for feature in ("atomics", "asimddp", "fphp", "asimdhp"):  # LSE, dot product, fp16 arithmetic
        assert pi5.has(feature) and not pi4.has(feature)
    assert pi5.isa == "armv8.2-a" and pi4.isa == "armv8.0-a"


def test_cpuinfo_reads_as_an_arm64_device_writes_it() -> None:
    text = emulated_cpu("pi5").cpuinfo(4)
    assert text.count("processor\t:") == 4
    assert "CPU part\t: 0xd0b" in text and "CPU implementer\t: 0x41" in text  # the A76's MIDR
    assert "Features\t: fp asimd" in text and " atomics " in text


def test_a_mistyped_name_gets_a_suggestion() -> None:
    with pytest.raises(UsageError) as err:
        emulated_cpu("pi6")
    assert "pi5" in (err.value.hint or "")


def test_a_device_without_an_arm_core_is_refused() -> None:
    with pytest.raises(UsageError, match="no Arm core"):
        emulated_cpu("cpu-x86")


def test_duplicates_are_one_core() -> None:
    assert [c.device for c in emulated_cpus(["pi5", "raspberry-pi-5", "pi4"])] == ["raspberry-pi-5", "raspberry-pi-4"]


def test_a_process_on_an_emulated_core_says_so_in_its_host_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.measure.devices import host_info

    monkeypatch.setenv("EDGEKIT_EMULATED_CPU", "raspberry-pi-5:cortex-a76")  # what edgekit.emulate.launch sets
    facts = host_info()
    assert facts["emulated"]["core"] == "cortex-a76" and facts["emulated"]["device"] == "raspberry-pi-5"
    assert facts["cpu_model"] == "cortex-a76 (emulated by qemu-user)"
    monkeypatch.delenv("EDGEKIT_EMULATED_CPU")
    assert "emulated" not in host_info()
