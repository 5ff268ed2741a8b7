"""Serve the fastest row this very machine measured: a conversion's candidates ordered by its bench report.

`edgekit bench OUT` measures every artifact on every runtime and device here and writes OUT/bench/bench.json. Where
that report exists (or `--bench FILE` names one) and was measured on this machine, `edgekit serve OUT` tries the
candidates in the order of their measured p50 latency, fastest first, instead of the formats' fixed ranks
(edgekit.core.formats.FORMATS `serve`): the ranks are what is usually fastest, the report is what was. Which rows
count is edgekit.measure.fastest's rule (the very file, this machine, not a --remote device, a run that finished);
candidates without such a row keep the table's order after the measured ones. Every choice says why
(`Ranking.why`): the server logs it at start and shows it in /v2/models/NAME (`parameters.chosen_by`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgekit.core.errors import UsageError
from edgekit.measure.fastest import different_machine, measured

if TYPE_CHECKING:
    from edgekit.serve.models import ModelChoice

AUTO, OFF = "auto", "off"  # --bench: the report beside a conversion folder / none: the table alone


@dataclass(frozen=True)
class Ranking:
    """The candidates in the order to try them, and why that order."""

    candidates: list[ModelChoice]
    why: str  # the order's reason, for the log
    notes: tuple[str, ...] = ()  # per candidate: why it stands where it does (`chosen` puts it on the choice)
    report: Path | None = None  # the bench report read, where there was one


def report_path(served: Path, bench: str | Path | None) -> tuple[Path | None, bool]:
    """(the bench report to read, whether the user named it) for serving SERVED with --bench BENCH."""
    if bench is None or str(bench) == AUTO:
        folder = served if served.is_dir() else served.parent if served.name == "manifest.json" else None
        found = folder / "bench" / "bench.json" if folder is not None else None
        return (found if found is not None and found.is_file() else None), False
    if str(bench) == OFF:
        return None, False
    return Path(bench), True


def rank(candidates: list[ModelChoice], served: Path, bench: str | Path | None,
         here: dict[str, Any] | None = None) -> Ranking:
    """CANDIDATES (the format table's order) reordered by the bench report for SERVED, where one applies."""
    from edgekit.measure.bench_report import BenchReport

    table = "the format table's ranks"
    path, named = report_path(served, bench)
    if path is None:
        why = f"{table} (--bench off)" if str(bench) == OFF else f"{table}: no bench report (run `edgekit bench`)"
        return Ranking(candidates, why)
    try:
        report = BenchReport.read(path)
    except UsageError:
        if named:
            raise
        return Ranking(candidates, f"{table}: {path} is not a bench report edgekit reads", report=path)
    if here is None:
        from edgekit.measure.devices import host_info

        here = host_info()
    other = different_machine(report.host, here)
    if other is not None:
        if named:
            raise UsageError(f"The bench report {path} cannot rank what is served here: {other}.",
                             hint="Run `edgekit bench` on this machine, or leave --bench out.")
        return Ranking(candidates, f"{table}: {path} not used, {other}", report=path)
    speeds = measured(report)
    timed = [(speeds[key], i) for i, c in enumerate(candidates) if (key := _key(c)) in speeds]
    if not timed:
        return Ranking(candidates, f"{table}: {path} has no row of these files on their runtimes", report=path)
    order = [i for _, i in sorted(timed)] + [i for i, c in enumerate(candidates) if _key(c) not in speeds]
    ranked = [candidates[i] for i in order]
    best = ranked[0]
    why = (f"fastest measured in {path}: {best.path.name} on {best.runtime}/{best.device}, p50 "
           f"{speeds[_key(best)]:.3f} ms ({len(timed)} of {len(candidates)} candidates measured)")
    notes = tuple(f"bench: p50 {speeds[_key(c)]:.3f} ms in {path}, {n + 1} of {len(timed)} measured here"
                  if n < len(timed) else f"{table}: not measured in {path}" for n, c in enumerate(ranked))
    return Ranking(ranked, why, notes, path)


def _key(c: ModelChoice) -> tuple[str, str, str, str]:
    sha = c.artifact.sha256 if c.artifact is not None else ""
    return (c.path.name, sha, c.runtime, c.device)


def chosen(ranking: Ranking) -> list[ModelChoice]:
    """The candidates, each carrying why it stands where it does (its measured p50, or the table's rank)."""
    notes = ranking.notes or (ranking.why,) * len(ranking.candidates)
    return [replace(c, chosen_by=note) for c, note in zip(ranking.candidates, notes, strict=True)]


__all__ = ["AUTO", "OFF", "Ranking", "chosen", "rank", "report_path"]
