"""`edgekit bench MANIFEST_OR_DIR`: every artifact of a conversion run on every runtime/device here."""

from __future__ import annotations

from pathlib import Path

import typer

from edgekit.core.parse import parse_names
from edgekit.remote import options as ro

HELP = """Profile every artifact of a conversion run (its manifest.json or output folder) on every runtime
and device available here, plus the source model where it can run, and print one table: format,
precision, size, agreement (top-1; a detector's box recall / precision and mAP50) and accuracy (from the
manifest), p50/p90 latency, throughput, energy per inference and speed-up. Writes bench.json, bench.md
and bench.png (latency against size) into --out (default: <folder>/bench).

--remote user@host (repeat): the same rows measured on each device over SSH as well, one row set per device in
the same table (docs/remote.md); --no-local leaves this machine's rows out."""


def register(app: typer.Typer) -> None:
    @app.command("bench", help=HELP)
    def bench_cmd(
        target: Path = typer.Argument(..., help="manifest.json of a conversion run, or its output folder."),
        runtime: str | None = typer.Option(None, "--runtime", "-r", help="Only these runtimes (comma list)."),
        device: str | None = typer.Option(None, "--device", "-d", help="Only these devices (comma list: cpu, gpu, "
                                          "edgetpu, tpu); default: the CPU and each accelerator available here."),
        out: Path | None = typer.Option(None, "--out", "-o", help="Folder for bench.json/.md/.png."),
        runs: int = typer.Option(50, help="Minimum timed runs per row."),
        min_seconds: float = typer.Option(0.5, help="Minimum timed seconds per row."),
        warmup: int = typer.Option(5, help="Untimed runs per row."),
        batch: int = typer.Option(1, help="Batch size."),
        threads: int | None = typer.Option(None, help="Runtime threads."),
        no_source: bool = typer.Option(False, "--no-source", help="Do not measure the source model."),
        in_process: bool = typer.Option(False, "--in-process", help="Measure every row in this process (faster "
                                        "start; peak memory figures then accumulate across rows)."),
        as_json: bool = typer.Option(False, "--json", help="Print the bench report JSON alone on stdout."),
        remote: list[str] | None = ro.REMOTE,
        no_local: bool = typer.Option(False, "--no-local", help="With --remote: measure on the devices only."),
        remote_python: str | None = ro.REMOTE_PYTHON,
        remote_edgekit: str | None = ro.REMOTE_EDGEKIT,
        remote_cache: str = ro.REMOTE_CACHE,
        ssh_config: Path | None = ro.SSH_CONFIG,
        identity: Path | None = ro.IDENTITY,
        ssh_option: list[str] | None = ro.SSH_OPTION,
        connect_timeout: int = ro.CONNECT_TIMEOUT,
    ) -> None:
        from edgekit.api.measure import bench
        from edgekit.core.console import out as stdout
        from edgekit.core.console import print_json, quiet_stdout

        hosts = ro.remotes(remote, remote_python, remote_edgekit, remote_cache, ssh_config, identity, ssh_option,
                           connect_timeout)
        with quiet_stdout():
            report = bench(target, runtimes=parse_names(runtime), devices=parse_names(device), out=out, runs=runs,
                           min_seconds=min_seconds, warmup=warmup, batch=batch, threads=threads,
                           include_source=not no_source, in_process=in_process, remote=hosts,
                           local=not (no_local and hosts))
        if as_json:
            print_json(report.to_dict())
        else:
            from edgekit.report.bench import print_report

            print_report(report, stdout)
