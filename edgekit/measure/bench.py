"""`edgekit bench`: every artifact of a conversion run, on every runtime/device here, in one table.

Rows: each artifact of the manifest on each runtime that loads its format and each device that
runtime has here (or the ones named), plus the source model itself where it can run (PyTorch
sources with the torch runtime, SavedModels with tf). Fidelity (top-1 agreement, accuracy) comes
from the manifest: bench measures speed, it does not re-validate. The speed-up column is against
the source model when it was measured, else against the fp32 artifact; the report says which.

Each row runs in its own process by default (edgekit.measure.child), so peak memory is the row's
own and a runtime that crashes on a file takes only its row down. This module plans the rows and
runs them; the table, Markdown and chart are edgekit.report.bench's, the records edgekit.measure.bench_report's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgekit.core.artifact import Artifact, Manifest, SourceInfo
from edgekit.core.errors import EdgekitError, NotAvailable, UsageError
from edgekit.measure.bench_report import BenchReport, BenchRow, BenchSettings, Reference
from edgekit.measure.child import Status
from edgekit.measure.profile import ProfileResult

if TYPE_CHECKING:
    from edgekit.remote.device import Device
    from edgekit.remote.host import Remote


@dataclass
class Job:
    """One row to measure: an artifact (or the source) on one runtime and device."""

    label: str
    path: Path
    fmt: str
    precision: str | None
    runtime: str
    device: str
    artifact: Artifact | None = None  # None for the source model
    options: dict[str, Any] = field(default_factory=dict)  # runtime load options (profile_artifact's)
    macs: int | None = None
    skip: str | None = None  # why it is not measured (not available here, file missing)
    failed: str | None = None  # the conversion did not make the artifact: what the manifest says failed

    def cli_args(self, settings: BenchSettings) -> list[str]:
        """The `edgekit profile` command line that measures this row with SETTINGS."""
        return ["profile", str(self.path), "--json", *self.flags(settings)]

    def flags(self, settings: BenchSettings) -> list[str]:
        """The `edgekit profile` flags after the path and --json (the same here and on a --remote device)."""
        from edgekit.measure.remote import profile_flags

        shape = self.options.get("input_shape")
        factory = self.options.get("factory")
        return profile_flags(settings, runtime=self.runtime, device=self.device, macs=self.macs or None,
                             input_shape=",".join(str(d) for d in shape) if shape else None,
                             model=str(factory) if factory else None, trust_model=bool(self.options.get("trust_model")))


def _resolve_source(manifest: Manifest, manifest_path: Path) -> Path | None:
    raw = manifest.source.path
    if not raw:
        return None
    p = Path(raw)
    for cand in (p, manifest_path.parent / p, Path.cwd() / p):
        if cand.exists():
            return cand
    return None


def load_target(target: str | Path) -> tuple[Manifest, Path]:
    """The manifest of TARGET (a manifest.json or its folder), or one made up for a folder of model files."""
    p = Path(target)
    if p.is_file() or (p / "manifest.json").is_file():
        mp = p if p.is_file() else p / "manifest.json"
        return Manifest.read(mp), mp
    if not p.is_dir():
        raise UsageError(f"No such manifest or folder: {p}.", hint="Pass the output folder of `edgekit convert`.")
    from edgekit.core.formats import FORMATS
    from edgekit.measure.artifact import guess_precision
    from edgekit.runtimes import detect_format

    arts = []
    for f in sorted(p.iterdir()):
        try:
            fmt = detect_format(f)
        except EdgekitError:
            continue
        spec = FORMATS.get(fmt)
        if spec is None or (spec.source and f.is_file()):
            continue  # a source model file (.pt2) is the user's model, not an artifact; a SavedModel folder may be
        arts.append(Artifact(path=f.name, format=fmt, precision=guess_precision(f, None)[0] or "?",
                             inputs=[], outputs=[], size_bytes=0, sha256=""))
    if not arts:
        raise UsageError(f"{p} holds no manifest.json and no .onnx/.tflite/SavedModel to bench.",
                         hint="Run `edgekit convert ... --out DIR` first and pass DIR.")
    return Manifest(source=SourceInfo(), artifacts=arts), p / "manifest.json"


def plan_jobs(manifest: Manifest, manifest_path: Path, settings: BenchSettings, here: bool = True) -> list[Job]:
    """The rows to measure, in table order; rows that cannot run here carry their reason.

    HERE False plans for a --remote device: what runs there is its edgekit's to say (a row it cannot run comes
    back "not available"), so rows are not checked against this machine and default to its CPU.
    """
    from edgekit.core import formats, precisions
    from edgekit.measure.artifact import artifact_macs
    from edgekit.runtimes import get_runtime, normalize_device, runtimes_for_format

    jobs: list[Job] = []
    wanted_rt = settings.runtimes
    wanted_dev = [normalize_device(d) for d in settings.devices] if settings.devices else None
    arts = sorted(manifest.artifacts, key=lambda a: (formats.order(a.format), precisions.order(a.precision)))
    macs_per_sample: int | None = None
    for art in arts:
        path = manifest.resolve(art, manifest_path) if art.path else manifest_path.parent / "(not written)"
        names = [n for n in runtimes_for_format(art.format) if wanted_rt is None or n in wanted_rt]
        if art.precision == "fp32" and formats.inspectable(art.format) and macs_per_sample is None and path.exists():
            macs_per_sample = artifact_macs(path)[0]  # the source row's count: what its fp32 artifacts do
        spec = formats.FORMATS.get(art.format)
        if art.failure is not None:  # one row saying so, not one per runtime: there is nothing to measure
            f = art.failure
            jobs.append(Job(label=art.label, path=path, fmt=art.format, precision=art.precision,
                            runtime=names[0] if names else "-", device="-", artifact=art,
                            failed=f"conversion failed at {f.step or 'a step'}: {f.message}"))
            continue
        for name in names:
            cls = get_runtime(name)
            if wanted_dev is not None:
                devices = [d for d in wanted_dev if d in cls.devices]
            elif spec is not None and spec.devices:  # a format made for fixed devices (Edge TPU models)
                devices = list(spec.devices)
            elif not here:
                devices = ["cpu"]
            else:
                devices = ["cpu"] + [d for d in cls.auto_devices if cls.available(d)[0]]
            for dev in devices:
                job = Job(label=art.label, path=path, fmt=art.format, precision=art.precision, runtime=name,
                          device=dev, artifact=art)
                if not path.exists():
                    job.skip = f"file not written ({_how_to_finish(art) or path.name})"
                elif here:
                    ok, why = cls.available(dev)
                    job.skip = None if ok else f"not available here: {why}"
                jobs.append(job)
    if settings.include_source:
        src = _source_job(manifest, manifest_path, macs_per_sample, wanted_dev, here)
        if src is not None:
            jobs.insert(0, src)
    return jobs


def _how_to_finish(art: Artifact) -> str | None:
    """What the step that did not write ART says to do (the Edge TPU step: run the compiler elsewhere)."""
    for report in art.extra.values():
        if isinstance(report, dict) and report.get("how_to_finish"):
            return str(report["how_to_finish"])
    return None


def _source_format(kind: str) -> str | None:
    """The source-model format (edgekit.core.formats) of a manifest's source kind: torch-exported -> torch."""
    from edgekit.core.formats import FORMATS

    for spec in FORMATS.values():
        if spec.source and kind.startswith(spec.name):
            return spec.name
    return None


