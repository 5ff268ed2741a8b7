"""The check report as people read it: a terminal table (text) and a pull-request table (markdown).

Both show the same columns (artifact, metric, baseline, now, change, budget, verdict), worst first,
then what latency compared, where the budgets came from and what was not checked. Figures are shown
by unit: sizes in KB, fractions in %, latency relative to the source as "x", changes in % (or in
points for fractions).
"""

from __future__ import annotations

from typing import Any

from edgekit.check.records import CheckReport, CheckResult
from edgekit.core.console import human_bytes

COLUMNS = ("artifact", "metric", "baseline", "now", "change", "budget", "verdict")
ICON = {"pass": "✅ pass", "warn": "⚠️ warn", "fail": "❌ fail"}


def figure(value: Any, unit: str, kb: bool = False) -> str:
    """VALUE as the tables show it, by UNIT; with KB, sizes always in KB (a pull-request table compares them)."""
    if value is None:
        return "-"
    if unit == "bytes" and isinstance(value, (int, float)):
        return f"{value / 1024:,.1f} KB" if kb else human_bytes(value)
    if unit == "fraction" and isinstance(value, (int, float)):
        return f"{value:.2%}"
    if unit == "ratio" and isinstance(value, (int, float)):
        return f"{value:.3f}x src"
    if unit == "ms" and isinstance(value, (int, float)):
        return f"{value:.3f} ms"
    if unit == "count" and isinstance(value, (int, float)):
        return f"{value:,}"
    return str(value)


def change(r: CheckResult) -> str:
    if r.change is None:
        return ""
    if r.unit == "fraction":
        return f"{r.change * 100:+.2f} pt"
    return f"{r.change:+.1%}"


def cells(r: CheckResult, kb: bool = False) -> list[str]:
    return [r.artifact, r.metric, figure(r.baseline, r.unit, kb), figure(r.now, r.unit, kb), change(r), r.budget,
            r.verdict]


def summary_line(report: CheckReport) -> str:
    c = report.counts
    head = {"fail": "FAILED", "warn": "passed with warnings", "pass": "passed"}[report.verdict]
    return (f"edgekit check {head}: {c.get('fail', 0)} failed, {c.get('warn', 0)} warnings, "
            f"{c.get('pass', 0)} passed (exit {report.exit_code})")


def footer(report: CheckReport) -> list[str]:
    """The lines under the table: baseline, budgets, what latency compared, and what was not checked."""
    lines = [f"current: {report.current}", f"baseline: {report.baseline or 'none (absolute budgets only)'}",
             f"budgets: {report.budgets}"]
    if report.latency_compared:
        lines.append("latency compared: " + "; ".join(report.latency_compared))
    lines += [f"note: {n}" for n in report.notes]
    return lines


def text(report: CheckReport, console: Any) -> None:
    """The table on CONSOLE (rich), then the footer and the one-line verdict."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="edgekit check", title_justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="right" if col in ("baseline", "now", "change") else "left")
    colour = {"fail": "bold red", "warn": "yellow", "pass": "green"}
    for r in report.checks:
        row = [escape(x) for x in cells(r)]
        row[-1] = f"[{colour[r.verdict]}]{row[-1]}[/]"
        table.add_row(*row)
    console.print(table)
    for r in report.failed + report.warned:
        console.print(f"{r.verdict}: {escape(r.message)} [dim]({escape(r.budget_from)})[/dim]")
    for line in footer(report):
        console.print(escape(line), highlight=False)
    console.print(f"[{colour[report.verdict]}]{escape(summary_line(report))}[/]")


def _md_cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def markdown(report: CheckReport) -> str:
    """A Markdown table for a pull-request comment or a GitHub step summary."""
    out = [f"### {summary_line(report)}", "", "| " + " | ".join(COLUMNS) + " |",
           "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for r in report.checks:
        row = cells(r, kb=True)
        row[-1] = ICON[r.verdict]
        out.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    out.append("")
    out += [f"- {_md_cell(line)}" for line in footer(report)]
    return "\n".join(out) + "\n"


__all__ = ["COLUMNS", "cells", "change", "figure", "footer", "markdown", "summary_line", "text"]
