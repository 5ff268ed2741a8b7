"""What `check` compares: the facts of one conversion run, per artifact, from its files alone.

A `Snapshot` is read from a conversion's output folder (manifest.json, bench/bench.json when present,
and each artifact file through `edgekit inspect` for MACs, parameters and operator types), or from a
baseline JSON that `edgekit check --update-baseline` wrote from such a folder. The baseline is a
Snapshot's JSON: small, keys sorted, one artifact per entry, figures rounded, no timestamp, so that a
baseline committed to a repository changes only where the model did.

manifest.json and bench.json are read through their one typed reader (`Manifest.read`, `BenchReport.read`:
the version gate, hostile-input rules), never parsed here. Artifacts are matched across runs by format and
variant (`onnx int8`, `tflite int8-uint8io`), both taken from the manifest entry's own fields
(`Artifact.variant`), not from file names, so a renamed model still meets its baseline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgekit.check.detection import DetectionFacts
from edgekit.core.artifact import Artifact, Manifest
from edgekit.core.errors import UsageError
from edgekit.core.filedoc import (
    as_bool,
    as_dict,
    as_float,
    as_int,
    as_list,
    as_str,
    gate_version,
    parse_json,
    read_json,
)
from edgekit.core.records import Record

if TYPE_CHECKING:  # bench's records import the measuring code: loaded only where a bench.json is read
    from edgekit.measure.bench_report import BenchReport, BenchRow, Reference

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


# ---------------------------------------------------------------- a Manifest (+ BenchReport) -> Snapshot


def _tpu(report: dict[str, Any]) -> TpuFacts | None:
    """Coverage from a manifest's `extra.edgetpu` (EdgeTpuReport): the compiler's op counts where it ran, else
    the pre-flight's."""
    from edgekit.edgetpu.records import EdgeTpuReport

    if not report:
        return None
    tpu = EdgeTpuReport.read(report)
    if tpu is None:  # a table without a readable pre-flight (a hand-edited manifest): no facts, not a crash
        return None
    pf, log = tpu.preflight, tpu.compiler
    ops_total, ops_on, source = (log.ops_total, log.ops_on_tpu, "edgetpu_compiler") if log is not None else \
        (None, None, "")
    if not (ops_total and ops_on is not None):
        ops_total, ops_on, source = pf.ops_total, pf.ops_on_tpu, "pre-flight"
    frac = ops_on / ops_total if ops_total and ops_on is not None and source == "edgetpu_compiler" else \
        as_float(pf.ops_on_tpu_fraction)
    if frac is None and ops_total and ops_on is not None:
        frac = ops_on / ops_total
    first = pf.first_unsupported
    macs = as_float(pf.macs_on_tpu_fraction)
    if frac is None and macs is None:
        return None
    return TpuFacts(ops_on_tpu_fraction=frac, macs_on_tpu_fraction=macs,
                    partition_index=first.index if first else None,
                    partition_op=first.op or None if first else None, source=source)


def _artifact(art: Artifact) -> Facts:
    fid = art.fidelity
    failed = not art.ok
    return Facts(key=f"{art.format} {art.variant}", format=art.format, precision=art.precision, variant=art.variant,
                 path=art.path, status="failed" if failed else "ok",
                 failure=((art.failure.message if art.failure else "") or "failed") if failed else None,
                 size_bytes=art.size_bytes or None, sha256=art.sha256,
                 top1_agreement=as_float(fid.top1_agreement) if fid else None,
                 accuracy=as_float(fid.accuracy) if fid else None,
                 reference_accuracy=as_float(fid.reference_accuracy) if fid else None,
                 fidelity_passed=fid.passed if fid else None,
                 fidelity_failures=[str(x) for x in fid.failures[:20]] if fid else [],
                 detection=DetectionFacts.of_fidelity(fid),
                 edgetpu=_tpu(as_dict(art.extra.get("edgetpu"))))


def from_manifest(manifest: Manifest) -> Snapshot:
    """The manifest facts (no file inspected, no latency) of MANIFEST (read by Manifest.read / parse)."""
    arts = [_artifact(a) for a in manifest.artifacts]
    seen: dict[str, int] = {}
    for f in arts:  # two artifacts of one format and variant (unusual): told apart by file name
        seen[f.key] = seen.get(f.key, 0) + 1
        if seen[f.key] > 1:
            f.key = f"{f.key} ({Path(f.path).name})"
    return Snapshot(source_path=manifest.source.path, source_sha256=manifest.source.sha256, artifacts=arts)


