"""The `edgekit bench` report for people: the rows as text, the screen table, bench.md and bench.png.

Screen and Markdown share `table_rows` and `footnotes`, so the two never disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgekit.report.fidelity import agreement
from edgekit.report.text import human_bytes, millijoules, num, pct

if TYPE_CHECKING:  # report draws measure's records and sits below it: measure.bench writes its tables with it
    from edgekit.measure.bench_report import BenchReport

COLUMNS = ("Model", "Format", "Precision", "Runtime", "Device", "Size", "Agreement", "Accuracy", "p50 ms",
           "p90 ms", "Throughput/s", "mJ/inf", "Speed-up")
TEXT_COLUMNS = ("Model", "Format", "Precision", "Runtime", "Device")  # left-aligned; the figures right-aligned
DEVICE_MARKERS = {"cpu": "o", "gpu": "s", "edgetpu": "^", "tpu": "D"}  # chart marker per device
HOST_MARKERS = ("P", "X", "v", "*", "p", "h")  # chart marker per --remote device


def columns(report: BenchReport) -> tuple[str, ...]:
    """The table's columns: a Host column after Device where some rows were measured on a --remote device."""
    if not any(r.host for r in report.rows):
        return COLUMNS
    at = COLUMNS.index("Device") + 1
    return (*COLUMNS[:at], "Host", *COLUMNS[at:])


def table_rows(report: BenchReport) -> list[list[str]]:
    """The table's cells as text, one list per row (shared by the Markdown file and the screen)."""
    hosts = "Host" in columns(report)
    out = []
    for r in report.rows:
        energy = millijoules(r.joules_per_inference)
        if r.joules_per_inference is not None and r.energy_estimated:
            energy += " (est.)"
        if r.status != "ok":
            tail = [f"{r.status}: {r.note}"[:90], "", "", "", ""]
        else:
            tail = [num(r.p50_ms, ".3f"), num(r.p90_ms, ".3f"), num(r.throughput_per_s, ".1f"), energy,
                    num(r.speedup, ".2f") + ("x" if r.speedup else "")]
        where = [r.host or "here"] if hosts else []
        out.append([r.label, r.format, r.precision or "?", r.runtime, r.device, *where, human_bytes(r.size_bytes),
                    agreement(r), pct(r.accuracy), *tail])
    return out


def footnotes(report: BenchReport) -> list[str]:
    """What the table was measured on and with, what the speed-up is against, and why energy is missing."""
    s, h, ref = report.settings, report.host, report.reference
    notes = [f"Host: {h['cpu_model']}, {h['cpu_cores_logical']} logical cores, {h['os']}; edgekit "
             f"{report.edgekit_version}.",
             f"Settings: batch {s.batch}, threads {s.threads or 'default'}, at least {s.runs} runs and "
             f"{s.min_seconds:g} s per row after {s.warmup} warmup runs; latency is single-stream."]
    notes.append(f"Speed-up: p50 of the {ref.kind} ({ref.label}, {ref.p50_ms:.3f} ms) / p50 of the row."
                 if ref else "Speed-up: no reference row could be measured.")
    notes += [_device_note(d) for d in report.hosts]
    notes.append("Agreement (top-1; px: per pixel; step: per step) and accuracy: from the conversion's validation "
                 "(manifest), not re-measured.")
    if any(r.detection_recall is not None or r.map50 is not None for r in report.rows):
        notes.append("Detectors: recall is the share of the source's boxes the artifact keeps (same class, "
                     "IoU >= 0.5), prec the share of its boxes that are the source's, drift the mean change of "
                     "the kept boxes' scores; mAP50 on the labelled boxes, its change in points against the "
                     "source's.")
    if report.energy_note:
        notes.append(report.energy_note)
    return notes


def _device_note(d: dict[str, Any]) -> str:
    """One --remote device: what it is, its edgekit, and what its rows' speed-ups are against."""
    ref = d.get("reference") or {}
    against = (f"its speed-ups against its {ref.get('kind')} ({ref.get('label')}, {ref.get('p50_ms', 0):.3f} ms)"
               if ref.get("label") else "no reference row measured there")
    version = d.get("edgekit_version")
    mismatch = (f" (this machine: {d.get('local_edgekit_version')}: versions differ)"
                if version and version != d.get("local_edgekit_version") else "")
    return (f"Device {d.get('host')}: {d.get('machine')}, {d.get('cores')} cores, {d.get('os')}; edgekit "
            f"{version}{mismatch}; {against}.")


def markdown(report: BenchReport) -> str:
    """bench.md: a heading, the table, the footnotes."""
    cols = columns(report)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in table_rows(report)]
    return "\n".join(["# edgekit bench", "", *lines, "", *[f"- {n}" for n in footnotes(report)]]) + "\n"


def print_report(report: BenchReport, console: Any) -> None:
    """The table, the footnotes and the files written, on CONSOLE (rich)."""
    from rich.table import Table

    t = Table(title="edgekit bench", title_justify="left")
    for c in columns(report):
        t.add_column(c, justify="left" if c in (*TEXT_COLUMNS, "Host") else "right", overflow="fold")
    for row in table_rows(report):
        t.add_row(*row)
    console.print(t)
    for note in footnotes(report):
        console.print(f"[dim]- {note}[/dim]")
    if report.files:
        console.print(f"[dim]written: {', '.join(report.files.values())}[/dim]")


def chart_png(report: BenchReport) -> bytes | None:
    """Latency against size, coloured by format (edgekit.core.formats' colours; matplotlib's Agg canvas, no pyplot
    state); None without matplotlib or without a measured row."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    # (row, size in KiB, p50 in ms) of each measured row
    ok = [(r, r.size_bytes / 1024, r.p50_ms) for r in report.rows if r.status == "ok" and r.p50_ms and r.size_bytes]
    if not ok:
        return None
    import io

    from edgekit.core.formats import FORMATS, FormatSpec

    grey = str(FormatSpec.__dataclass_fields__["colour"].default)
    hosts = [h for h in dict.fromkeys(r.host for r, _, _ in ok) if h]
    fig = Figure(figsize=(7, 4.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for fmt in dict.fromkeys(r.format for r, _, _ in ok):
        pts = [p for p in ok if p[0].format == fmt]
        colour = FORMATS[fmt].colour if fmt in FORMATS else grey
        for dev, host in dict.fromkeys((r.device, r.host) for r, _, _ in pts):
            sel = [(kib, ms) for r, kib, ms in pts if r.device == dev and r.host == host]
            marker = HOST_MARKERS[hosts.index(host) % len(HOST_MARKERS)] if host else DEVICE_MARKERS.get(dev, "o")
            ax.scatter([kib for kib, _ in sel], [ms for _, ms in sel], s=60,
                       c=colour, marker=marker, label=f"{fmt} ({dev}" + (f" on {host})" if host else ")"))
    for r, kib, ms in ok:
        ax.annotate(r.precision or "?", (kib, ms), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xscale("log")
    lat = [ms for _, _, ms in ok]
    if max(lat) / min(lat) > 20:
        ax.set_yscale("log")
    ax.set_xlabel("artifact size (KiB, log scale)")
    ax.set_ylabel("p50 latency (ms)" + (", log scale" if ax.get_yscale() == "log" else ""))
    where = report.host["cpu_model"] if not hosts else f"{len(hosts) + any(not r.host for r, _, _ in ok)} devices"
    ax.set_title(f"edgekit bench: latency vs size on {where}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


__all__ = ["COLUMNS", "chart_png", "columns", "footnotes", "markdown", "print_report", "table_rows"]
