"""The measuring loop: one artifact, one runtime, one device -> a ProfileResult (schema in docs/profile.md).

Method (as MLPerf single-stream and the runtimes' own benchmark tools do it): load time and the
first inference are reported apart from steady state; untimed warmup runs follow; then timed
single-stream runs continue until BOTH a minimum count (`runs`) and a minimum duration
(`min_seconds`) are reached. Each run is timed on its own with perf_counter_ns around exactly one
runtime call whose inputs were prepared beforehand, so the loop adds almost nothing to what it
measures (bench/overhead.py checks this against a bare loop). Power is read over the timed window
only; where no sensor can be read the result says "not measured", never 0.

The pieces (settings, loop, statistics, memory, CPU peak, artifact facts) live in edgekit.measure;
this module composes them and owns the ProfileResult record.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgekit._version import __version__
from edgekit.core.border import vendor_errors
from edgekit.core.errors import NotAvailable, RuntimeFailure, UsageError
from edgekit.core.filedoc import gate_version
from edgekit.core.records import Record
from edgekit.measure.artifact import artifact_macs
from edgekit.measure.devices import KIND_WORDS
from edgekit.measure.records import (
    ArtifactInfo,
    ComputeFigures,
    DeviceInfo,
    InputInfo,
    MemoryUsage,
    RuntimeInfo,
)
from edgekit.measure.settings import MeasureSettings, SettingsUsed
from edgekit.measure.stats import LatencyStats
from edgekit.sensors.window import PowerReport

if TYPE_CHECKING:
    from edgekit.runtimes.base import Runtime

SCHEMA_VERSION = 1


@dataclass
class ProfileResult(Record):
    """What was measured, how, and on what. `to_dict()` is the JSON documented in docs/profile.md."""

    artifact: ArtifactInfo
    device: DeviceInfo
    runtime: RuntimeInfo
    settings: SettingsUsed
    load_ms: float
    first_inference_ms: float
    latency_ms: LatencyStats
    throughput_per_s: float
    memory: MemoryUsage
    compute: ComputeFigures
    power: PowerReport
    runs: int = 0
    timed_seconds: float = 0.0
    inputs: list[InputInfo] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    edgekit_version: str = __version__
    created: str = ""

    def to_dict(self) -> dict[str, Any]:
        first = ["schema_version", "edgekit_version", "created", "artifact", "device", "runtime", "settings"]
        d = super().to_dict()
        return {k: d[k] for k in first} | {k: v for k, v in d.items() if k not in first}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProfileResult:
        """Read a ProfileResult JSON back; UsageError for one that lacks a field or is of a newer schema."""
        missing = [k for k in REQUIRED if k not in d]
        if missing:
            raise UsageError(f"Not a ProfileResult: missing {', '.join(missing)}.")
        gate_version(d, "schema_version", SCHEMA_VERSION, "The ProfileResult", "ProfileResult schema")
        return super().from_dict(d)


REQUIRED = ("schema_version", "artifact", "device", "runtime", "settings", "load_ms", "first_inference_ms",
            "latency_ms", "throughput_per_s", "memory", "compute", "power")


# --- the measurement ------------------------------------------------------------------------------
def profile_artifact(path: str | Path, runtime: str | None = None, device: str = "auto",
                     settings: MeasureSettings | None = None, *, sensors: list[str] | None = None,
                     sysfs_root: str | Path = "/", options: dict[str, Any] | None = None, macs: int | None = None,
                     estimate_power: bool = False, log: Callable[[str], None] | None = None) -> ProfileResult:
    """Measure PATH on DEVICE ("auto", "cpu", "gpu", "edgetpu", "tpu", a device name or a .toml file)."""
    from edgekit.measure.artifact import describe_artifact
    from edgekit.measure.loop import timed_loop
    from edgekit.measure.machine import current_rss, peak_rss, require_proc
    from edgekit.measure.stats import latency_stats
    from edgekit.runtimes import DEVICE_ALIASES, DEVICES, detect_format, pick_runtime, resolve_device
    from edgekit.runtimes.inputs import random_batches, sample_batches
    from edgekit.sensors.window import PowerWindow

    settings = settings or MeasureSettings()
    settings.check()
    require_proc("edgekit profile")
    log = log or (lambda _m: None)
    path = Path(path)
    fmt = detect_format(path)
    cls = pick_runtime(fmt, runtime)
    profile_dev = None
    dev_key = device.strip().lower()
    if dev_key not in DEVICES and dev_key not in DEVICE_ALIASES and dev_key not in cls.devices:
        from edgekit.measure.devices import load_profile

        profile_dev = load_profile(device)
        dev_key = profile_dev.kind
    dev = resolve_device(cls, fmt, dev_key)
    _check_device_fits_format(path, fmt, dev)
    ok, why = cls.available(dev)
    if not ok:
        raise NotAvailable(f"The {cls.name} runtime cannot run on '{dev}' here: {why}",
                           hint="Profile on what is here with --device cpu, or install what the message names.")
    if profile_dev is None:
        from edgekit.measure.devices import detect_profile

        profile_dev = detect_profile(kind="gpu" if dev in ("cuda", "tensorrt") else dev)
    threads = settings.threads or (profile_dev.threads if profile_dev else None)
    artifact, notes = describe_artifact(path, fmt)
    from edgekit.measure.devices import emulated_cpu_facts

    emulated = emulated_cpu_facts()
    if emulated:
        notes.append(f"run on an emulated {emulated['core']} ({emulated['device']}, qemu-user): the timings are the "
                     "emulator's, not the device's")
    cls, options, kernels_note = _first_run_or_next(path, fmt, cls, dev, threads, settings.batch, dict(options or {}),
                                                    runtime is None, notes, log)
    if kernels_note:
        notes.append(f"measured with {cls.label()}'s builtin kernels (no delegate): {kernels_note}")

    log(f"loading {path.name} with {cls.name} on {dev}")
    rt = cls()
    rss0 = current_rss()
    t0 = time.perf_counter()
    rt.load(path, device=dev, threads=threads, **(options or {}))
    load_ms = (time.perf_counter() - t0) * 1e3
    rss1 = current_rss()
    calls: list[Callable[[], Any]] = []
    try:
        rt.check_batch(settings.batch)
        if settings.input:
            batches = sample_batches(rt, settings.input, settings.batch, settings.raw_io)
        else:
            batches = random_batches(rt, settings.batch, settings.seed)
        t0 = time.perf_counter()
        rt.run(batches[0])  # the first inference, through run(): vendor errors are mapped here
        first_ms = (time.perf_counter() - t0) * 1e3
        calls = [rt.bind(b) for b in batches]
        window = PowerWindow(dev, sensors or (profile_dev.power_sensors if profile_dev else None),
                             sysfs_root, profile_dev)
        # a vendor error inside a bound call (they are not mapped per call: that would cost time on every run)
        with vendor_errors(cls.vendor, error=RuntimeFailure, what=f"{cls.name} failed while timing",
                           errors=cls.run_errors):
            log(f"warmup: {settings.warmup} runs")
            for i in range(settings.warmup):
                calls[i % len(calls)]()
            if settings.idle_baseline:
                log(f"idle baseline: {settings.idle_seconds:g} s")
                window.idle(settings.idle_seconds)
            log(f"timing: at least {settings.runs} runs and {settings.min_seconds:g} s")
            window.start()
            times, window_ns = timed_loop(calls, settings.runs, settings.min_seconds)
            reading = window.stop()
        arena = rt.arena_bytes()
        info = rt.info()
        if kernels_note and "kernels_note" not in info:
            info["kernels_note"] = kernels_note
        inputs = [InputInfo(name=k, shape=list(v.shape), dtype=v.dtype.name) for k, v in batches[0].items()]
    finally:
        calls.clear()  # bound calls hold the model: release them before the runtime
        rt.close()

    stats = latency_stats(times)
    n = len(times)
    seconds = window_ns / 1e9
    compute = _compute(path, fmt, rt, settings.batch, stats.p50, dev, macs)
    power = window.result(reading, n, seconds, estimate_power)
    if len(batches) > 1:
        notes.append(f"{len(batches)} distinct input batches cycled through the timed runs")
    from edgekit.measure.devices import host_info

    return ProfileResult(
        artifact=artifact,
        device=DeviceInfo(name=dev, profile=profile_dev.name if profile_dev else None,
                          accelerator=_accelerator(dev, info), host=host_info()),
        runtime=RuntimeInfo(name=cls.name, version=cls.version(), details=info),
        settings=settings.used(threads),
        load_ms=load_ms, first_inference_ms=first_ms, latency_ms=stats,
        throughput_per_s=settings.batch * n / seconds if seconds > 0 else 0.0,
        memory=MemoryUsage(peak_rss_bytes=peak_rss(),
                           load_rss_delta_bytes=(rss1 - rss0) if rss0 and rss1 else None,
                           artifact_bytes=artifact.size_bytes, arena_bytes=arena),
        compute=compute, power=power, runs=n, timed_seconds=seconds, inputs=inputs, notes=notes,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )


def first_run_isolated(path: Path, cls: type[Runtime], dev: str, threads: int | None, batch: int,
                       options: dict[str, Any], *, probe: bool = False) -> tuple[dict[str, Any], str | None]:
    """Load PATH and run it once in a child process first, where its runtime can crash natively on a model.

    LiteRT aborts the process on some badly quantized models (its builtin kernels' checks), which would
    end `edgekit profile` with a signal instead of an error: the child's crash becomes RuntimeFailure
    (exit 6). The kernels the child settled on ("auto": XNNPACK, or the builtin kernels where XNNPACK
    refuses the model) are the ones this process then loads, with the reason when they are not XNNPACK.
    Only for runtimes with several CPU kernel paths (LiteRT), on the CPU, unless PROBE: then for any runtime on
    the CPU, so that a runtime built with an instruction this CPU lacks (SIGILL) is found in the child and the
    caller can try another (serve's candidates, profile's runtimes). EDGEKIT_NO_ISOLATION=1 skips it.
    """
    from edgekit.core.isolate import isolation_enabled, run_isolated

    if dev != "cpu" or not (probe or getattr(cls, "kernel_paths", None)) or not isolation_enabled():
        return options, None
    request = FirstRunRequest(path=str(path), runtime=f"{cls.__module__}:{cls.__qualname__}", device=dev,
                              threads=threads, batch=batch, options=options)
    answer, _ = run_isolated("edgekit.measure.profile:_first_run_in_child", request, who=cls.label(),
                             doing=f"loading and running {path.name}", hint=cls.hint_for)
    if answer.get("kernels"):
        options["kernels"] = answer["kernels"]
    return options, answer.get("kernels_note")


def crashed(exc: RuntimeFailure) -> bool:
    """Whether EXC is a child's death by a signal (SIGILL, SIGSEGV, SIGABRT: edgekit.core.isolate raises
    RuntimeCrash for it), not an error the runtime raised and the child sent back."""
    from edgekit.core.errors import RuntimeCrash

    return isinstance(exc, RuntimeCrash)


def _first_run_or_next(path: Path, fmt: str, cls: type[Runtime], dev: str, threads: int | None, batch: int,
                       options: dict[str, Any], may_switch: bool, notes: list[str], log: Callable[[str], None]
                       ) -> tuple[type[Runtime], dict[str, Any], str | None]:
    """`first_run_isolated` with CLS, and where MAY_SWITCH (no --runtime named) and other runtimes that load FMT run
    on this CPU, each of those in turn while the runtime before crashed in the child (a wheel built with an
    instruction this CPU lacks): (the runtime that ran it, its load options, its kernels note). Every runtime is
    then probed in a child, so a crash is caught; each switch leaves a note. With --runtime, as before."""
    from edgekit.runtimes import get_runtime, runtimes_for_format

    others: list[type[Runtime]] = []
    if may_switch and dev == "cpu":
        others = [c for c in (get_runtime(n) for n in runtimes_for_format(fmt) if n != cls.name)
                  if c.available(dev)[0]]
    failed: list[str] = []
    while True:
        try:
            opts, note = first_run_isolated(path, cls, dev, threads, batch, dict(options), probe=bool(others) or
                                            bool(failed))
            return cls, opts, note
        except RuntimeFailure as exc:
            if not (others and crashed(exc)):
                if failed:
                    raise RuntimeFailure(f"No runtime could run {path.name} on this CPU: " + "; ".join(
                        [*failed, f"{cls.name}: {exc.message}"]), hint=exc.hint) from exc
                raise
            nxt = others.pop(0)
            failed.append(f"{cls.name}: {exc.message}")
            notes.append(f"{cls.name} could not run it on this CPU: {exc.message}; measured with {nxt.name}")
            log(f"{cls.name} could not run {path.name} on this CPU: {exc.message}; trying {nxt.name}")
            cls = nxt


@dataclass(frozen=True)
class FirstRunRequest(Record):
    """What `_first_run_in_child` is sent: the artifact, its runtime ("module:Class") and how to load and run it.

    A record rather than a dict so a renamed key fails at the call, not as a KeyError inside the child.
    """

    path: str
    runtime: str
    device: str
    threads: int | None
    batch: int
    options: dict[str, Any] = field(default_factory=dict)  # the runtime's load options (kernels, delegates ...)


def _first_run_in_child(request: FirstRunRequest, arrays: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """In the child (edgekit.core.isolate): load, run once on random inputs, say which kernels ran it."""
    from edgekit.core.registry import resolve

    cls: type[Runtime] = resolve({"runtime": request.runtime}, "runtime", "runtime")
    with cls() as rt:
        rt.load(Path(request.path), device=request.device, threads=request.threads, **request.options)
        rt.check_batch(request.batch)
        rt.run(rt.random_inputs(batch=request.batch))
        info = rt.info()
    return {"kernels": info.get("kernels"), "kernels_note": info.get("kernels_note")}, {}


def _check_device_fits_format(path: Path, fmt: str, dev: str) -> None:
    """A device that only formats made for it can use (edgekit.core.formats: FormatSpec.devices; the Edge TPU
    runs only Edge TPU-compiled models) refuses any other format: its ops would all run on the host."""
    from edgekit.core.formats import FORMATS

    makers = [s.name for s in FORMATS.values() if s.devices and dev in s.devices]
    if makers and fmt not in makers:
        words = _DEVICE_WORDS.get(dev, dev)
        raise UsageError(f"{path.name} is not compiled for the {words}: on the {words} device every op of it "
                         "would run on the host CPU.",
                         hint=f"Compile it with `edgekit convert ... --target {makers[0]}`, or use --device cpu.")


_DEVICE_WORDS = KIND_WORDS


def _accelerator(dev: str, info: dict[str, Any]) -> str | None:
    """A words-for-humans name of the accelerator used, where there is one."""
    if dev == "cpu":
        return None
    if info.get("gpu"):
        return str(info["gpu"])
    if info.get("providers"):
        return str(info["providers"][0])
    if dev == "edgetpu":  # the device, not the format: which Edge TPU the runtime found
        from edgekit.runtimes.litert import edgetpu_devices

        found = edgetpu_devices()
        return f"{_DEVICE_WORDS[dev]} ({found[0]})" if found else _DEVICE_WORDS[dev]
    return dev


def _compute(path: Path, fmt: str, rt: Any, batch: int, p50_ms: float, dev: str,
             macs: int | None) -> ComputeFigures:
    """MACs per call, achieved GMAC/s at the median latency, and on the CPU the share of its peak."""
    from edgekit.core.formats import inspectable

    per_call: int | None
    if macs is not None:
        per_call, source = int(macs), "given (--macs)"
    elif inspectable(fmt):
        per_call, source = artifact_macs(path)
    else:
        per_call, source = None, f"not counted: inspect reads onnx/tflite, not {fmt} (pass --macs)"
    dynamic_batch = bool(rt.inputs) and rt.inputs[0].shape[:1] == [-1]
    if per_call is not None and (dynamic_batch or macs is not None):
        per_call *= batch  # counts are per sample for a dynamic batch (and --macs is per sample)
    gmacs = per_call / (p50_ms / 1e3) / 1e9 if per_call and p50_ms > 0 else None
    out = ComputeFigures(macs=per_call, macs_source=source, gmacs_per_s=gmacs)
    if dev == "cpu" and gmacs is not None:
        from edgekit.measure.machine import measured_peak

        peak = measured_peak()
        out.cpu_peak_gmacs_per_s = peak["gmacs_per_s"]
        out.fraction_of_peak = gmacs / peak["gmacs_per_s"]
        out.peak_method = peak["method"] + (" (cached)" if peak.get("cached") else "")
    return out


__all__ = ["REQUIRED", "SCHEMA_VERSION", "MeasureSettings", "ProfileResult", "artifact_macs", "first_run_isolated",
           "profile_artifact"]