def _source_job(manifest: Manifest, manifest_path: Path, macs: int | None, wanted_dev: list[str] | None,
                here: bool = True) -> Job | None:
    """The source model as a row, where a runtime here can run it (torch for PyTorch, tf for SavedModel)."""
    from edgekit.core.formats import FORMATS
    from edgekit.runtimes import get_runtime

    kind = manifest.source.kind
    fmt = _source_format(kind)
    runtime = FORMATS[fmt].runtime if fmt is not None else None
    if fmt is None or runtime is None or fmt not in get_runtime(runtime).formats:
        return None  # no runtime runs this kind of source (Keras files, ONNX: its artifact is the source)
    path = _resolve_source(manifest, manifest_path)
    dev = wanted_dev[0] if wanted_dev and wanted_dev[0] in get_runtime(runtime).devices else "cpu"
    job = Job(label=f"source ({kind})", path=path or Path(manifest.source.path), fmt=fmt,
              precision="fp32", runtime=runtime, device=dev, macs=macs)
    if path is None:
        job.skip = f"source file not found ({manifest.source.path})"
        return job
    ok, why = get_runtime(runtime).available(dev) if here else (True, "")
    if not ok:
        job.skip = f"not available here: {why}"
        return job
    shape = manifest.source.input.shape if manifest.source.input else None
    if not shape:  # an artifact whose format keeps the source's layout (an ONNX: NCHW) has its input's shape
        from edgekit.core.formats import FORMATS

        same = [a.inputs[0] for a in manifest.artifacts
                if a.format in FORMATS and FORMATS[a.format].source_layout and a.inputs]
        shape = same[0].shape if same else None
    if shape and kind != "torch-exported":
        job.options["input_shape"] = [1 if int(d) <= 0 else int(d) for d in shape]
    if manifest.options.get("factory"):  # what `edgekit convert --model` wrote (pipeline's ConvertOptions)
        job.options["factory"] = manifest.options["factory"]
    if manifest.options.get("trust_model"):
        job.options["trust_model"] = True
    if manifest.source.sha256:
        from edgekit.core.fsutil import sha256_path

        if sha256_path(path) != manifest.source.sha256:
            job.skip = "the source file changed since the conversion (sha256 differs): not the model converted"
    elif not here:  # the source may sit anywhere: only the file the conversion read, known by its digest, travels
        job.skip = "the manifest records no sha256 of the source: it is not copied to a device"
    return job


