"""What `check` compares: the facts of one conversion run, per artifact, from its files alone.

A `Snapshot` is read from a conversion's output folder (manifest.json, bench/bench.json when present,
and each artifact file through `edgekit inspect` for MACs, parameters and operator types), or from a
baseline JSON that `edgekit check --update-baseline` wrote from such a folder. The baseline is a
Snapshot's JSON: small, keys sorted, one artifact per entry, figures rounded, no timestamp, so that a
baseline committed to a repository changes only where the model did.

Artifacts are matched across runs by format and variant (`onnx int8`, `tflite int8-uint8io`), not by
file name, so a renamed model still meets its baseline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgekit.check.detection import DetectionFacts
from edgekit.check.files import (
    as_bool,
    as_dict,
    as_float,
    as_int,
    as_list,
    as_str,
    parse_json,
    read_json,
)
from edgekit.errors import UsageError
from edgekit.records import Record

BASELINE_KIND = "edgekit-baseline"
BASELINE_VERSION = 1
STEADY = 2.0  # a row whose p90 is more than this many times its p50 was measured on a machine too busy to compare


@dataclass
class Latency(Record):
    """One bench row of an artifact: its p50/p90, and both relative to the bench run's reference row."""

    runtime: str = ""
    device: str = ""
    p50_ms: float | None = None
    p90_ms: float | None = None
    p50_vs_ref: float | None = None  # this p50 / the reference's p50, measured in the same bench run
    p90_vs_ref: float | None = None

    @property
    def where(self) -> str:
        return f"{self.runtime}/{self.device}"


@dataclass
class TpuFacts(Record):
    """The Edge TPU coverage the conversion's pre-flight (or the compiler) recorded for an artifact."""

    ops_on_tpu_fraction: float | None = None
    macs_on_tpu_fraction: float | None = None
    partition_index: int | None = None  # the first op the compiler cannot map; None: every op maps
    partition_op: str | None = None
    source: str = "pre-flight"  # where the op counts come from: "pre-flight" (a prediction) or "edgetpu_compiler"


@dataclass
class Facts(Record):
    """What is known of one artifact: presence, size, fidelity (a detector's boxes too), compute, Edge TPU
    coverage, latency."""

    key: str = ""  # "tflite int8-uint8io": format and variant, how artifacts are matched across runs
    format: str = ""
    precision: str = ""
    variant: str = ""
    path: str = ""
    status: str = "ok"  # ok | failed (the conversion says so) | missing (listed, but the file is not there)
    failure: str | None = None
    size_bytes: int | None = None
    sha256: str = ""
    top1_agreement: float | None = None
    accuracy: float | None = None
    reference_accuracy: float | None = None
    fidelity_passed: bool | None = None
    fidelity_failures: list[str] = field(default_factory=list)
    detection: DetectionFacts | None = None  # a detector's box recall / precision and mAP50; None for others
    macs: int | None = None
    params: int | None = None
    ops: list[str] | None = None  # operator types, sorted
    edgetpu: TpuFacts | None = None
    latency: list[Latency] = field(default_factory=list)


@dataclass
class Snapshot(Record):
    """A conversion run's facts. `to_dict()` is the baseline JSON (written with sorted keys)."""

    kind: str = BASELINE_KIND
    version: int = BASELINE_VERSION
    source_path: str = ""
    source_sha256: str = ""
    latency_reference: str | None = None  # "source model: source (torch-exported) on torch/cpu"
    reference_p50_ms: float | None = None  # the reference row's own figures: is it a steady yardstick?
    reference_p90_ms: float | None = None
    artifacts: list[Facts] = field(default_factory=list)

    def by_key(self) -> dict[str, Facts]:
        return {f.key: f for f in self.artifacts}

    @property
    def latency_reference_kind(self) -> str | None:
        return self.latency_reference.split(":", 1)[0] if self.latency_reference else None

    @property
    def reference_steady(self) -> bool:
        """Whether the reference row was measured steadily: p90 within STEADY x p50. A source model whose
        runtime stalls on a busy machine (PyTorch's threads: p50 0.6 ms, p90 96 ms seen here) is no yardstick."""
        p50, p90 = self.reference_p50_ms, self.reference_p90_ms
        return bool(p50 and p90 and p90 <= STEADY * p50)

    def to_json(self) -> str:
        return json.dumps(_rounded(self.to_dict()), indent=2, sort_keys=True) + "\n"


@dataclass
class Side:
    """A snapshot and where it came from: the folder or file (for messages and annotations) and notes."""

    snapshot: Snapshot
    where: str
    folder: Path | None = None  # the output folder, when read from one
    notes: list[str] = field(default_factory=list)


