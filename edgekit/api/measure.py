"""`edgekit.profile`, `edgekit.bench` and `edgekit.load`: measuring and running artifacts from Python.

`profile` and `bench` return the record their command prints or writes (ProfileResult, BenchReport), and
`edgekit profile` / `edgekit bench` call these same functions, so a command and its function are one
behaviour. (`edgekit.inspect` and `edgekit.check` are the functions of those packages.) Where a command
takes a file, its function takes the path, or the object the API handed out for it (a `ConvertedArtifact`
for an artifact file, a `Conversion` for a run: edgekit.core.handles).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgekit.api.options import BENCH as B
from edgekit.api.options import PROFILE as P
from edgekit.api.progress import reporter
from edgekit.core.handles import artifact_file, run_manifest

if TYPE_CHECKING:
    from edgekit.api.runnable import Layout, LoadedModel
    from edgekit.measure.bench_report import BenchReport
    from edgekit.measure.profile import ProfileResult
    from edgekit.remote.host import Remote


def _remotes(remote: Any) -> list[Remote]:
    """REMOTE (a host spec 'user@host[:port]', a Remote, or a list of them) as Remotes; SSH as the user has it set
    up for a spec (its ~/.ssh/config, BatchMode), a Remote's own settings otherwise."""
    from edgekit.remote.host import Remote
    from edgekit.remote.options import remotes

    items = [remote] if isinstance(remote, str | Remote) else list(remote or [])
    return [r if isinstance(r, Remote) else remotes([str(r)])[0] for r in items]


def _remote_flags(settings: Any, device: str, runtime: str | None, sensors: list[str] | None,
                  options: dict[str, Any], macs: int | None, estimate_power: bool) -> list[str]:
    """The `edgekit profile` flags that ask the device for what this call asks here."""
    from edgekit.measure.remote import profile_flags

    opts = dict(options)
    shape, factory, trust = opts.pop("input_shape", None), opts.pop("factory", None), opts.pop("trust_model", False)
    words = {True: "true", False: "false"}
    return profile_flags(settings, runtime=runtime, device=device, sensors=sensors,
                         options=[f"{k}={words.get(v, v) if isinstance(v, bool) else v}" for k, v in opts.items()],
                         macs=macs, estimate_power=estimate_power,
                         input_shape=",".join(map(str, shape)) if shape else None, model=factory,
                         trust_model=bool(trust))


def _names(value: str | list[str] | None) -> list[str] | None:
    from edgekit.core.parse import parse_names

    return parse_names(value) if isinstance(value, str) else list(value) if value else None


# The keywords that are `edgekit profile`'s and `edgekit bench`'s options default to their declarations (P, B).
def profile(artifact: str | Path | Any, device: str = P.device, *, runtime: str | None = P.runtime, runs: int = P.runs,
            min_seconds: float = P.min_seconds, warmup: int = P.warmup, batch: int = P.batch,
            threads: int | None = P.threads, input: str | None = P.input, raw_io: bool = P.raw_io,  # noqa: A002
            idle_baseline: bool = P.idle_baseline, idle_seconds: float = P.idle_seconds,
            sensors: str | list[str] | None = P.sensors, estimate_power: bool = P.estimate_power,
            macs: int | None = P.macs, options: dict[str, Any] | None = P.options, output: str | Path | None = P.output,
            quiet: bool = False, remote: str | Remote | None = None) -> ProfileResult:
    """Measure one artifact on DEVICE: `edgekit profile` (latency percentiles, throughput, memory, compute, power).

    DEVICE: auto, cpu, gpu, edgetpu, tpu, a device name or a .toml file. Timed single-stream runs go on until
    both RUNS and MIN_SECONDS are reached, after WARMUP untimed runs; INPUT names real inputs ('mnist', an
    image folder, a .npy/.npz; default random data), OPTIONS the runtime's load options (`--option`), SENSORS
    the power sensors to try. OUTPUT also writes the JSON there. REMOTE ('user@host[:port]' or a Remote) measures
    on that device over SSH instead, in its own edgekit installation (docs/remote.md). Returns the ProfileResult
    (docs/profile.md).
    """
    from edgekit.measure.profile import profile_artifact
    from edgekit.measure.settings import MeasureSettings

    settings = MeasureSettings(runs=runs, min_seconds=min_seconds, warmup=warmup, threads=threads, batch=batch,
                               input=input, raw_io=raw_io, idle_baseline=idle_baseline, idle_seconds=idle_seconds)
    hosts = _remotes(remote)
    if len(hosts) > 1:
        from edgekit.core.errors import UsageError

        raise UsageError("profile measures on one device; several remote hosts were given.",
                         hint="Compare devices with `edgekit bench OUT --remote HOST1 --remote HOST2`.")
    with reporter(quiet, "profile") as say:
        if hosts:
            from edgekit.measure.remote import profile_remote

            settings.check()
            flags = _remote_flags(settings, device, runtime, _names(sensors), dict(options or {}), macs,
                                  estimate_power)
            result = profile_remote(artifact_file(artifact), hosts[0], flags, log=say)
        else:
            path = artifact_file(artifact)
            # --device auto: the runtime and device `edgekit bench` measured fastest for this very file here
            from_bench = fastest_measured(path) if runtime is None and device.strip().lower() == "auto" else None
            if from_bench is not None:
                runtime, device, why = from_bench
                say(why)
            result = profile_artifact(path, runtime=runtime, device=device, settings=settings,
                                      sensors=_names(sensors), options=dict(options or {}), macs=macs,
                                      estimate_power=estimate_power, log=say)
            if from_bench is not None:
                result.notes.append(from_bench[2])
    if output is not None:
        from edgekit.core.fsutil import atomic_write_json

        atomic_write_json(output, result.to_dict())
    return result