def run_job(job: Job, s: BenchSettings, on: Device | None = None,
            where: dict[Path, str] | None = None) -> tuple[Status, ProfileResult | None, str | None]:
    """(status, ProfileResult, message): status is ok, not available, or failed. ON: a --remote device, WHERE
    the artifacts' paths there (Device.upload)."""
    if job.failed:
        return "failed", None, job.failed
    if job.skip:
        return "not available", None, job.skip
    if on is not None:
        return _run_remote(job, s, on, (where or {})[job.path])
    if s.isolate:
        from edgekit.measure.child import profile_in_child

        return profile_in_child(job.cli_args(s), s.timeout)
    from edgekit.measure.profile import profile_artifact

    try:
        r = profile_artifact(job.path, runtime=job.runtime, device=job.device, macs=job.macs, options=job.options,
                             settings=s)
    except NotAvailable as exc:
        return "not available", None, exc.message
    except EdgekitError as exc:
        return "failed", None, exc.message
    return "ok", r, None


def _run_remote(job: Job, s: BenchSettings, dev: Device, where: str) -> tuple[Status, ProfileResult | None, str | None]:
    """One row on a --remote device: its own `edgekit profile --json`, labelled; exit 3 there: not available there."""
    from edgekit.core.errors import EXIT_MISSING
    from edgekit.measure.remote import labelled
    from edgekit.remote.errors import RemoteRunFailed

    try:
        data = dev.profile(where, job.flags(s), timeout=s.timeout)
    except RemoteRunFailed as exc:  # "edgekit profile failed on HOST: its message": the row's host says where
        return ("not available" if exc.exit_code == EXIT_MISSING else "failed"), None, exc.message.split(": ", 1)[-1]
    return "ok", labelled(data, dev.facts, job.path, where), None


def make_row(job: Job, status: Status, result: ProfileResult | None, message: str | None,
             source: dict[str, float | None]) -> BenchRow:
    """One table row: JOB's figures from the manifest (SOURCE's for the source model's row) and its speed."""
    from edgekit.report.fidelity import FIGURES

    fid = job.artifact.fidelity if job.artifact is not None else None
    size = result.artifact.size_bytes if result else (job.artifact.size_bytes if job.artifact else None)
    if fid is not None:
        figures: dict[str, Any] = {**{k: getattr(fid, k) for k in FIGURES}, "accuracy": fid.accuracy}
    else:  # the source model's row: its own accuracy and mAP; an artifact validated nowhere: none
        figures = dict(source) if job.artifact is None else {}
    row = BenchRow(label=job.label, format=job.fmt, precision=job.precision, runtime=job.runtime, device=job.device,
                   path=str(job.path), size_bytes=size, status=status, note=message, **figures)
    if result:
        if result.notes:
            row.note = "; ".join(result.notes)
        row.p50_ms, row.p90_ms = result.latency_ms.p50, result.latency_ms.p90
        row.sha256 = result.artifact.sha256
        row.throughput_per_s = result.throughput_per_s
        row.joules_per_inference = result.power.joules_per_inference
        row.energy_estimated = bool(result.power.estimated)
    return row


