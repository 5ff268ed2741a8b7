"""The typed parts of a ProfileResult: what was measured, on what, and the memory and compute figures.

Each is a plain record whose `to_dict()` is the matching object of the ProfileResult JSON
(docs/profile.md); fields may be added, never renamed or removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgekit.core.records import Record


@dataclass
class ArtifactInfo(Record):
    """The file measured: where, its digest (fsutil.sha256_path), format, precision and where that came from."""

    path: str = ""
    sha256: str = ""
    format: str = ""  # a key of edgekit.core.formats.FORMATS
    precision: str | None = None  # a key of edgekit.core.precisions.PRECISIONS, None when unknown
    precision_source: str | None = None  # "manifest" or "file name"
    size_bytes: int = 0


@dataclass
class DeviceInfo(Record):
    """The device measured on (cpu, gpu, edgetpu, tpu ...), its profile, and the host
    (edgekit.measure.devices.host_info).

    The host's facts sit beside name/profile/accelerator in the JSON, not under a key of their own.
    """

    name: str = ""
    profile: str | None = None  # the devices/*.toml profile used
    accelerator: str | None = None  # words for humans, None on the CPU
    host: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "profile": self.profile, "accelerator": self.accelerator, **self.host}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DeviceInfo:
        own = ("name", "profile", "accelerator")
        return cls(name=d.get("name", ""), profile=d.get("profile"), accelerator=d.get("accelerator"),
                   host={k: v for k, v in d.items() if k not in own})


@dataclass
class RuntimeInfo(Record):
    """The runtime that ran it: name, version, and its own settings (providers, delegates, threads ...)."""

    name: str = ""
    version: str | None = None
    details: dict[str, Any] = field(default_factory=dict)  # runtime-specific: Runtime.info()


@dataclass
class MemoryUsage(Record):
    """Bytes: the process's peak RSS, the RSS growth while loading, the file, the runtime's arena."""

    peak_rss_bytes: int | None = None
    load_rss_delta_bytes: int | None = None
    artifact_bytes: int | None = None
    arena_bytes: int | None = None


@dataclass
class ComputeFigures(Record):
    """MACs per call and where the count came from, achieved GMAC/s at p50, and on the CPU the share of its peak."""

    macs: int | None = None
    macs_source: str | None = None
    gmacs_per_s: float | None = None
    cpu_peak_gmacs_per_s: float | None = None
    fraction_of_peak: float | None = None
    peak_method: str | None = None


@dataclass
class InputInfo(Record):
    """One input fed to the timed runs, as prepared: name, shape (the batch included) and numpy dtype."""

    name: str = ""
    shape: list[int] = field(default_factory=list)
    dtype: str = ""


__all__ = ["ArtifactInfo", "ComputeFigures", "DeviceInfo", "InputInfo", "MemoryUsage", "RuntimeInfo"]
