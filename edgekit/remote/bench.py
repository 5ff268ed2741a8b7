"""`edgekit bench OUT --remote HOST`: the rows of a bench measured on a device, one row set per device.

The rows are planned as for this machine (edgekit.measure.bench.plan_jobs, here=False); every file they
need goes to the device in one copy, then each row is one `edgekit profile --json` there, its result read
back and labelled as `edgekit profile --remote` labels it. A row the device cannot run (its runtime or
accelerator missing there, exit 3) is "not available"; one that fails there carries the device's message.
"""

from __future__ import annotations

from collections.abc import Callable

from edgekit.core.errors import EXIT_MISSING
from edgekit.measure.bench import Job, make_row
from edgekit.measure.bench_report import BenchRow, BenchSettings
from edgekit.measure.child import Status
from edgekit.measure.profile import ProfileResult
from edgekit.remote.device import Device
from edgekit.remote.errors import RemoteRunFailed
from edgekit.remote.profile import labelled


def remote_rows(dev: Device, jobs: list[Job], settings: BenchSettings, source: dict[str, float | None],
                log: Callable[[str], None]) -> tuple[list[BenchRow], list[ProfileResult]]:
    """JOBS measured on DEV: the table rows (host set) and the results measured."""
    host = dev.remote.label
    runnable = [j for j in jobs if not j.skip and not j.failed]
    where = dev.upload([j.path for j in runnable]) if runnable else {}
    rows: list[BenchRow] = []
    results: list[ProfileResult] = []
    for i, job in enumerate(jobs, 1):
        log(f"bench {host} {i}/{len(jobs)}: {job.label} on {job.runtime}/{job.device}")
        status: Status
        result: ProfileResult | None = None
        message: str | None = None
        if job.failed:
            status, message = "failed", job.failed
        elif job.skip:
            status, message = "not available", job.skip
        else:
            try:
                data = dev.profile(where[job.path], job.flags(settings), timeout=settings.timeout)
                result = labelled(data, dev.facts, job.path, where[job.path])
                status = "ok"
            except RemoteRunFailed as exc:
                status = "not available" if exc.exit_code == EXIT_MISSING else "failed"
                message = exc.message.split(": ", 1)[-1] if exc.message.startswith("edgekit profile failed") \
                    else exc.message
        row = make_row(job, status, result, message, source)
        row.host = host
        rows.append(row)
        if result is not None:
            results.append(result)
    return rows, results


__all__ = ["remote_rows"]
