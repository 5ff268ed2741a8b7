"""The `edgekit profile` table (rich), built from a ProfileResult alone."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from edgekit.report.text import human_bytes, millijoules, si

if TYPE_CHECKING:  # report draws measure's records and sits below it
    from edgekit.measure.profile import ProfileResult


def profile_table(result: ProfileResult) -> Table:
    """One line per aspect: runtime, device, settings, load, first inference, latency, memory, compute, power."""
    a, lat, mem, comp, pw = result.artifact, result.latency_ms, result.memory, result.compute, result.power
    rt, dev, st = result.runtime, result.device, result.settings
    t = Table(title=f"{Path(a.path).name}  ({a.format} {a.precision or '?'}, {human_bytes(a.size_bytes)})",
              show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    t.add_column("value")
    t.add_row("runtime", f"{rt.name} {rt.version or ''}  {_details(rt.details)}")
    t.add_row("device", f"{dev.name}" + (f" ({dev.accelerator})" if dev.accelerator else "")
              + f"  {dev.host.get('cpu_model')}, {dev.host.get('cpu_cores_logical')} logical cores"
              + (f", profile {dev.profile}" if dev.profile else "") + _remote(dev.host.get("remote")))
    t.add_row("settings", f"batch {st.batch}, threads {st.threads or 'default'}, warmup {st.warmup}, "
              f"min {st.runs} runs / {st.min_seconds:g} s, input {st.input}")
    t.add_row("load", f"{result.load_ms:.1f} ms")
    t.add_row("first inference", f"{result.first_inference_ms:.2f} ms")
    t.add_row("latency (ms)", f"p50 {lat.p50:.3f}  p90 {lat.p90:.3f}  p99 {lat.p99:.3f}  "
              f"mean {lat.mean:.3f} ± {lat.std:.3f}  min {lat.min:.3f}  max {lat.max:.3f}  "
              f"({result.runs} runs, {result.timed_seconds:.2f} s)")
    t.add_row("throughput", f"{result.throughput_per_s:.1f} /s")
    t.add_row("memory", f"peak RSS {human_bytes(mem.peak_rss_bytes)}, "
              f"load +{human_bytes(mem.load_rss_delta_bytes)}"
              + (f", arena {human_bytes(mem.arena_bytes)}" if mem.arena_bytes else ""))
    if comp.macs:
        extra = (f", {comp.fraction_of_peak:.1%} of this CPU's measured fp32 peak "
                 f"({comp.cpu_peak_gmacs_per_s:.1f} GMAC/s)" if comp.fraction_of_peak is not None else "")
        t.add_row("compute", f"{si(comp.macs)} MACs/call, {comp.gmacs_per_s:.3g} GMAC/s{extra}")
    else:
        t.add_row("compute", comp.macs_source or "not counted")
    if pw.measured:
        idle = f", idle {pw.idle_watts:.2f} W subtracted" if pw.idle_watts is not None else ""
        t.add_row("power", f"{pw.avg_watts:.2f} W avg{idle}, {millijoules(pw.joules_per_inference)} mJ/inference "
                  f"[{pw.sensor}: {pw.scope}]")
    elif pw.estimated:
        t.add_row("power", f"ESTIMATE {pw.avg_watts:.2f} W, {millijoules(pw.joules_per_inference)} mJ/inference "
                  f"({pw.scope})")
    else:
        t.add_row("power", pw.reason or "not measured")
    for note in result.notes:
        t.add_row("note", note)
    return t


def _remote(facts: Any) -> str:
    """Where a remote measurement ran (`edgekit profile --remote`): the host and its edgekit."""
    if not isinstance(facts, dict):
        return ""
    f = facts
    return f"; measured on {f.get('host')} ({f.get('machine')}, {f.get('os')}, edgekit {f.get('edgekit_version')})"


def _details(d: dict[str, Any]) -> str:
    """The runtime details that say how it ran (providers, delegates, API ...), as key=value words."""
    keep = []
    for k in ("providers", "delegates", "api", "signature", "mode", "kind"):
        if d.get(k):
            v = d[k]
            keep.append(f"{k}={','.join(v) if isinstance(v, list) else v}")
    return " ".join(keep)


__all__ = ["profile_table"]
