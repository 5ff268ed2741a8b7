"""Device profiles (edgekit/measure/device_profiles/*.toml) and a description of the host a measurement ran on.

A DeviceProfile says what the hardware is, which runtime device it maps to ("cpu", "gpu",
"edgetpu", "tpu"), which runtimes to prefer, how many threads to use, which power sensors to
read, and its nominal peak figures with their sources. Adding a device is a TOML file, no code;
users may pass their own with `--device path/to/board.toml`.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from edgekit.core.cores import usable_cores
from edgekit.core.errors import UsageError
from edgekit.core.registry import check_choice

KINDS = ("cpu", "gpu", "edgetpu", "tpu")
# How messages name each kind ("needs an Edge TPU", "not compiled for the Edge TPU")
KIND_WORDS = {"cpu": "CPU", "gpu": "GPU", "edgetpu": "Edge TPU", "tpu": "Cloud TPU"}


@dataclass
class DeviceProfile:
    """What a device is and how to measure on it (one devices/*.toml file)."""

    name: str
    description: str
    kind: str  # the runtime device: one of KINDS
    runtimes: list[str] = field(default_factory=list)  # preferred, in order
    threads: int | None = None  # None: the runtime's default (all cores)
    power_sensors: list[str] = field(default_factory=list)  # tried in order
    sensor_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # e.g. {"hwmon": {"rail": "VDD_IN"}}
    peak: dict[str, Any] = field(default_factory=dict)  # nominal figures, each with its "source"
    typical_watts: float | None = None  # only used, labelled as an estimate, with --estimate-power
    match: dict[str, Any] = field(default_factory=dict)  # how detect_profile recognises the host
    # a CPU's core, ISA and /proc/cpuinfo features ([cpu]): what it computes with, and the core an emulated
    # validation (edgekit.emulate, `convert --validate-on`) runs on
    cpu: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    path: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: str | None = None) -> DeviceProfile:
        missing = [k for k in ("name", "kind") if k not in d]
        if missing:
            raise UsageError(f"Device profile {path or d.get('name')} lacks {', '.join(missing)}.",
                             hint="See edgekit/measure/device_profiles/cpu-x86.toml for the fields a device file "
                                  "holds.")
        kind = check_choice(str(d["kind"]), KINDS, "device kind")
        threads = d.get("threads")
        return cls(
            name=str(d["name"]), description=str(d.get("description", "")), kind=kind,
            runtimes=list(d.get("runtimes", [])), threads=int(threads) if threads else None,
            power_sensors=list(d.get("power_sensors", [])), sensor_options=dict(d.get("sensor_options", {})),
            peak=dict(d.get("peak", {})), typical_watts=d.get("typical_watts"), match=dict(d.get("match", {})),
            cpu=dict(d.get("cpu", {})), notes=str(d.get("notes", "")), path=path,
        )

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "kind": self.kind, "runtimes": self.runtimes,
                "threads": self.threads, "power_sensors": self.power_sensors, "peak": self.peak,
                "typical_watts": self.typical_watts, "cpu": self.cpu, "path": self.path}


def _toml_loads(text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        from edgekit.core._deps import require

        tomllib = require("tomli", purpose="read device files on Python 3.10")
    return tomllib.loads(text)


def builtin_names() -> list[str]:
    """Names of the device files shipped with edgekit."""
    folder = resources.files("edgekit.measure") / "device_profiles"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def load_profile(name_or_path: str) -> DeviceProfile:
    """A shipped profile by name (e.g. "raspberry-pi-5"), or a user's .toml file by path."""
    p = Path(name_or_path)
    if name_or_path.endswith(".toml") or p.is_file():
        if not p.is_file():
            raise UsageError(f"No device file at {p}.", hint="Pass an existing .toml file or a built-in device name.")
        text, where = p.read_text(encoding="utf-8"), str(p)
    else:
        name = check_choice(name_or_path, builtin_names(), "device")
        res = resources.files("edgekit.measure") / "device_profiles" / f"{name}.toml"
        text, where = res.read_text(encoding="utf-8"), f"edgekit/measure/device_profiles/{name}.toml"
    try:
        data = _toml_loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise UsageError(f"{where} is not valid TOML: {exc}.") from exc
    return DeviceProfile.from_dict(data, path=where)


def all_profiles() -> list[DeviceProfile]:
    return [load_profile(n) for n in builtin_names()]


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", "replace").replace("\x00", "").strip()
    except OSError:
        return ""


def usb_ids(root: str | Path = "/") -> set[str]:
    """"vendor:product" of every USB device in sysfs."""
    ids = set()
    for dev in (Path(root) / "sys/bus/usb/devices").glob("*"):
        vendor, product = _read(dev / "idVendor"), _read(dev / "idProduct")
        if vendor and product:
            ids.add(f"{vendor}:{product}".lower())
    return ids


def _score(m: dict[str, Any], root: Path, model: str, machine: str) -> int:
    """How specifically MATCH rules fit the host: 0 when any rule fails; every rule given must hold."""
    score = 0
    if "device_tree_model" in m:
        if not model or m["device_tree_model"] not in model:
            return 0
        score += 10
    if "usb_ids" in m:
        if not usb_ids(root) & {x.lower() for x in m["usb_ids"]}:
            return 0
        score += 8
    if "paths" in m:
        if not any((root / x.lstrip("/")).exists() for x in m["paths"]):
            return 0
        score += 5
    if "machine" in m:
        if machine not in [x.lower() for x in m["machine"]]:
            return 0
        score += 1
    return score


def detect_profile(root: str | Path = "/", kind: str | None = None) -> DeviceProfile | None:
    """The shipped profile (of KIND, if given) whose `match` rules fit this host, most specific first."""
    root = Path(root)
    model = _read(root / "proc/device-tree/model")
    machine = platform.machine().lower()
    best: tuple[int, DeviceProfile] | None = None
    for prof in all_profiles():
        if kind is not None and prof.kind != kind:
            continue
        score = _score(prof.match, root, model, machine)
        if score and (best is None or score > best[0]):
            best = (score, prof)
    return best[1] if best else None


def cpu_model(root: str | Path = "/") -> str:
    """The CPU's model name from /proc/cpuinfo (x86 "model name", Arm "Model"/"Hardware"), else platform."""
    text = _read(Path(root) / "proc/cpuinfo")
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    for key in ("model name", "Model", "Hardware", "cpu model", "Processor"):
        if fields.get(key):
            return fields[key]
    return platform.processor() or platform.machine()


def emulated_cpu_facts() -> dict[str, str] | None:
    """The emulated core this process runs on (EDGEKIT_EMULATED_CPU, set by edgekit.emulate), or None."""
    value = os.environ.get("EDGEKIT_EMULATED_CPU", "")
    if not value or ":" not in value:
        return None
    device, core = value.split(":", 1)
    return {"device": device, "core": core, "emulator": "qemu-user",
            "note": "timings under emulation are not device figures"}


def host_info(root: str | Path = "/") -> dict[str, Any]:
    """What the measurement ran on: CPU model, cores, OS, board, Python."""
    try:
        import psutil

        physical = psutil.cpu_count(logical=False)
    except ImportError:
        physical = None
    usable = usable_cores()
    emulated = emulated_cpu_facts()
    model = "" if emulated else cpu_model(root)
    return {
        **({"emulated": emulated} if emulated else {}),
        # the CPU computing is the emulated core (its /proc/cpuinfo, which edgekit.emulate writes, names no model)
        "cpu_model": f"{emulated['core']} (emulated by {emulated['emulator']})" if emulated else model,
        "cpu_cores_logical": os.cpu_count(),
        "cpu_cores_physical": physical,
        "cpu_cores_usable": usable,
        "machine": platform.machine(),
        "os": f"{platform.system()} {platform.release()}",
        "board": _read(Path(root) / "proc/device-tree/model") or None,
        "python": platform.python_version(),
    }
