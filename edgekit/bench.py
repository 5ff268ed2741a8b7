"""`edgekit bench`: every artifact of a conversion run, on every runtime/device here, in one table.

Rows: each artifact of the manifest on each runtime that loads its format and each device that
runtime has here (or the ones named), plus the source model itself where it can run (PyTorch
sources with the torch runtime, SavedModels with tf). Fidelity (top-1 agreement, accuracy) comes
from the manifest: bench measures speed, it does not re-validate. The speed-up column is against
the source model when it was measured, else against the fp32 artifact; the report says which.

Each row runs in its own process by default (`edgekit profile --json`), so peak memory is the
row's own and a runtime that crashes on a file takes only its row down.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgekit.artifact import Artifact, Manifest
from edgekit.errors import EXIT_MISSING, EdgekitError, NotAvailable, UsageError

SCHEMA_VERSION = 1
FORMAT_ORDER = {"torch": 0, "savedmodel": 1, "onnx": 2, "tflite": 3, "edgetpu": 4}
PRECISION_ORDER = {"fp32": 0, "fp16": 1, "dynamic": 2, "int8": 3}


@dataclass
class BenchSettings:
    runs: int = 50
    min_seconds: float = 0.5
    warmup: int = 5
    threads: int | None = None
    batch: int = 1
    runtimes: list[str] | None = None
    devices: list[str] | None = None
    isolate: bool = True  # one process per row
    include_source: bool = True
    timeout: float = 600.0


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
    options: dict[str, Any] = field(default_factory=dict)
    macs: int | None = None
    skip: str | None = None  # why it is not measured (not available here, file missing)


def _resolve_source(manifest: Manifest, manifest_path: Path) -> Path | None:
    raw = manifest.source.get("path")
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
    from edgekit.profile import guess_precision
    from edgekit.runtimes import detect_format

    arts = []
    for f in sorted(p.iterdir()):
        try:
            fmt = detect_format(f)
        except EdgekitError:
            continue
        if fmt in ("onnx", "tflite", "edgetpu", "savedmodel"):
            arts.append(Artifact(path=f.name, format=fmt, precision=guess_precision(f, None)[0] or "?",
                                 inputs=[], outputs=[], size_bytes=0, sha256=""))
    if not arts:
        raise UsageError(f"{p} holds no manifest.json and no .onnx/.tflite/SavedModel to bench.",
                         hint="Run `edgekit convert ... --out DIR` first and pass DIR.")
    return Manifest(source={}, artifacts=arts), p / "manifest.json"


def plan_jobs(manifest: Manifest, manifest_path: Path, settings: BenchSettings) -> list[Job]:
    """The rows to measure, in table order; rows that cannot run here carry their reason."""
    from edgekit.profile import artifact_macs
    from edgekit.runtimes import get_runtime, normalize_device, runtimes_for_format

    jobs: list[Job] = []
    wanted_rt = settings.runtimes
    wanted_dev = [normalize_device(d) for d in settings.devices] if settings.devices else None
    arts = sorted(manifest.artifacts, key=lambda a: (FORMAT_ORDER.get(a.format, 9),
                                                     PRECISION_ORDER.get(a.precision, 9)))
    macs_per_sample: int | None = None
    for art in arts:
        path = manifest.resolve(art, manifest_path) if art.path else manifest_path.parent / "(not written)"
        names = [n for n in runtimes_for_format(art.format) if wanted_rt is None or n in wanted_rt]
        if art.precision == "fp32" and art.format in ("onnx", "tflite") and macs_per_sample is None and path.exists():
            macs_per_sample = artifact_macs(path)[0]
        for name in names:
            cls = get_runtime(name)
            if wanted_dev is not None:
                devices = [d for d in wanted_dev if d in cls.devices]
            elif art.format == "edgetpu":
                devices = ["edgetpu"]
            else:
                devices = ["cpu"] + [d for d in cls.auto_devices if cls.available(d)[0]]
            for dev in devices:
                job = Job(label=art.label, path=path, fmt=art.format, precision=art.precision, runtime=name,
                          device=dev, artifact=art)
                if not path.exists():
                    job.skip = f"file not written ({art.extra.get('edgetpu', {}).get('how_to_finish') or path.name})"
                else:
                    ok, why = cls.available(dev)
                    job.skip = None if ok else f"not available here: {why}"
                jobs.append(job)
    if settings.include_source:
        src = _source_job(manifest, manifest_path, macs_per_sample, wanted_dev)
        if src is not None:
            jobs.insert(0, src)
    return jobs


def _source_job(manifest: Manifest, manifest_path: Path, macs: int | None, wanted_dev: list[str] | None) -> Job | None:
    """The source model as a row, where a runtime here can run it (torch for PyTorch, tf for SavedModel)."""
    from edgekit.runtimes import get_runtime

    kind = str(manifest.source.get("kind", ""))
    runtime = "torch" if kind.startswith("torch") else "tf" if kind == "savedmodel" else None
    if runtime is None:
        return None
    path = _resolve_source(manifest, manifest_path)
    dev = wanted_dev[0] if wanted_dev and wanted_dev[0] in get_runtime(runtime).devices else "cpu"
    job = Job(label=f"source ({kind})", path=path or Path(str(manifest.source.get("path"))), fmt=runtime
              if runtime == "torch" else "savedmodel", precision="fp32", runtime=runtime, device=dev, macs=macs)
    if path is None:
        job.skip = f"source file not found ({manifest.source.get('path')})"
        return job
    ok, why = get_runtime(runtime).available(dev)
    if not ok:
        job.skip = f"not available here: {why}"
        return job
    shape = (manifest.source.get("input") or {}).get("shape")
    if not shape:  # the NCHW input of an ONNX artifact made from this source has the same shape
        onnx_in = [a.inputs[0] for a in manifest.artifacts if a.format == "onnx" and a.inputs]
        shape = onnx_in[0].shape if onnx_in else None
    if shape and kind != "torch-exported":
        job.options["input_shape"] = [1 if int(d) <= 0 else int(d) for d in shape]
    factory = manifest.options.get("factory") or manifest.options.get("model")
    if factory:
        job.options["factory"] = factory
    if manifest.options.get("trust_model"):
        job.options["trust_model"] = True
    if manifest.source.get("sha256") and path.is_file():
        from edgekit.fsutil import sha256_file

        if sha256_file(path) != manifest.source["sha256"]:
            job.skip = "the source file changed since the conversion (sha256 differs): not the model converted"
    return job


def _cli_args(job: Job, s: BenchSettings) -> list[str]:
    args = ["profile", str(job.path), "--json", "--runtime", job.runtime, "--device", job.device,
            "--runs", str(s.runs), "--min-seconds", str(s.min_seconds), "--warmup", str(s.warmup),
            "--batch", str(s.batch)]
    if s.threads:
        args += ["--threads", str(s.threads)]
    if job.macs:
        args += ["--macs", str(job.macs)]
    if job.options.get("input_shape"):
        args += ["--input-shape", ",".join(str(d) for d in job.options["input_shape"])]
    if job.options.get("factory"):
        args += ["--model", str(job.options["factory"])]
    if job.options.get("trust_model"):
        args += ["--trust-model"]
    return args


def run_job(job: Job, s: BenchSettings) -> tuple[str, dict[str, Any] | None, str | None]:
    """(status, ProfileResult dict, message): status is ok, not available, or failed."""
    if job.skip:
        return "not available", None, job.skip
    if not s.isolate:
        from edgekit.profile import ProfileSettings, profile_artifact

        try:
            r = profile_artifact(job.path, runtime=job.runtime, device=job.device, macs=job.macs, options=job.options,
                                 settings=ProfileSettings(runs=s.runs, min_seconds=s.min_seconds, warmup=s.warmup,
                                                          threads=s.threads, batch=s.batch))
        except NotAvailable as exc:
            return "not available", None, exc.message
        except EdgekitError as exc:
            return "failed", None, exc.message
        return "ok", r.to_dict(), None
    cmd = [sys.executable, "-m", "edgekit.cli", *_cli_args(job, s)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=s.timeout, check=False)
    except subprocess.TimeoutExpired:
        return "failed", None, f"timed out after {s.timeout:g} s"
    if proc.returncode == 0:
        try:
            return "ok", json.loads(proc.stdout), None
        except json.JSONDecodeError:
            return "failed", None, "edgekit profile printed no JSON"
    errors = [ln.split("error:", 1)[1].strip() for ln in proc.stderr.splitlines() if "error:" in ln]
    message = errors[-1] if errors else (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return ("not available" if proc.returncode == EXIT_MISSING else "failed"), None, message[:500]


def _row(job: Job, status: str, result: dict[str, Any] | None, message: str | None,
         ref_accuracy: float | None) -> dict[str, Any]:
    fid = job.artifact.fidelity if job.artifact is not None else None
    size = result["artifact"]["size_bytes"] if result else (job.artifact.size_bytes if job.artifact else None)
    row: dict[str, Any] = {
        "label": job.label, "format": job.fmt, "precision": job.precision, "runtime": job.runtime,
        "device": job.device, "path": str(job.path), "size_bytes": size,
        "top1_agreement": fid.top1_agreement if fid else None,
        "accuracy": fid.accuracy if fid else (ref_accuracy if job.artifact is None else None),
        "status": status, "note": message, "p50_ms": None, "p90_ms": None, "throughput_per_s": None,
        "joules_per_inference": None, "energy_estimated": False, "speedup": None,
    }
    if result and result.get("notes"):
        row["note"] = "; ".join(result["notes"])
    if result:
        pw = result["power"]
        row.update(p50_ms=result["latency_ms"]["p50"], p90_ms=result["latency_ms"]["p90"],
                   throughput_per_s=result["throughput_per_s"], joules_per_inference=pw.get("joules_per_inference"),
                   energy_estimated=bool(pw.get("estimated")))
    return row


def bench(target: str | Path, settings: BenchSettings | None = None, out_dir: str | Path | None = None,
          log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Measure every row, write bench.json / bench.md / bench.png into OUT_DIR, return the report."""
    from edgekit import __version__
    from edgekit.devices import host_info

    s = settings or BenchSettings()
    log = log or (lambda _m: None)
    manifest, mpath = load_target(target)
    jobs = plan_jobs(manifest, mpath, s)
    ref_acc = next((a.fidelity.reference_accuracy for a in manifest.artifacts if a.fidelity), None)
    rows, results = [], []
    for i, job in enumerate(jobs, 1):
        log(f"bench {i}/{len(jobs)}: {job.label} on {job.runtime}/{job.device}")
        status, result, message = run_job(job, s)
        rows.append(_row(job, status, result, message, ref_acc))
        if result:
            results.append(result)
    reference = _reference(rows)
    for row in rows:
        if reference and row["p50_ms"]:
            row["speedup"] = reference["p50_ms"] / row["p50_ms"]
    energy = [r for r in results if r["power"].get("measured")]
    report = {
        "schema_version": SCHEMA_VERSION, "edgekit_version": __version__, "manifest": str(mpath),
        "source": manifest.source, "host": host_info(), "settings": {k: v for k, v in vars(s).items()},
        "reference": reference, "rows": rows, "results": results,
        "energy_note": None if energy else _energy_note(results),
    }
    out = Path(out_dir) if out_dir else mpath.parent / "bench"
    report["files"] = write_outputs(report, out)
    return report


