"""Rows of an earlier docs/zoo.md, kept for the models this machine has no result JSON for.

Why: a full zoo run takes hours, and its per-model JSONs stay on the machine that ran it (bench/results/
is not committed): docs/zoo.md is the only record that travels. A report written anywhere else would list
every model it has no JSON for as "planned, not run" and lose those results. So the report regenerates
the rows it has a JSON for and keeps, for each other model, the row and the failure lines the page
already has, marked `(earlier run, DATE)` with the date of the run that wrote them: a row shows the code
of its own date, and `python bench/zoo.py run --only NAME` replaces it.

The earlier page is the working tree's docs/zoo.md, and for rows it lacks (a run under an older report
may have dropped them) the committed one (`git show HEAD:docs/zoo.md`).
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

_MARK = re.compile(r"^`([^`]+)`(?: \(earlier run, ([^)]*)\))?$")
_BULLET = re.compile(r"^- `([^`]+)`(?: \(earlier run, ([^)]*)\))?(.*)$")
ROW_DATES = "Each row's run (UTC):"  # the line that dates each row run for a page (see `row_dates`)
ROW_DATES_RE = r"^(?:- )?Each row's run \(UTC\): (.*)$"


@dataclass(frozen=True)
class KeptRow:
    """One model's row on an earlier page: its cells by column name, its failure lines, its run's date."""

    name: str
    cells: dict[str, str]  # column header -> cell text, the model cell without its mark
    failures: tuple[str, ...]  # what follows "- `name`" in each of its failure lines, without the mark
    run: str  # the run's date as the mark shows it, "2026-11-23 10:57-11:58 UTC"; "date unknown" if the page had none

    @property
    def marked(self) -> str:
        return f"`{self.name}` (earlier run, {self.run})"

    def line(self, header: list[str]) -> str:
        """The row under HEADER's columns (a column this row lacks shows "-"), the model cell marked."""
        cells = [self.marked if i == 0 else self.cells.get(col, "-") for i, col in enumerate(header)]
        return "| " + " | ".join(cells) + " |"

    def failure_lines(self) -> list[str]:
        return [f"- {self.marked}{rest}" for rest in self.failures]


def span(start: str | None, end: str | None) -> str:
    """A run's date range, compact: "2026-11-23 10:57-11:58 UTC"; "date unknown" without dates."""
    try:
        a, b = (dt.datetime.fromisoformat(s).astimezone(dt.timezone.utc) for s in (start or "", end or start or ""))
    except ValueError:
        return "date unknown"
    if a.date() == b.date():
        return f"{a:%Y-%m-%d %H:%M}-{b:%H:%M} UTC"
    return f"{a:%Y-%m-%d %H:%M} UTC to {b:%Y-%m-%d %H:%M} UTC"


def row_dates(recs: list[dict[str, str]]) -> str:
    """ROW_DATES followed by each record's name and start, to the minute: what dates a row once it is kept."""
    when = [f"`{r['name']}` {dt.datetime.fromisoformat(r['date']).astimezone(dt.timezone.utc):%Y-%m-%d %H:%M}"
            for r in recs]
    return f"{ROW_DATES} {', '.join(when)}."


def split_row(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def parse_section(lines: list[str], date_pattern: str, failures_after: str) -> dict[str, KeptRow]:
    """The model rows of one section of a zoo page, by model name.

    DATE_PATTERN: a regex whose two groups are the ISO start and end of the rows run for that page (its
    unmarked rows); FAILURES_AFTER: the line that opens the section's list of failure lines (a run of
    "- `name` ..." bullets ending at a blank line).
    """
    text = "\n".join(lines)
    m = re.search(date_pattern, text, re.M)
    page_run = span(m.group(1), m.group(2)) if m else "date unknown"
    dated = re.search(ROW_DATES_RE, text, re.M)  # each row's own run, where the page lists them
    pairs = re.findall(r"`([^`]+)` (\d{4}-\d\d-\d\d \d\d:\d\d)", dated.group(1)) if dated else []
    row_run = {n: f"{d} UTC" for n, d in pairs}
    header: list[str] = []
    rows: dict[str, tuple[dict[str, str], str]] = {}
    for ln in lines:
        if ln.startswith("| model |"):
            header = split_row(ln)
        elif header and ln.startswith("| `"):
            cells = split_row(ln)
            mark = _MARK.match(cells[0])
            if mark and len(cells) == len(header):
                name = mark.group(1)
                rows[name] = (dict(zip(header, cells, strict=True)), mark.group(2) or row_run.get(name, page_run))
    fails: dict[str, list[str]] = {name: [] for name in rows}
    started, opened = False, False
    for ln in lines:
        if ln.strip() == failures_after.strip():
            opened = True
            continue
        if not opened:
            continue
        b = _BULLET.match(ln)
        if b:
            started = True
            if b.group(1) in fails:
                fails[b.group(1)].append(b.group(3))
        elif started and not ln.strip():
            break
    return {name: KeptRow(name, cells, tuple(fails[name]), run) for name, (cells, run) in rows.items()}


def committed(doc: Path) -> str:
    """DOC as the last commit has it ("" outside a git checkout or where it is not committed)."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=doc.parent, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        if not top or not doc.resolve().is_relative_to(Path(top).resolve()):
            return ""
        rel = doc.resolve().relative_to(Path(top).resolve()).as_posix()
        done = subprocess.run(["git", "show", f"HEAD:{rel}"], cwd=top, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def earlier_rows(doc: Path, cut: str, part: int, date_pattern: str, failures_after: str,
                 use_commit: bool = True) -> dict[str, KeptRow]:
    """The rows of one part of DOC split at the line CUT (0: before it, 1: from it on), as the working copy has
    them, then as the last commit has them for the models the working copy lacks."""
    texts = [doc.read_text() if doc.is_file() else ""] + ([committed(doc)] if use_commit else [])
    rows: dict[str, KeptRow] = {}
    for text in texts:
        parts = ("\n" + text).split("\n" + cut + "\n")
        lines = parts[part].splitlines() if part < len(parts) else []
        for name, row in parse_section(lines, date_pattern, failures_after).items():
            rows.setdefault(name, row)
    return rows