def _rounded(value: Any) -> Any:
    """Figures to 6 significant digits: a baseline diff shows what changed, not float noise."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def variant_of(path: str, precision: str) -> str:
    """The precision as the file name spells it: `m.int8-uint8io.tflite` -> int8-uint8io; else the precision."""
    parts = Path(path).name.split(".")
    tag = parts[-2] if len(parts) >= 3 else ""
    return tag if precision and tag.startswith(precision) else precision


# ---------------------------------------------------------------- a manifest (+ bench.json) -> Snapshot


def _tpu(report: dict[str, Any]) -> TpuFacts | None:
    """Coverage from a manifest's `extra.edgetpu`: the compiler's op counts where it ran, else the pre-flight's."""
    if not report:
        return None
    compiler = as_dict(report.get("compiler"))
    ops_total, ops_on = as_int(compiler.get("ops_total")), as_int(compiler.get("ops_on_tpu"))
    source = "edgetpu_compiler"
    if not (ops_total and ops_on is not None):
        ops_total, ops_on, source = as_int(report.get("ops_total")), as_int(report.get("ops_on_tpu")), "pre-flight"
    frac = ops_on / ops_total if ops_total and ops_on is not None and source == "edgetpu_compiler" else \
        as_float(report.get("ops_on_tpu_fraction"))
    if frac is None and ops_total and ops_on is not None:
        frac = ops_on / ops_total
    first = as_dict(report.get("first_unsupported"))
    if frac is None and as_float(report.get("macs_on_tpu_fraction")) is None:
        return None
    return TpuFacts(ops_on_tpu_fraction=frac, macs_on_tpu_fraction=as_float(report.get("macs_on_tpu_fraction")),
                    partition_index=as_int(first.get("index")) if first else None,
                    partition_op=as_str(first.get("op")) or None if first else None, source=source)


def _artifact(entry: Any, n: int, where: str) -> Facts:
    if not isinstance(entry, dict) or not as_str(entry.get("format")) or not as_str(entry.get("precision")):
        raise UsageError(f"{where}: artifact #{n} is not an edgekit artifact entry (no format/precision).",
                         hint="Pass the manifest.json that `edgekit convert` wrote, unedited.")
    fmt, precision, path = entry["format"], entry["precision"], as_str(entry.get("path"))
    fid = as_dict(entry.get("fidelity"))
    failure = as_dict(entry.get("failure"))
    variant = variant_of(path, precision)
    return Facts(key=f"{fmt} {variant}", format=fmt, precision=precision, variant=variant, path=path,
                 status="failed" if entry.get("status") == "failed" else "ok",
                 failure=(as_str(failure.get("message")) or "failed") if entry.get("status") == "failed" else None,
                 size_bytes=as_int(entry.get("size_bytes")), sha256=as_str(entry.get("sha256")),
                 top1_agreement=as_float(fid.get("top1_agreement")), accuracy=as_float(fid.get("accuracy")),
                 reference_accuracy=as_float(fid.get("reference_accuracy")),
                 fidelity_passed=as_bool(fid.get("passed")) if fid else None,
                 fidelity_failures=[str(x) for x in as_list(fid.get("failures"))[:20]],
                 detection=DetectionFacts.of_fidelity(fid),
                 edgetpu=_tpu(as_dict(as_dict(entry.get("extra")).get("edgetpu"))))


def from_manifest(data: Any, where: str) -> Snapshot:
    """The manifest facts (no file inspected, no latency) of manifest JSON DATA read from WHERE."""
    if not isinstance(data, dict) or not isinstance(data.get("artifacts"), list):
        raise UsageError(f"{where} is not an edgekit manifest (no 'artifacts' list).",
                         hint="Pass a conversion's output folder or its manifest.json.")
    version = as_int(data.get("manifest_version"))
    from edgekit.artifact import MANIFEST_VERSION

    if version is not None and version > MANIFEST_VERSION:
        raise UsageError(f"{where} is manifest version {version}, newer than this edgekit reads ({MANIFEST_VERSION}).",
                         hint="Upgrade edgekit.")
    arts = [_artifact(e, i, where) for i, e in enumerate(data["artifacts"], 1)]
    seen: dict[str, int] = {}
    for f in arts:  # two artifacts of one format and variant (unusual): told apart by file name
        seen[f.key] = seen.get(f.key, 0) + 1
        if seen[f.key] > 1:
            f.key = f"{f.key} ({Path(f.path).name})"
    src = as_dict(data.get("source"))
    return Snapshot(source_path=as_str(src.get("path")), source_sha256=as_str(src.get("sha256")), artifacts=arts)