def _reference(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The row speed-ups are against: the measured source model, else the fp32 artifact on the CPU."""
    ok = [r for r in rows if r["status"] == "ok" and r["p50_ms"]]
    src = [r for r in ok if r["format"] in ("torch", "savedmodel") and r["label"].startswith("source")]
    if src:
        r = src[0]
        return {"kind": "source model", "label": f"{r['label']} on {r['runtime']}/{r['device']}", "p50_ms": r["p50_ms"]}
    fp32 = sorted((r for r in ok if r["precision"] == "fp32" and r["device"] == "cpu"),
                  key=lambda r: 0 if r["format"] == "onnx" else 1)
    if fp32:
        r = fp32[0]
        return {"kind": "fp32 artifact (the source model could not be measured here)",
                "label": f"{r['label']} on {r['runtime']}/{r['device']}", "p50_ms": r["p50_ms"]}
    return None


def _energy_note(results: list[dict[str, Any]]) -> str:
    reasons = {str(r["power"]["reason"]).removeprefix("not measured: ").rstrip(".") for r in results
               if r["power"].get("reason")}
    return "Energy not measured: " + ("; ".join(sorted(reasons)) if reasons else "no row was measured") + "."


def write_outputs(report: dict[str, Any], out: Path) -> dict[str, str]:
    from edgekit.fsutil import atomic_write_bytes, atomic_write_json, atomic_write_text

    files = {"json": str(out / "bench.json"), "markdown": str(out / "bench.md"), "chart": str(out / "bench.png")}
    atomic_write_text(files["markdown"], markdown(report))
    png = chart_png(report)
    if png is None:
        files.pop("chart")
    else:
        atomic_write_bytes(files["chart"], png)
    atomic_write_json(files["json"], {**report, "files": files})
    return files


# --- presentation ---------------------------------------------------------------------------------
COLUMNS = ("Model", "Format", "Precision", "Runtime", "Device", "Size", "Top-1 agr.", "Accuracy", "p50 ms",
           "p90 ms", "Throughput/s", "mJ/inf", "Speed-up")


def table_rows(report: dict[str, Any]) -> list[list[str]]:
    """The table's cells as text, one list per row (shared by the Markdown file and the screen)."""
    from edgekit.console import human_bytes

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.2%}"

    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    out = []
    for r in report["rows"]:
        energy = "-" if r["joules_per_inference"] is None else \
            f"{r['joules_per_inference'] * 1e3:.3f}" + (" (est.)" if r["energy_estimated"] else "")
        if r["status"] != "ok":
            tail = [f"{r['status']}: {r['note']}"[:90], "", "", "", ""]
        else:
            tail = [num(r["p50_ms"], ".3f"), num(r["p90_ms"], ".3f"), num(r["throughput_per_s"], ".1f"), energy,
                    num(r["speedup"], ".2f") + ("x" if r["speedup"] else "")]
        out.append([r["label"], r["format"], r["precision"] or "?", r["runtime"], r["device"],
                    human_bytes(r["size_bytes"]), pct(r["top1_agreement"]), pct(r["accuracy"]), *tail])
    return out