def _inspect(facts: list[Facts], folder: Path, notes: list[str]) -> None:
    """MACs, parameters and operator types of each inspectable artifact file (edgekit inspect), into FACTS."""
    from edgekit.check.compute import read_compute
    from edgekit.core.formats import inspectable

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


def _reference_row(rows: list[BenchRow], reference: Reference | None) -> tuple[BenchRow | None, str | None]:
    """The row bench's speed-ups are against (the source model, else the fp32 artifact) and its description."""
    ok = [r for r in rows if r.status == "ok" and as_float(r.p50_ms)]
    src = [r for r in ok if r.label.startswith("source")]
    if src:
        r = src[0]
        return r, f"source model: {r.label} on {r.runtime}/{r.device}"
    label = reference.label if reference is not None else ""
    for r in ok:
        if f"{r.label} on {r.runtime}/{r.device}" == label:
            return r, f"fp32 artifact: {label}"
    return None, None


def _ratio(a: float | None, b: float | None) -> float | None:
    a, b = as_float(a), as_float(b)
    return a / b if a is not None and b else None


def add_bench(snapshot: Snapshot, bench: BenchReport, where: str, notes: list[str]) -> None:
    """Latency rows of BENCH (bench.json read by BenchReport.read) into SNAPSHOT's artifacts, matched by file
    name and sha256."""
    rows = bench.rows
    ref, described = _reference_row(rows, bench.reference)
    snapshot.latency_reference = described
    if ref:
        snapshot.reference_p50_ms, snapshot.reference_p90_ms = as_float(ref.p50_ms), as_float(ref.p90_ms)
    measured_sha = {Path(r.artifact.path).name: r.artifact.sha256 for r in bench.results}
    by_name = {Path(f.path).name: f for f in snapshot.artifacts if f.path}
    stale: list[str] = []
    for r in rows:
        facts = by_name.get(Path(r.path).name)
        if facts is None or r.status != "ok" or as_float(r.p50_ms) is None:
            continue
        sha = measured_sha.get(Path(r.path).name)
        if sha and facts.sha256 and sha != facts.sha256:
            stale.append(facts.key)
            continue
        facts.latency.append(Latency(
            runtime=r.runtime, device=r.device, p50_ms=as_float(r.p50_ms), p90_ms=as_float(r.p90_ms),
            p50_vs_ref=_ratio(r.p50_ms, ref.p50_ms) if ref else None,
            p90_vs_ref=_ratio(r.p90_ms, ref.p90_ms) if ref else None))
    if stale:
        notes.append(f"{where} measured other files than the manifest lists (sha256 differs) for "
                     f"{', '.join(sorted(set(stale)))}: their latency is not compared; re-run `edgekit bench`")


def from_folder(target: Path, inspect: bool = True) -> Side:
    """The facts of a conversion's output folder (or its manifest file), with bench/bench.json when present."""
    manifest = target / "manifest.json" if target.is_dir() else target
    if target.is_dir() and not manifest.is_file():
        raise UsageError(f"{target} holds no manifest.json.", hint="Pass the output folder of `edgekit convert`.")
    snap = from_manifest(Manifest.read(manifest))
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
        from edgekit.measure.bench_report import BenchReport

        add_bench(snap, BenchReport.read(bench), str(bench), side.notes)
    else:
        side.notes.append(f"no bench report at {bench}: latency is not compared (run `edgekit bench {target}`)")
    return side


def from_baseline_data(data: Any, where: str) -> Snapshot:
    """A baseline JSON (or a manifest, read for its manifest facts) already parsed from WHERE."""
    if isinstance(data, dict) and data.get("kind") == BASELINE_KIND:
        if "version" not in data:
            raise UsageError(f"{where} is a baseline without a version.", hint="Write the baseline again.")
        gate_version(data, "version", BASELINE_VERSION, where, "baseline version")
        if not isinstance(data.get("artifacts"), list) or not all(isinstance(a, dict) for a in data["artifacts"]):
            raise UsageError(f"{where} is a baseline without an 'artifacts' list.")
        return _typed(data, where)
    if isinstance(data, dict) and "artifacts" in data:
        return from_manifest(Manifest.parse(data, where))
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
           "from_baseline_data", "from_folder", "from_manifest", "load_baseline"]
