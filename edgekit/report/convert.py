"""The `edgekit convert` table (rich), built from the manifest alone.

The agreement column is edgekit.report.fidelity's words, the same as `edgekit bench` shows for the artifact.
"""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from edgekit.core.artifact import Manifest
from edgekit.core.formats import FORMATS
from edgekit.report.fidelity import agreement
from edgekit.report.text import human_bytes


def run_line(manifest: Manifest) -> str | None:
    """'run: 21.9 s, peak RSS 1.2 GB (with its child processes 1.4 GB)', from the manifest's run record."""
    r = manifest.run
    if r is None:
        return None
    rss = f", peak RSS {human_bytes(r.peak_rss_bytes)}" if r.peak_rss_bytes else ""
    if r.peak_tree_rss_bytes:  # sampled over the whole process tree (getrusage's children figure is not theirs)
        child = f" (with its child processes {human_bytes(r.peak_tree_rss_bytes)})"
    else:  # a manifest written before the run meter
        child = f" (largest child process {human_bytes(r.peak_rss_children_bytes)})" if r.peak_rss_children_bytes \
            else ""
    return f"run: {r.seconds:.1f} s{rss}{child}"


def convert_table(manifest: Manifest) -> Table:
    """artifact, size, ratio to the fp32 artifact of its format, agreement, accuracy, time, verdict.

Agreement is by the measure the output's kind is judged by: top-1, px, step, or a detector's box recall and
precision (with mAP50 where labelled boxes gave one).

    An artifact with several outputs shows its worst output's figures, and names it; --json has them all.
    """
    fp32 = {a.format: a.size_bytes for a in manifest.artifacts if a.precision == "fp32" and a.ok}
    table = Table(title=f"edgekit convert: {manifest.source.path}", title_justify="left")
    for col, right in (("artifact", False), ("size", True), ("vs fp32", True), ("agreement", True),
                       ("accuracy", True), ("cosine", True), ("time", True), ("fidelity", False)):
        table.add_column(col, justify="right" if right else "left", no_wrap=True)
    for a in manifest.artifacts:
        if a.failure is not None:  # not made: where it failed instead of figures (the message is in the warnings)
            where = a.failure.step or "?"
            table.add_row(a.path, "-", "-", "-", "-", "-", f"{a.seconds:.1f}s",
                          f"[bold red]FAILED[/bold red] at {escape(where)}" + (f" ({escape(a.failure.op)})"
                                                                                if a.failure.op else ""))
            continue
        spec = FORMATS.get(a.format)
        base = fp32.get(a.format) or (fp32.get(spec.compiled_from) if spec and spec.compiled_from else None)
        ratio = f"{a.size_bytes / base:.0%}" if base else "-"
        f = a.fidelity
        if f is None:
            verdict = "[dim]not run here[/dim]"
        elif f.passed:
            verdict = "[green]pass[/green]"
        else:
            verdict = "[bold red]MISS[/bold red]"
        if f is not None and len(f.outputs) > 1 and f.output:  # several outputs: the figures are the worst one's
            verdict += f" ({escape(f.output)}, worst of {len(f.outputs)})"
        if isinstance(a.extra.get("int8_recipe"), dict):  # how int8 was made and what it cost (issue 9)
            from edgekit.quantize.records import RecipeChoice

            verdict += f", recipe {escape(RecipeChoice.from_dict(a.extra['int8_recipe']).cost_words())}"
        verdict += device_verdicts(a.extra.get("validated_on"))
        acc = "-"
        if f is not None and f.accuracy is not None:
            acc = f"{100 * f.accuracy:.2f}%"
            if f.reference_accuracy is not None:
                acc += f" ({100 * (f.accuracy - f.reference_accuracy):+.2f})"
        table.add_row(
            a.path, human_bytes(a.size_bytes), ratio, agreement(f), acc,
            f"{f.cosine:.5f}" if f else "-", f"{a.seconds:.1f}s", verdict,
        )
    return table


def device_verdicts(validated_on: object) -> str:
    """", on raspberry-pi-5: pass" per emulated device (`--validate-on`), from the artifact's record."""
    if not isinstance(validated_on, dict):
        return ""
    out = ""
    for device, rec in validated_on.items():
        if not isinstance(rec, dict):
            continue
        if not rec.get("ran"):
            said = "[bold red]could not run[/bold red]"
        elif rec.get("passed"):
            said = "[green]pass[/green]"
        else:
            said = "[bold red]MISS[/bold red]"
        out += f", {escape(str(device))} {said}"
    return out
