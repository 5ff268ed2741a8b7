"""`edgekit bench MANIFEST_OR_DIR`: every artifact of a conversion run on every runtime/device here."""

from __future__ import annotations

from pathlib import Path

import typer

from edgekit.api.options import BenchOptions
from edgekit.commands.declared import argument, command
from edgekit.core.parse import parse_names

HELP = """Profile every artifact of a conversion run (its manifest.json or output folder) on every runtime
and device available here, plus the source model where it can run, and print one table: format,
precision, size, agreement (top-1; a detector's box recall / precision and mAP50) and accuracy (from the
manifest), p50/p90 latency, throughput, energy per inference and speed-up. Writes bench.json, bench.md
and bench.png (latency against size) into --out (default: <folder>/bench).

--remote user@host (repeat): the same rows measured on each device over SSH as well, one row set per device in
the same table (docs/remote.md); --no-local leaves this machine's rows out."""


def register(app: typer.Typer) -> None:
    target = argument("target", Path, "manifest.json of a conversion run, or its output folder.")

    @command(app.command, BenchOptions, target, name="bench", help=HELP)
    def bench_cmd(o: BenchOptions, target: Path) -> None:
        from edgekit.api.measure import bench
        from edgekit.core.console import out as stdout
        from edgekit.core.console import print_json, quiet_stdout

        hosts = o.remotes()
        with quiet_stdout():
            report = bench(target, runtimes=parse_names(o.runtimes), devices=parse_names(o.devices), out=o.out,
                           runs=o.runs, min_seconds=o.min_seconds, warmup=o.warmup, batch=o.batch, threads=o.threads,
                           include_source=not o.no_source, in_process=o.in_process, remote=hosts,
                           local=not (o.no_local and hosts))
        if o.as_json:
            print_json(report.to_dict())
        else:
            from edgekit.report.bench import print_report

            print_report(report, stdout)