def fastest_measured(path: Path) -> tuple[str, str, str] | None:
    """(runtime, device, why) from the bench report beside PATH (edgekit.measure.fastest), for --device auto."""
    from edgekit.core.fsutil import sha256_path
    from edgekit.measure.fastest import beside, fastest_for

    if beside(path) is None:  # no report: no need to hash the file
        return None
    return fastest_for(path, sha256_path(path))  # the digest the manifest and bench record (companions included)


def bench(target: str | Path | Any, *, runtimes: str | list[str] | None = B.runtimes,
          devices: str | list[str] | None = B.devices, out: str | Path | None = B.out, runs: int = B.runs,
          min_seconds: float = B.min_seconds, warmup: int = B.warmup, batch: int = B.batch,
          threads: int | None = B.threads, include_source: bool = not B.no_source, in_process: bool = B.in_process,
          quiet: bool = False, remote: str | Remote | Sequence[str | Remote] | None = None,
          local: bool = not B.no_local) -> BenchReport:
    """Profile every artifact of a conversion run on every runtime and device here: `edgekit bench`.

    TARGET: the run's folder, its manifest.json, or the Conversion. RUNTIMES / DEVICES keep only those (a
    comma list or a list); INCLUDE_SOURCE adds the source model's row where it can run; IN_PROCESS measures
    every row in this process instead of one child process per row. Writes bench.json, bench.md and bench.png
    into OUT (default: <folder>/bench). REMOTE: devices to measure on over SSH as well ('user@host[:port]' or
    Remotes), one row set each; LOCAL=False measures on them only. Returns the BenchReport (`to_pandas()` makes a
    DataFrame of its rows).
    """
    from edgekit.measure.bench import BenchSettings
    from edgekit.measure.bench import bench as run_bench

    settings = BenchSettings(runs=runs, min_seconds=min_seconds, warmup=warmup, threads=threads, batch=batch,
                             runtimes=_names(runtimes), devices=_names(devices), isolate=not in_process,
                             include_source=include_source)
    hosts = _remotes(remote)
    with reporter(quiet, "bench") as say:
        return run_bench(run_manifest(target), settings, out_dir=out, log=say, remotes=hosts,
                         local=local or not hosts)


def load(path: str | Path | Any, device: str = "cpu", *, runtime: str | None = None, threads: int | None = None,
         layout: Layout = "source", **options: Any) -> LoadedModel:
    """Load an artifact file on DEVICE: a callable on numpy arrays, `model(x)` -> {output name: array}.

    Where the file's folder holds its conversion's manifest.json, inputs and outputs go by the source
    model's names and 4-D inputs in the source's layout (LAYOUT="artifact": the file's own), as
    `ConvertedArtifact.load` does; without one, by the file's own names and layout.
    """
    from edgekit.api.runnable import LoadedModel
    from edgekit.core.artifact import Manifest
    from edgekit.core.errors import UsageError

    if hasattr(path, "load") and hasattr(path, "record"):
        return path.load(device, runtime=runtime, threads=threads, layout=layout, **options)
    p = Path(path)
    record = manifest = None
    if (p.parent / "manifest.json").is_file():
        try:
            manifest = Manifest.read(p.parent / "manifest.json")
        except UsageError:  # not a manifest edgekit can read: the file's own names, as without one
            manifest = None
        record = next((a for a in manifest.artifacts if a.path == p.name), None) if manifest else None
    return LoadedModel(p, device=device, runtime=runtime, threads=threads, artifact=record,
                       source=manifest.source if record is not None and manifest else None, layout=layout,
                       options=options)


__all__ = ["bench", "load", "profile"]
