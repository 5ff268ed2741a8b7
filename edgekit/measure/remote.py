"""`edgekit profile ARTIFACT --remote HOST`: the artifact measured on the device, the result read back here.

The device runs its own `edgekit profile --json` (its runtimes, its threads, its sensors), so the figures
have the same schema as a local run's; the result then carries the device's facts under `device.remote`,
the artifact's path here, and a note where the two ends run different edgekit versions. It lives in measure
(edgekit.remote is the transport below it: the SSH device, its files and errors), so measure and remote do not import
each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from edgekit.core.errors import UsageError
from edgekit.measure.profile import ProfileResult
from edgekit.measure.settings import MeasureSettings
from edgekit.remote.device import Device, DeviceFacts
from edgekit.remote.errors import RemoteRunFailed
from edgekit.remote.host import Remote


def profile_remote(path: str | Path, remote: Remote, flags: list[str],
                   log: Callable[[str], None] | None = None) -> ProfileResult:
    """Copy PATH (and its sidecar files) to REMOTE's cache, run `edgekit profile --json FLAGS` there, label it."""
    path = Path(path)
    with Device(remote, log) as dev:
        where = dev.upload([path])[path]
        data = dev.profile(where, flags)
        facts = dev.facts
    return labelled(data, facts, path, where)


def labelled(data: dict[str, Any], facts: DeviceFacts | None, local: Path, device_path: str) -> ProfileResult:
    """The device's ProfileResult DATA as a record, with the device's FACTS, the local path and a version note."""
    try:
        result = ProfileResult.from_dict(data)
    except (UsageError, TypeError, AttributeError) as exc:
        where = facts.host if facts else "the device"
        raise RemoteRunFailed(f"{where} answered with no ProfileResult this edgekit can read: {exc}",
                              hint="Install the same edgekit version on both ends.") from None
    if facts is not None:
        facts = replace(facts, artifact_path=device_path)
        result.device.host["remote"] = facts.to_dict()
        note = facts.version_note()
        if note:
            result.notes.append(note)
    result.artifact.path = str(local)
    return result


def profile_flags(settings: MeasureSettings, *, runtime: str | None = None, device: str = "auto",
                  sensors: list[str] | None = None, options: list[str] | None = None, macs: int | None = None,
                  estimate_power: bool = False, input_shape: str | None = None, model: str | None = None,
                  trust_model: bool = False) -> list[str]:
    """The `edgekit profile` flags (after the artifact and --json) that measure as the local command was asked to."""
    flags = ["--device", device, *settings.cli_args()]
    if runtime:
        flags += ["--runtime", runtime]
    if sensors:
        flags += ["--sensor", ",".join(sensors)]
    if estimate_power:
        flags += ["--estimate-power"]
    if macs is not None:
        flags += ["--macs", str(macs)]
    if input_shape:
        flags += ["--input-shape", input_shape]
    if model:
        flags += ["--model", model]
    if trust_model:
        flags += ["--trust-model"]
    for opt in options or []:
        flags += ["--option", opt]
    return flags


__all__ = ["labelled", "profile_flags", "profile_remote"]