def bench(target: str | Path, settings: BenchSettings | None = None, out_dir: str | Path | None = None,
          log: Callable[[str], None] | None = None, remotes: list[Remote] | None = None,
          local: bool = True) -> BenchReport:
    """Measure every row, write bench.json / bench.md / bench.png into OUT_DIR, return the report.

    REMOTES: devices reached over SSH (edgekit.remote), each measuring the same artifacts as one more row set;
    every device is reached and checked before anything is measured. LOCAL False: only their rows.
    """
    from contextlib import ExitStack

    from edgekit._version import __version__
    from edgekit.measure.devices import host_info
    from edgekit.remote.device import Device

    s = settings or BenchSettings()
    log = log or (lambda _m: None)
    manifest, mpath = load_target(target)
    source = _source_figures(manifest)
    rows: list[BenchRow] = []
    results: list[ProfileResult] = []
    with ExitStack() as stack:
        devices = [stack.enter_context(Device(r, log)) for r in remotes or []]
        for dev in ([None] if local or not devices else []) + devices:
            jobs = plan_jobs(manifest, mpath, s, here=dev is None)
            where = dev.upload([j.path for j in jobs if not j.skip and not j.failed]) if dev else None
            host = dev.remote.label if dev else None
            for i, job in enumerate(jobs, 1):
                log(f"bench {i}/{len(jobs)}: {job.label} on {job.runtime}/{job.device}" + (f" on {host}" * bool(host)))
                status, result, message = run_job(job, s, dev, where)
                rows.append(make_row(job, status, result, message, source))
                rows[-1].host = host
                if result:
                    results.append(result)
    references = {host: _reference([r for r in rows if r.host == host]) for host in dict.fromkeys(r.host for r in rows)}
    for row in rows:
        ref = references.get(row.host)
        if ref and row.p50_ms:
            row.speedup = ref.p50_ms / row.p50_ms
    energy = [r for r in results if r.power.measured]
    hosts = [{**dev.facts.to_dict(), "reference": (references.get(dev.remote.label) or Reference()).to_dict()}
             for dev in devices if dev.facts is not None]
    report = BenchReport(edgekit_version=__version__, manifest=str(mpath), source=manifest.source, host=host_info(),
                         settings=s, reference=next(iter(references.values()), None), rows=rows, results=results,
                         energy_note=None if energy else _energy_note(results), hosts=hosts)
    out = Path(out_dir) if out_dir else mpath.parent / "bench"
    report.files = write_outputs(report, out)
    return report


def _source_figures(manifest: Manifest) -> dict[str, float | None]:
    """The source model's own accuracy and mAP, as its artifacts' validation measured them: its row's figures."""
    fids = [a.fidelity for a in manifest.artifacts if a.fidelity]

    def first(name: str) -> float | None:
        return next((getattr(f, name) for f in fids if getattr(f, name) is not None), None)

    return {"accuracy": fids[0].reference_accuracy if fids else None, "map50": first("reference_map50"),
            "map50_95": first("reference_map50_95")}


def _reference(rows: list[BenchRow]) -> Reference | None:
    """The row speed-ups are against: the measured source model, else the fp32 artifact on the CPU."""
    from edgekit.core.formats import FORMATS, order

    ok = [(r, r.p50_ms) for r in rows if r.status == "ok" and r.p50_ms]  # each measured row with its p50
    src = [(r, ms) for r, ms in ok
           if r.format in FORMATS and FORMATS[r.format].source and r.label.startswith("source")]
    if src:
        r, ms = src[0]
        return Reference(kind="source model", label=f"{r.label} on {r.runtime}/{r.device}", p50_ms=ms)
    fp32 = sorted(((r, ms) for r, ms in ok if r.precision == "fp32" and r.device == "cpu"),
                  key=lambda row: order(row[0].format))  # the table's first format (ONNX) where several
    if fp32:
        r, ms = fp32[0]
        return Reference(kind="fp32 artifact (the source model could not be measured here)",
                         label=f"{r.label} on {r.runtime}/{r.device}", p50_ms=ms)
    return None


def _energy_note(results: list[ProfileResult]) -> str:
    reasons = {str(r.power.reason).removeprefix("not measured: ").rstrip(".") for r in results if r.power.reason}
    return "Energy not measured: " + ("; ".join(sorted(reasons)) if reasons else "no row was measured") + "."


def write_outputs(report: BenchReport, out: Path) -> dict[str, str]:
    """bench.md, bench.png (where matplotlib is here) and bench.json in OUT, each written atomically."""
    from edgekit.core.fsutil import atomic_write_bytes, atomic_write_json, atomic_write_text
    from edgekit.report.bench import chart_png, markdown

    files = {"json": str(out / "bench.json"), "markdown": str(out / "bench.md"), "chart": str(out / "bench.png")}
    atomic_write_text(files["markdown"], markdown(report))
    png = chart_png(report)
    if png is None:
        files.pop("chart")
    else:
        atomic_write_bytes(files["chart"], png)
    atomic_write_json(files["json"], {**report.to_dict(), "files": files})
    return files


__all__ = ["BenchReport", "BenchRow", "BenchSettings", "Job", "bench", "load_target", "plan_jobs", "run_job"]
