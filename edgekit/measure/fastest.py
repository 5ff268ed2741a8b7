"""What this machine's bench report measured fastest: the figures `serve` and `profile --device auto` go by.

`edgekit bench OUT` writes OUT/bench/bench.json: every artifact on every runtime and device here. A row of it speaks
for a file only where it measured that very file (same name and sha256: a file converted again since is measured
again, not guessed), on this machine (same CPU model, architecture, board and core count as the report's host, and
not under emulation), not on a --remote device, and ran to the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgekit.core.errors import UsageError
from edgekit.measure.bench_report import BenchReport

# The host facts that make two machines the same for speed (edgekit.measure.devices.host_info)
SAME_MACHINE = ("cpu_model", "machine", "board", "cpu_cores_logical")

Key = tuple[str, str, str, str]  # (file name, sha256, runtime, device)


def different_machine(measured_on: dict[str, Any], here: dict[str, Any]) -> str | None:
    """Why a report measured on MEASURED_ON (host facts) does not speak for HERE; None where it does."""
    if measured_on.get("emulated") or here.get("emulated"):
        return "timings under emulation say nothing of a board's speed"
    for key in SAME_MACHINE:
        if measured_on.get(key) != here.get(key):
            return f"it was measured on another machine ({key} {measured_on.get(key)!r}, here {here.get(key)!r})"
    return None


def measured(report: BenchReport) -> dict[Key, float]:
    """(file name, sha256, runtime, device) -> p50 ms of each row of the report's own machine that ran."""
    sha = {Path(r.artifact.path).name: r.artifact.sha256 for r in report.results}  # reports older than row.sha256
    out: dict[Key, float] = {}
    for row in report.rows:
        if row.host is not None or row.status != "ok" or row.p50_ms is None or not row.path:
            continue
        name = Path(row.path).name
        key = (name, row.sha256 or sha.get(name, ""), row.runtime, row.device)
        out[key] = min(out.get(key, row.p50_ms), row.p50_ms)
    return out


def beside(artifact: Path) -> Path | None:
    """The bench report `edgekit bench` writes for the conversion ARTIFACT belongs to, where there is one."""
    found = artifact.parent / "bench" / "bench.json"
    return found if found.is_file() else None


def fastest_for(artifact: Path, sha256: str, here: dict[str, Any] | None = None) -> tuple[str, str, str] | None:
    """(runtime, device, why) of the fastest row this machine's bench report beside ARTIFACT measured for it; None
    where there is no such report or row (a report that cannot be read or is another machine's counts as none)."""
    path = beside(artifact)
    if path is None:
        return None
    try:
        report = BenchReport.read(path)
    except UsageError:
        return None
    if here is None:
        from edgekit.measure.devices import host_info

        here = host_info()
    if different_machine(report.host, here) is not None:
        return None
    rows = sorted((p50, key) for key, p50 in measured(report).items() if key[:2] == (artifact.name, sha256))
    if not rows:
        return None
    p50, (_, _, runtime, device) = rows[0]
    return runtime, device, (f"runtime and device of the fastest row {path} measured for this file here "
                             f"({runtime}/{device}, p50 {p50:.3f} ms of {len(rows)} rows)")


__all__ = ["SAME_MACHINE", "beside", "different_machine", "fastest_for", "measured"]
