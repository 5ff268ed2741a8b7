"""Runtime backends, by name. Plain strings: listing them imports nothing heavy.

A format's own runtime is in its record (edgekit.core.formats.FORMATS: `runtimes`, and `runtime`, its default);
RUNTIMES holds the runtimes beyond those, a second runtime for a format that already has one: a module with a
`Runtime` subclass and one line here. `runtime_names()` lists both; the conformance suite
(tests/runtimes/test_runtime_conformance.py) runs each through the same contract as the rest.
Runtime modules import their vendor library inside functions, so resolving a class is cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.core.formats import FORMATS, sniffed
from edgekit.core.registry import check_choice, resolve
from edgekit.runtimes.base import Runtime

RUNTIMES: dict[str, str] = {}  # name -> "module:Class": runtimes beyond the formats' own


def runtime_table() -> dict[str, str]:
    """Every runtime by name: the formats' own (their records, in table order), then RUNTIMES; read when asked, so
    one registered later (a plugin, a test) counts."""
    own = {name: cls for spec in FORMATS.values() for name, cls in spec.runtimes.items()}
    return {**own, **RUNTIMES}


def runtime_names() -> list[str]:
    return list(runtime_table())


def default_runtimes() -> dict[str, str]:
    """The runtime used when none is named, per format: read from edgekit.core.formats.FORMATS (one table), when
    asked, so a format registered after import (a plugin, a test) is runnable too."""
    return {name: spec.runtime for name, spec in FORMATS.items() if spec.runtime}


# The device names users type; runtimes may accept more specific ones (onnxruntime: "tensorrt").
DEVICES = ("auto", "cpu", "gpu", "edgetpu", "tpu")
DEVICE_ALIASES = {"cuda": "gpu", "coral": "edgetpu"}


def get_runtime(name: str) -> type[Runtime]:
    return resolve(runtime_table(), name, "runtime")


def runtime_for_format(fmt: str) -> type[Runtime]:
    defaults = default_runtimes()
    if fmt not in defaults:
        raise UsageError(f"No runtime runs '{fmt}' artifacts.", hint=f"Runnable formats: {', '.join(defaults)}.")
    return get_runtime(defaults[fmt])


def runtimes_for_format(fmt: str) -> list[str]:
    """Names of every runtime that can load FMT artifacts, the default first."""
    names = [n for n in runtime_table() if fmt in get_runtime(n).formats]
    default = default_runtimes().get(fmt)
    return sorted(names, key=lambda n: n != default)


def normalize_device(device: str) -> str:
    """Lower-case device name with aliases resolved ("cuda" -> "gpu"); unknown names pass through."""
    d = device.strip().lower()
    return DEVICE_ALIASES.get(d, d)


def detect_format(path: str | Path) -> str:
    """The format of PATH from its content: an artifact format of FORMATS (its sniffer), savedmodel or torch."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"No such file or folder: {p}.", hint="Check the path (relative to the current folder).")
    if p.is_dir():
        if (p / "saved_model.pb").is_file():
            return "savedmodel"
        raise UsageError(f"{p} is a folder but not a SavedModel (no saved_model.pb).",
                         hint="Pass a model file, or use `edgekit bench` for a conversion output folder.")
    fmt = sniffed(p)  # every format's own sniffer (edgekit.core.formats.FORMATS), source forms last
    if fmt is not None:
        return fmt
    from edgekit.core.sniff import read_head

    runnable = sorted({s.suffix for s in FORMATS.values() if s.sniff and s.runtime and s.suffix})
    raise UnsupportedModel(f"{p} is not a model file edgekit can run (first bytes: {read_head(p, 8)!r}; it runs "
                           f"{', '.join(runnable)} files and SavedModel folders).",
                           hint="For a Keras or other source model, run `edgekit convert` first, then "
                           "`edgekit profile` on what it wrote.")


def pick_runtime(fmt: str, runtime: str | None = None) -> type[Runtime]:
    """The runtime class named RUNTIME (checked against FMT), or FMT's default."""
    if runtime is None:
        return runtime_for_format(fmt)
    cls = get_runtime(runtime)
    if fmt not in cls.formats:
        can = runtimes_for_format(fmt)
        raise UsageError(f"The {cls.name} runtime cannot load {fmt} artifacts.",
                         hint=f"Use {' or '.join(can) if can else 'another format'} for {fmt}.")
    return cls


def resolve_device(cls: type[Runtime], fmt: str, device: str) -> str:
    """DEVICE for CLS, with "auto" meaning the fastest device that is available here."""
    device = normalize_device(device)
    if device != "auto":
        check_choice(device, [*DEVICES, *cls.devices], "device")
        return device
    tied = FORMATS[fmt].devices if fmt in FORMATS else None
    if tied:  # a format that runs on one kind of device only (an Edge TPU model): that device
        return tied[0]
    for candidate in cls.auto_devices:
        if cls.available(candidate)[0]:
            return candidate
    return "cpu"


def open_runtime(path: str | Path, runtime: str | None = None, device: str = "cpu",
                 threads: int | None = None, **options: Any) -> Runtime:
    """Load PATH on DEVICE with RUNTIME (default: the format's) and return the loaded runtime."""
    fmt = detect_format(path)
    cls = pick_runtime(fmt, runtime)
    rt = cls()
    rt.load(path, device=resolve_device(cls, fmt, device), threads=threads, **options)
    return rt


__all__ = ["RUNTIMES", "default_runtimes", "runtime_names", "runtime_table", "DEVICES", "Runtime", "detect_format",
           "get_runtime",
           "normalize_device", "open_runtime", "pick_runtime", "resolve_device", "runtime_for_format",
           "runtimes_for_format"]
