"""The CPU a conversion makes its int8 for (`convert --for NAME`): a device profile, a CPU class, or this host.

NAME is `host` (the default: this machine, read from /proc/cpuinfo's flags), a CPU class of
edgekit.quantize.cpu_forms (x86-64-vnni, x86-64, arm64-dotprod, arm64), a device profile with a CPU (cpu-x86,
cpu-arm64, raspberry-pi-3/4/5, or its short name pi3/pi4/pi5), or a device .toml file. Its architecture and
features decide the class (cpu_forms.cpu_class), the class the int8 form (cpu_forms.FORMS). Here, beside the device
profiles it reads, because the quantizers sit below this package.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgekit.core.errors import UsageError
from edgekit.core.registry import suggest
from edgekit.quantize.cpu_forms import ARM_DOT, FORMS, VNNI_FLAGS, CpuForm, cpu_class, form_for, read_cpuinfo

HOST = "host"
CLASSES = tuple(c for c in FORMS if c != "other")  # `other` is what an unknown host gets; no one asks for it


@dataclass(frozen=True)
class DeployCpu:
    """NAME resolved: what CPU it is (DEVICE, MACHINE, the FEATURES that decided its class) and its int8 form."""

    name: str  # as asked: host, pi5, raspberry-pi-5, x86-64-vnni ...
    device: str  # the device profile, the class, or the host's CPU model
    machine: str  # x86_64 | aarch64 | "" (unknown)
    deciding: tuple[str, ...]  # the features that decided its class (avx512_vnni, asimddp), or ()
    form: CpuForm

    def describe(self) -> str:
        """"pi5 = raspberry-pi-5, arm64-dotprod (asimddp)": how the log and the notes name it."""
        why = f" ({', '.join(self.deciding)})" if self.deciding else ""
        dev = f" = {self.device}" if self.device != self.name else ""
        return f"{self.name}{dev}, {self.form.cpu}{why}"

    def to_dict(self) -> dict[str, Any]:
        return {"for": self.name, "device": self.device, "machine": self.machine, "deciding": list(self.deciding),
                **self.form.to_dict()}


def _deciding(features: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f for f in (*VNNI_FLAGS, ARM_DOT) if f in features)


def host_cpu(root: str | Path = "/") -> DeployCpu:
    """This machine (or the one whose /proc lies under ROOT): its /proc/cpuinfo's flags decide the class."""
    from edgekit.measure.devices import cpu_model

    try:
        text = (Path(root) / "proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    machine, features = read_cpuinfo(text)
    machine = machine or platform.machine().lower()
    cls = cpu_class(machine, features)
    return DeployCpu(HOST, cpu_model(root) or machine or "unknown CPU", machine, _deciding(features), form_for(cls))


def _profile_cpu(name: str, key: str) -> DeployCpu:
    from edgekit.measure.devices import load_profile

    prof = load_profile(key)
    machines = [str(m).lower() for m in prof.match.get("machine", [])]
    isa = str(prof.cpu.get("isa", ""))
    machine = "aarch64" if isa.startswith("armv8") or "aarch64" in machines else machines[0] if machines else ""
    features = tuple(str(f) for f in prof.cpu.get("features", []))
    cls = cpu_class(machine, features)
    if prof.kind != "cpu" or cls == "other":
        raise UsageError(f"--for {name}: the device '{prof.name}' is not a CPU edgekit makes int8 for (kind "
                         f"{prof.kind}, {machine or 'no architecture'}).", hint=f"Choose from: {', '.join(choices())}.")
    return DeployCpu(name, prof.name, machine, _deciding(features), form_for(cls))


def choices() -> list[str]:
    """What --for takes: host, the CPU classes, and the device profiles with a CPU (short Pi names included)."""
    from edgekit.measure.devices import all_profiles

    cpus = [p.name for p in all_profiles() if p.kind == "cpu"]
    short = [f"pi{m.group(1)}" for n in cpus if (m := re.fullmatch(r"raspberry-pi-(\d+)", n))]
    return [HOST, *CLASSES, *short, *cpus]


def deploy_cpu(name: str, root: str | Path = "/") -> DeployCpu:
    """NAME (see the module's docstring) resolved; an unknown name is a UsageError listing the choices."""
    from edgekit.measure.devices import builtin_names

    key = name.strip()
    if key.lower() == HOST:
        return host_cpu(root)
    if key in CLASSES:
        return DeployCpu(key, key, "aarch64" if key.startswith("arm64") else "x86_64", (), form_for(key))
    short = re.fullmatch(r"pi(\d+)", key.lower())
    profile = f"raspberry-pi-{short.group(1)}" if short else key
    if profile in builtin_names() or profile.endswith(".toml"):
        return _profile_cpu(key, profile)
    options = choices()
    guess = suggest(key, options)
    raise UsageError(f"--for {name}: no deployment CPU of that name.",
                     hint=(f"did you mean '{guess}'? " if guess else "") + f"Choose from: {', '.join(options)}.")


__all__ = ["CLASSES", "HOST", "DeployCpu", "choices", "deploy_cpu", "host_cpu"]
