"""The measuring loop: one artifact, one runtime, one device -> a ProfileResult (schema in docs/profile.md).

Method (as MLPerf single-stream and the runtimes' own benchmark tools do it): load time and the
first inference are reported apart from steady state; untimed warmup runs follow; then timed
single-stream runs continue until BOTH a minimum count (`runs`) and a minimum duration
(`min_seconds`) are reached. Each run is timed on its own with perf_counter_ns around exactly one
runtime call whose inputs were prepared beforehand, so the loop adds almost nothing to what it
measures (bench/overhead.py checks this against a bare loop). Power is read over the timed window
only; where no sensor can be read the result says "not measured", never 0.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgekit import __version__
from edgekit.errors import EdgekitError, NotAvailable, RuntimeFailure, UsageError
from edgekit.fsutil import cache_dir

SCHEMA_VERSION = 1
PRECISION_TOKENS = {"fp32": "fp32", "float32": "fp32", "fp16": "fp16", "float16": "fp16", "int8": "int8",
                    "uint8": "int8", "full_integer_quant": "int8", "integer_quant": "int8",
                    "dynamic": "dynamic", "dynamic_range_quant": "dynamic"}


@dataclass
class ProfileSettings:
    """How to measure. Defaults follow common practice: 100 runs and at least 1 s, 10 warmup runs."""

    runs: int = 100
    min_seconds: float = 1.0
    warmup: int = 10
    threads: int | None = None
    batch: int = 1
    input: str | None = None  # None: random data; else "mnist", an image folder, a .npy/.npz
    raw_io: bool = False
    idle_baseline: bool = False
    idle_seconds: float = 2.0
    seed: int = 0

    def check(self) -> None:
        for name, value, low in (("runs", self.runs, 1), ("warmup", self.warmup, 0), ("batch", self.batch, 1)):
            if value < low:
                raise UsageError(f"--{name} must be at least {low}, got {value}.")
        if self.min_seconds < 0 or self.idle_seconds <= 0:
            raise UsageError("--min-seconds must be >= 0 and --idle-seconds > 0.")
        if self.threads is not None and self.threads < 1:
            raise UsageError(f"--threads must be at least 1, got {self.threads}.")


@dataclass
class ProfileResult:
    """What was measured, how, and on what. `to_dict()` is the JSON documented in docs/profile.md."""

    artifact: dict[str, Any]
    device: dict[str, Any]
    runtime: dict[str, Any]
    settings: dict[str, Any]
    load_ms: float
    first_inference_ms: float
    latency_ms: dict[str, float]
    throughput_per_s: float
    memory: dict[str, Any]
    compute: dict[str, Any]
    power: dict[str, Any]
    runs: int = 0
    timed_seconds: float = 0.0
    inputs: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    edgekit_version: str = __version__
    created: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        first = ["schema_version", "edgekit_version", "created", "artifact", "device", "runtime", "settings"]
        return {k: d[k] for k in first} | {k: v for k, v in d.items() if k not in first}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProfileResult:
        missing = [k for k in REQUIRED if k not in d]
        if missing:
            raise UsageError(f"Not a ProfileResult: missing {', '.join(missing)}.")
        if int(d["schema_version"]) > SCHEMA_VERSION:
            raise UsageError(f"ProfileResult schema {d['schema_version']} is newer than this edgekit's "
                             f"({SCHEMA_VERSION}).", hint="Upgrade edgekit to read it.")
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in names})


REQUIRED = ("schema_version", "artifact", "device", "runtime", "settings", "load_ms", "first_inference_ms",
            "latency_ms", "throughput_per_s", "memory", "compute", "power")


# --- statistics -----------------------------------------------------------------------------------
def latency_stats(ns: list[int] | np.ndarray) -> dict[str, float]:
    """p50/p90/p99 (linear interpolation between order statistics), mean, std (n-1), min, max in ms."""
    a = np.asarray(ns, dtype=np.float64) / 1e6
    if a.size == 0:
        raise ValueError("no timings")
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return {"p50": float(p50), "p90": float(p90), "p99": float(p99), "mean": float(a.mean()),
            "std": float(a.std(ddof=1)) if a.size > 1 else 0.0, "min": float(a.min()), "max": float(a.max()),
            "n": int(a.size)}


def timed_loop(calls: list[Callable[[], Any]], runs: int, min_seconds: float) -> tuple[list[int], int]:
    """Run CALLS round-robin until RUNS calls and MIN_SECONDS have both passed.

    Returns the per-call durations (ns) and the window's wall time (ns). The loop body is the
    call between two perf_counter_ns reads and a store into a preallocated list: nothing else.
    """
    pc = time.perf_counter_ns
    min_ns = int(min_seconds * 1e9)
    buf = [0] * max(runs, 64)
    n, k = 0, len(calls)
    start = pc()
    # two copies of the loop on purpose: the common single-batch case keeps the round-robin index
    # out of the timed body (bench/overhead.py measures what this loop adds)
    if k == 1:
        call = calls[0]
        while True:
            t0 = pc()
            call()
            t1 = pc()
            buf[n] = t1 - t0
            n += 1
            if n >= runs and t1 - start >= min_ns:
                break
            if n == len(buf):
                buf.extend([0] * n)
    else:
        while True:
            call = calls[n % k]
            t0 = pc()
            call()
            t1 = pc()
            buf[n] = t1 - t0
            n += 1
            if n >= runs and t1 - start >= min_ns:
                break
            if n == len(buf):
                buf.extend([0] * n)
    return buf[:n], pc() - start


# --- the machine: memory, peak compute -----------------------------------------------------------
def current_rss() -> int | None:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except ImportError:
        try:
            pages = int(Path("/proc/self/statm").read_text().split()[1])
            return pages * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return None


def peak_rss() -> int | None:
    """The process's peak resident set size in bytes (getrusage: KiB on Linux, bytes on macOS)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def measured_peak(refresh: bool = False, seconds: float = 0.5) -> dict[str, Any]:
    """This CPU's float32 matrix-multiply rate in GMAC/s (numpy's BLAS, its default threads), cached.

    The probe multiplies 1024x1024 matrices for about SECONDS and keeps the best run; the result is
    cached per CPU model, core count and numpy version in <cache>/cpu_peak.json.
    """
    from edgekit.devices import cpu_model

    key = f"{cpu_model()}|{os.cpu_count()}|numpy {np.__version__}"
    path = cache_dir() / "cpu_peak.json"
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        cached = {}
    if not refresh and isinstance(cached.get(key), dict):
        return {**cached[key], "cached": True}
    n = 1024
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    np.matmul(a, b, out=out)  # warm the BLAS threads
    best, deadline = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        np.matmul(a, b, out=out)
        best = min(best, time.perf_counter() - t0)
    entry = {"gmacs_per_s": n**3 / best / 1e9, "method": f"numpy float32 matmul {n}x{n}, best of {seconds:g} s",
             "measured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    try:
        from edgekit.fsutil import atomic_write_json

        atomic_write_json(path, {**cached, key: entry})
    except OSError:
        pass  # a read-only home: the figure is still returned, just not cached
    return {**entry, "cached": False}


# --- the artifact ---------------------------------------------------------------------------------
def artifact_facts(path: Path) -> dict[str, Any]:
    """Size and sha256 of a file, or of a folder (SavedModel: sha256 over sorted relative paths + contents)."""
    from edgekit.fsutil import sha256_file

    if path.is_dir():
        import hashlib

        h, size = hashlib.sha256(), 0
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(str(f.relative_to(path)).encode() + b"\0" + sha256_file(f).encode())
            size += f.stat().st_size
        return {"size_bytes": size, "sha256": h.hexdigest()}
    return {"size_bytes": path.stat().st_size, "sha256": sha256_file(path)}


def manifest_entry(path: Path) -> Any:
    """The Artifact record for PATH in a manifest.json beside it (or one folder up), if any."""
    from edgekit.artifact import Manifest

    for folder in (path.parent, path.parent.parent):
        mf = folder / "manifest.json"
        if mf.is_file():
            try:
                m = Manifest.read(mf)
            except EdgekitError:
                continue
            for a in m.artifacts:
                if m.resolve(a, mf) == path.resolve():
                    return a
    return None


def guess_precision(path: Path, entry: Any) -> tuple[str | None, str | None]:
    """(precision, where it came from): the manifest, else a token of the file name."""
    if entry is not None:
        return entry.precision, "manifest"
    for token in path.name.lower().replace("-", "_").replace(".", "_").split("_")[::-1]:
        if token in PRECISION_TOKENS:
            return PRECISION_TOKENS[token], "file name"
    low = path.name.lower()
    for token, prec in PRECISION_TOKENS.items():
        if "_" in token and token in low:
            return prec, "file name"
    return None, None


def artifact_macs(path: Path) -> tuple[int | None, str]:
    """MACs of one inference at the artifact's own batch, from `edgekit inspect`, and where from."""
    try:
        from edgekit.inspect import inspect_model
    except ImportError:
        return None, "not counted: edgekit.inspect is not available"
    try:
        info = inspect_model(path)
    except EdgekitError as exc:
        return None, f"not counted: inspect failed ({exc.message})"
    for key in ("macs", "total_macs", "macs_total"):
        if isinstance(info.get(key), (int, float)):
            return int(info[key]), "edgekit inspect"
    ops = info.get("ops") or []
    if ops and all(isinstance(o.get("macs"), (int, float)) for o in ops):
        return int(sum(o["macs"] for o in ops)), "edgekit inspect (sum over ops)"
    return None, "not counted: inspect gave no MAC count"


# --- the measurement ------------------------------------------------------------------------------
def profile_artifact(path: str | Path, runtime: str | None = None, device: str = "auto",
                     settings: ProfileSettings | None = None, *, sensors: list[str] | None = None,
                     sysfs_root: str | Path = "/", options: dict[str, Any] | None = None, macs: int | None = None,
                     estimate_power: bool = False, log: Callable[[str], None] | None = None) -> ProfileResult:
    """Measure PATH on DEVICE ("auto", "cpu", "gpu", "edgetpu", "tpu", a device name or a .toml file)."""
    from edgekit.runtimes import DEVICE_ALIASES, DEVICES, detect_format, pick_runtime, resolve_device
    from edgekit.runtimes.inputs import random_batches, sample_batches
    from edgekit.sensors.window import PowerWindow

    settings = settings or ProfileSettings()
    settings.check()
    log = log or (lambda _m: None)
    path = Path(path)
    fmt = detect_format(path)
    cls = pick_runtime(fmt, runtime)
    profile_dev = None
    dev_key = device.strip().lower()
    if dev_key not in DEVICES and dev_key not in DEVICE_ALIASES and dev_key not in cls.devices:
        from edgekit.devices import load_profile

        profile_dev = load_profile(device)
        dev_key = profile_dev.kind
    dev = resolve_device(cls, fmt, dev_key)
    if dev == "edgetpu" and fmt != "edgetpu":
        raise UsageError(f"{path.name} is not compiled for the Edge TPU: on the Edge TPU device every op of it "
                         "would run on the host CPU.",
                         hint="Compile it with `edgekit convert ... --target edgetpu`, or use --device cpu.")
    ok, why = cls.available(dev)
    if not ok:
        raise NotAvailable(f"The {cls.name} runtime cannot run on '{dev}' here: {why}",
                           hint="Profile on what is here with --device cpu, or install what the message names.")
    if profile_dev is None:
        from edgekit.devices import detect_profile

        profile_dev = detect_profile(kind="gpu" if dev in ("cuda", "tensorrt") else dev)
    threads = settings.threads or (profile_dev.threads if profile_dev else None)
    entry = manifest_entry(path)
    precision, precision_source = guess_precision(path, entry)
    facts = artifact_facts(path)
    notes: list[str] = []
    if entry is not None and entry.sha256 and entry.sha256 != facts["sha256"]:
        notes.append("the file's sha256 differs from its manifest entry: it changed after conversion and "
                     "validation (the manifest's fidelity figures may not describe it)")

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
        try:
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
        except EdgekitError:
            raise
        except Exception as exc:  # a vendor error inside a bound call
            raise RuntimeFailure(f"{cls.name} failed while timing: {str(exc).strip()[:400]}") from exc
        arena = rt.arena_bytes()
        info = rt.info()
        inputs = [{"name": k, "shape": list(v.shape), "dtype": v.dtype.name} for k, v in batches[0].items()]
    finally:
        calls.clear()  # bound calls hold the model: release them before the runtime
        rt.close()

    stats = latency_stats(times)
    n = len(times)
    seconds = window_ns / 1e9
    compute = _compute(path, fmt, rt, settings.batch, stats["p50"], dev, macs)
    power = window.result(reading, n, seconds, estimate_power)
    if len(batches) > 1:
        notes.append(f"{len(batches)} distinct input batches cycled through the timed runs")
    from edgekit.devices import host_info

    return ProfileResult(
        artifact={"path": str(path), "sha256": facts["sha256"], "format": fmt, "precision": precision,
                  "precision_source": precision_source, "size_bytes": facts["size_bytes"]},
        device={"name": dev, "profile": profile_dev.name if profile_dev else None,
                "accelerator": _accelerator(dev, info), **host_info()},
        runtime={"name": cls.name, "version": cls.version(), "details": info},
        settings={"runs": settings.runs, "min_seconds": settings.min_seconds, "warmup": settings.warmup,
                  "threads": threads, "batch": settings.batch, "input": settings.input or "random",
                  "raw_io": settings.raw_io, "idle_baseline": settings.idle_baseline},
        load_ms=load_ms, first_inference_ms=first_ms, latency_ms=stats,
        throughput_per_s=settings.batch * n / seconds if seconds > 0 else 0.0,
        memory={"peak_rss_bytes": peak_rss(), "load_rss_delta_bytes": (rss1 - rss0) if rss0 and rss1 else None,
                "artifact_bytes": facts["size_bytes"], "arena_bytes": arena},
        compute=compute, power=power, runs=n, timed_seconds=seconds, inputs=inputs, notes=notes,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )


def _accelerator(dev: str, info: dict[str, Any]) -> str | None:
    """A words-for-humans name of the accelerator used, where there is one."""
    if dev == "cpu":
        return None
    if info.get("gpu"):
        return str(info["gpu"])
    if info.get("providers"):
        return str(info["providers"][0])
    if dev == "edgetpu":
        from edgekit.runtimes.litert import edgetpu_devices

        found = edgetpu_devices()
        return f"Edge TPU ({found[0]})" if found else "Edge TPU"
    return dev


def _compute(path: Path, fmt: str, rt: Any, batch: int, p50_ms: float, dev: str, macs: int | None) -> dict:
    """MACs per call, achieved GMAC/s at the median latency, and on the CPU the share of its peak."""
    if macs is not None:
        per_call, source = int(macs), "given (--macs)"
    elif fmt in ("onnx", "tflite", "edgetpu"):
        per_call, source = artifact_macs(path)
    else:
        per_call, source = None, f"not counted: inspect reads onnx/tflite, not {fmt} (pass --macs)"
    dynamic_batch = bool(rt.inputs) and rt.inputs[0].shape[:1] == [-1]
    if per_call is not None and (dynamic_batch or macs is not None):
        per_call *= batch  # counts are per sample for a dynamic batch (and --macs is per sample)
    gmacs = per_call / (p50_ms / 1e3) / 1e9 if per_call and p50_ms > 0 else None
    out: dict[str, Any] = {"macs": per_call, "macs_source": source, "gmacs_per_s": gmacs,
                           "cpu_peak_gmacs_per_s": None, "fraction_of_peak": None, "peak_method": None}
    if dev == "cpu" and gmacs is not None:
        peak = measured_peak()
        out.update(cpu_peak_gmacs_per_s=peak["gmacs_per_s"], fraction_of_peak=gmacs / peak["gmacs_per_s"],
                   peak_method=peak["method"] + (" (cached)" if peak.get("cached") else ""))
    return out
