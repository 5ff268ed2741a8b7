"""The Arm cores edgekit can emulate: each Raspberry Pi generation's, read from its device profile's [cpu] table."""

from __future__ import annotations

from dataclasses import dataclass

from edgekit.core.errors import UsageError
from edgekit.core.registry import suggest

# Short names users type for the device profiles that describe a Pi generation
ALIASES = {"pi3": "raspberry-pi-3", "pi4": "raspberry-pi-4", "pi5": "raspberry-pi-5", "zero2w": "raspberry-pi-3"}


# MIDR_EL1 of each core as qemu models it (implementer, variant, part, revision): what /proc/cpuinfo shows on the
# device and what the runtimes' CPU detection (pytorch/cpuinfo in onnxruntime and XNNPACK) picks kernels by
MIDR = {"cortex-a53": (0x41, 0x0, 0xD03, 4), "cortex-a55": (0x41, 0x1, 0xD05, 0), "cortex-a57": (0x41, 0x1, 0xD07, 1),
        "cortex-a72": (0x41, 0x0, 0xD08, 3), "cortex-a76": (0x41, 0x4, 0xD0B, 1)}


@dataclass(frozen=True)
class EmulatedCpu:
    """A device's core as qemu emulates it: the device profile's name, the core, its ISA and Linux features."""

    device: str  # the device profile: "raspberry-pi-5"
    core: str  # the core, also qemu's -cpu name: "cortex-a76"
    isa: str  # "armv8.2-a"
    features: tuple[str, ...]  # /proc/cpuinfo names: "atomics" (LSE), "asimddp" (dot product), "fphp" (fp16) ...
    description: str = ""

    @property
    def label(self) -> str:
        """"raspberry-pi-5 (Cortex-A76, emulated)": how tables and messages name it."""
        return f"{self.device} ({self.core.replace('cortex', 'Cortex').upper().replace('CORTEX', 'Cortex')}, emulated)"

    def has(self, feature: str) -> bool:
        return feature in self.features

    def cpuinfo(self, cores: int) -> str:
        """/proc/cpuinfo as Linux writes it on an arm64 device with CORES of this core (qemu-user shows the host's)."""
        implementer, variant, part, revision = MIDR.get(self.core, (0x41, 0, 0, 0))
        block = (f"BogoMIPS\t: 108.00\nFeatures\t: {' '.join(self.features)}\nCPU implementer\t: 0x{implementer:02x}\n"
                 f"CPU architecture: 8\nCPU variant\t: 0x{variant:x}\nCPU part\t: 0x{part:03x}\n"
                 f"CPU revision\t: {revision}\n")
        return "".join(f"processor\t: {i}\n{block}\n" for i in range(cores))

    def to_dict(self) -> dict[str, object]:
        return {"device": self.device, "core": self.core, "isa": self.isa, "features": list(self.features)}


def emulable() -> list[str]:
    """The device profiles with a [cpu] table qemu can emulate (an Arm core), by name."""
    from edgekit.measure.devices import all_profiles

    return [p.name for p in all_profiles() if str(p.cpu.get("core", "")).startswith("cortex-")]


def emulated_cpu(name: str) -> EmulatedCpu:
    """The core of NAME: a short name (pi3, pi4, pi5), a device profile ("raspberry-pi-5") or its .toml file."""
    from edgekit.measure.devices import builtin_names, load_profile

    key = ALIASES.get(name.strip().lower(), name.strip())
    if key not in builtin_names() and not key.endswith(".toml"):
        names = [*ALIASES, *emulable()]
        guess = suggest(name, names)
        raise UsageError(f"No emulated CPU named '{name}'.", hint=(f"did you mean '{guess}'? " if guess else "")
                         + f"Choose from: {', '.join(names)}.")
    profile = load_profile(key)
    core = str(profile.cpu.get("core", ""))
    if not core.startswith("cortex-"):
        raise UsageError(f"The device '{profile.name}' names no Arm core edgekit can emulate (its [cpu] table has "
                         f"core = {core or 'nothing'}).",
                         hint=f"Choose from: {', '.join(emulable())}; a device file of your own needs [cpu] core = "
                              "\"cortex-a72\" (any core qemu-aarch64 -cpu help lists).")
    return EmulatedCpu(device=profile.name, core=core, isa=str(profile.cpu.get("isa", "")),
                       features=tuple(str(f) for f in profile.cpu.get("features", [])),
                       description=profile.description)


def emulated_cpus(names: list[str]) -> list[EmulatedCpu]:
    """Each of NAMES resolved, duplicates (pi5 and raspberry-pi-5) once."""
    out: dict[str, EmulatedCpu] = {}
    for n in names:
        cpu = emulated_cpu(n)
        out.setdefault(cpu.device, cpu)
    return list(out.values())


__all__ = ["ALIASES", "EmulatedCpu", "emulable", "emulated_cpu", "emulated_cpus"]