def footnotes(report: dict[str, Any]) -> list[str]:
    s, h, ref = report["settings"], report["host"], report["reference"]
    notes = [f"Host: {h['cpu_model']}, {h['cpu_cores_logical']} logical cores, {h['os']}; edgekit "
             f"{report['edgekit_version']}.",
             f"Settings: batch {s['batch']}, threads {s['threads'] or 'default'}, at least {s['runs']} runs and "
             f"{s['min_seconds']:g} s per row after {s['warmup']} warmup runs; latency is single-stream."]
    notes.append(f"Speed-up: p50 of the {ref['kind']} ({ref['label']}, {ref['p50_ms']:.3f} ms) / p50 of the row."
                 if ref else "Speed-up: no reference row could be measured.")
    notes.append("Top-1 agreement and accuracy: from the conversion's validation (manifest), not re-measured.")
    if report.get("energy_note"):
        notes.append(report["energy_note"])
    return notes


def markdown(report: dict[str, Any]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in table_rows(report)]
    return "\n".join(["# edgekit bench", "", *lines, "", *[f"- {n}" for n in footnotes(report)]]) + "\n"


def chart_png(report: dict[str, Any]) -> bytes | None:
    """Latency against size, coloured by format (matplotlib's Agg canvas, no pyplot state); None without
    matplotlib or without a measured row."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    ok = [r for r in report["rows"] if r["status"] == "ok" and r["p50_ms"] and r["size_bytes"]]
    if not ok:
        return None
    import io

    colours = {"torch": "#d62728", "savedmodel": "#9467bd", "onnx": "#1f77b4", "tflite": "#ff7f0e",
               "edgetpu": "#2ca02c"}
    markers = {"cpu": "o", "gpu": "s", "edgetpu": "^", "tpu": "D"}
    fig = Figure(figsize=(7, 4.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for fmt in dict.fromkeys(r["format"] for r in ok):
        pts = [r for r in ok if r["format"] == fmt]
        for dev in dict.fromkeys(r["device"] for r in pts):
            sel = [r for r in pts if r["device"] == dev]
            ax.scatter([r["size_bytes"] / 1024 for r in sel], [r["p50_ms"] for r in sel], s=60,
                       c=colours.get(fmt, "#7f7f7f"), marker=markers.get(dev, "o"), label=f"{fmt} ({dev})")
    for r in ok:
        ax.annotate(r["precision"] or "?", (r["size_bytes"] / 1024, r["p50_ms"]), textcoords="offset points",
                    xytext=(5, 4), fontsize=8)
    ax.set_xscale("log")
    lat = [r["p50_ms"] for r in ok]
    if max(lat) / min(lat) > 20:
        ax.set_yscale("log")
    ax.set_xlabel("artifact size (KiB, log scale)")
    ax.set_ylabel("p50 latency (ms)" + (", log scale" if ax.get_yscale() == "log" else ""))
    ax.set_title(f"edgekit bench: latency vs size on {report['host']['cpu_model']}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