def _inspect(facts: list[Facts], folder: Path, notes: list[str]) -> None:
    """MACs, parameters and operator types of each inspectable artifact file (edgekit inspect), into FACTS."""
    from edgekit.check.compute import read_compute
    from edgekit.formats import inspectable

    files = [(f.key, folder / f.path) for f in facts if inspectable(f.format)]
    found = read_compute(files)
    for f in facts:
        got = found.get(f.key)
        if got is None:
            continue
        if "error" in got:
            notes.append(f"{f.key}: operators and MACs not read ({got['error']})")
            continue
        f.macs, f.params, f.ops = as_int(got.get("macs")), as_int(got.get("params")), \
            [str(o) for o in as_list(got.get("ops"))]


def _reference_row(rows: list[dict[str, Any]], reference: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The row bench's speed-ups are against (the source model, else the fp32 artifact) and its description."""
    ok = [r for r in rows if r.get("status") == "ok" and as_float(r.get("p50_ms"))]
    src = [r for r in ok if as_str(r.get("label")).startswith("source")]
    if src:
        r = src[0]
        return r, f"source model: {r.get('label')} on {r.get('runtime')}/{r.get('device')}"
    label = as_str(reference.get("label"))
    for r in ok:
        if f"{r.get('label')} on {r.get('runtime')}/{r.get('device')}" == label:
            return r, f"fp32 artifact: {label}"
    return None, None


def _ratio(a: Any, b: Any) -> float | None:
    a, b = as_float(a), as_float(b)
    return a / b if a is not None and b else None


def add_bench(snapshot: Snapshot, bench: Any, where: str, notes: list[str]) -> None:
    """Latency rows of bench.json BENCH into SNAPSHOT's artifacts (matched by file name and sha256)."""
    if not isinstance(bench, dict) or not isinstance(bench.get("rows"), list):
        raise UsageError(f"{where} is not an edgekit bench report (no 'rows' list).",
                         hint="Pass the folder `edgekit bench` wrote into (bench/bench.json), or leave it out.")
    from edgekit.bench_report import SCHEMA_VERSION

    version = as_int(bench.get("schema_version"))
    if version is not None and version > SCHEMA_VERSION:
        raise UsageError(f"{where} is bench schema {version}, newer than this edgekit reads ({SCHEMA_VERSION}).")
    rows = [r for r in bench["rows"] if isinstance(r, dict)]
    ref, described = _reference_row(rows, as_dict(bench.get("reference")))
    snapshot.latency_reference = described
    if ref:
        snapshot.reference_p50_ms, snapshot.reference_p90_ms = as_float(ref.get("p50_ms")), as_float(ref.get("p90_ms"))
    measured_sha = {Path(as_str(as_dict(r.get("artifact")).get("path"))).name: as_str(as_dict(r.get("artifact"))
                    .get("sha256")) for r in as_list(bench.get("results")) if isinstance(r, dict)}
    by_name = {Path(f.path).name: f for f in snapshot.artifacts if f.path}
    stale: list[str] = []
    for r in rows:
        facts = by_name.get(Path(as_str(r.get("path"))).name)
        if facts is None or r.get("status") != "ok" or as_float(r.get("p50_ms")) is None:
            continue
        sha = measured_sha.get(Path(as_str(r.get("path"))).name)
        if sha and facts.sha256 and sha != facts.sha256:
            stale.append(facts.key)
            continue
        facts.latency.append(Latency(
            runtime=as_str(r.get("runtime")), device=as_str(r.get("device")), p50_ms=as_float(r.get("p50_ms")),
            p90_ms=as_float(r.get("p90_ms")),
            p50_vs_ref=_ratio(r.get("p50_ms"), ref.get("p50_ms")) if ref else None,
            p90_vs_ref=_ratio(r.get("p90_ms"), ref.get("p90_ms")) if ref else None))
    if stale:
        notes.append(f"{where} measured other files than the manifest lists (sha256 differs) for "
                     f"{', '.join(sorted(set(stale)))}: their latency is not compared; re-run `edgekit bench`")


def from_folder(target: Path, inspect: bool = True) -> Side:
    """The facts of a conversion's output folder (or its manifest file), with bench/bench.json when present."""
    manifest = target / "manifest.json" if target.is_dir() else target
    if target.is_dir() and not manifest.is_file():
        raise UsageError(f"{target} holds no manifest.json.", hint="Pass the output folder of `edgekit convert`.")
    snap = from_manifest(read_json(manifest, "manifest"), str(manifest))
    folder = manifest.parent
    side = Side(snapshot=snap, where=str(target), folder=folder)
    present: list[Facts] = []
    for facts in snap.artifacts:
        if facts.status != "ok":
            continue
        file = folder / facts.path if facts.path else None
        if file is None or not file.resolve().is_relative_to(folder.resolve()):
            facts.status, facts.failure = "missing", f"its path {facts.path!r} is not inside {folder}"
        elif not file.exists():
            facts.status, facts.failure = "missing", f"the manifest lists {facts.path}, which is not in {folder}"
        else:
            present.append(facts)
    if inspect:
        _inspect(present, folder, side.notes)
    bench = folder / "bench" / "bench.json"
    if bench.is_file():
        add_bench(snap, read_json(bench, "bench report"), str(bench), side.notes)
    else:
        side.notes.append(f"no bench report at {bench}: latency is not compared (run `edgekit bench {target}`)")
    return side


def from_baseline_data(data: Any, where: str) -> Snapshot:
    """A baseline JSON (or a manifest, read for its manifest facts) already parsed from WHERE."""
    if isinstance(data, dict) and data.get("kind") == BASELINE_KIND:
        version = as_int(data.get("version"))
        if version is None or version > BASELINE_VERSION:
            raise UsageError(f"{where} is baseline version {data.get('version')!r}; this edgekit reads "
                             f"{BASELINE_VERSION}.", hint="Upgrade edgekit, or write the baseline again.")
        if not isinstance(data.get("artifacts"), list) or not all(isinstance(a, dict) for a in data["artifacts"]):
            raise UsageError(f"{where} is a baseline without an 'artifacts' list.")
        return _typed(data, where)
    if isinstance(data, dict) and "artifacts" in data:
        return from_manifest(data, where)
    raise UsageError(f"{where} is neither an edgekit baseline nor a manifest.",
                     hint="Write a baseline with `edgekit check OUT --baseline FILE --update-baseline`.")


def _typed(data: dict[str, Any], where: str) -> Snapshot:
    """A baseline's JSON as a Snapshot, each figure type-checked (a hand-edited file may hold anything)."""
    arts: list[Facts] = []
    for n, a in enumerate(data["artifacts"], 1):
        if not as_str(a.get("key")):
            raise UsageError(f"{where}: baseline artifact #{n} has no key.")
        tpu = as_dict(a.get("edgetpu"))
        arts.append(Facts(
            key=a["key"], format=as_str(a.get("format")), precision=as_str(a.get("precision")),
            variant=as_str(a.get("variant")), path=as_str(a.get("path")), status=as_str(a.get("status"), "ok"),
            failure=as_str(a.get("failure")) or None, size_bytes=as_int(a.get("size_bytes")),
            sha256=as_str(a.get("sha256")), top1_agreement=as_float(a.get("top1_agreement")),
            accuracy=as_float(a.get("accuracy")), reference_accuracy=as_float(a.get("reference_accuracy")),
            fidelity_passed=as_bool(a.get("fidelity_passed")),
            fidelity_failures=[str(x) for x in as_list(a.get("fidelity_failures"))],
            detection=DetectionFacts.read(a.get("detection")),
            macs=as_int(a.get("macs")), params=as_int(a.get("params")),
            ops=[str(x) for x in a["ops"]] if isinstance(a.get("ops"), list) else None,
            edgetpu=TpuFacts(ops_on_tpu_fraction=as_float(tpu.get("ops_on_tpu_fraction")),
                             macs_on_tpu_fraction=as_float(tpu.get("macs_on_tpu_fraction")),
                             partition_index=as_int(tpu.get("partition_index")),
                             partition_op=as_str(tpu.get("partition_op")) or None,
                             source=as_str(tpu.get("source"), "pre-flight")) if tpu else None,
            latency=[Latency(runtime=as_str(r.get("runtime")), device=as_str(r.get("device")),
                             p50_ms=as_float(r.get("p50_ms")), p90_ms=as_float(r.get("p90_ms")),
                             p50_vs_ref=as_float(r.get("p50_vs_ref")), p90_vs_ref=as_float(r.get("p90_vs_ref")))
                     for r in as_list(a.get("latency")) if isinstance(r, dict)]))
    return Snapshot(source_path=as_str(data.get("source_path")), source_sha256=as_str(data.get("source_sha256")),
                    latency_reference=as_str(data.get("latency_reference")) or None,
                    reference_p50_ms=as_float(data.get("reference_p50_ms")),
                    reference_p90_ms=as_float(data.get("reference_p90_ms")), artifacts=arts)


def load_baseline(spec: str) -> Side:
    """The baseline named by SPEC: `git:REV:PATH`, an output folder, or a baseline (or manifest) JSON file."""
    from edgekit.check.files import git_show

    if spec.startswith("git:"):
        text, where = git_show(spec)
        return Side(snapshot=from_baseline_data(parse_json(text, where), where), where=where)
    p = Path(spec)
    if p.is_dir():
        return from_folder(p)
    return Side(snapshot=from_baseline_data(read_json(p, "baseline"), str(p)), where=str(p))


__all__ = ["BASELINE_KIND", "BASELINE_VERSION", "Facts", "Latency", "Side", "Snapshot", "TpuFacts", "add_bench",
           "from_baseline_data", "from_folder", "from_manifest", "load_baseline", "variant_of"]
