"""The records of `edgekit bench`: its settings, one table row, the speed-up reference, the report.

`BenchReport.to_dict()` is bench.json; fields may be added, never renamed or removed without bumping
SCHEMA_VERSION. `check` and CI read bench.json back with `BenchReport.read` / `from_dict`, the one reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from edgekit.core.artifact import SourceInfo
from edgekit.core.errors import UsageError
from edgekit.core.filedoc import gate_version, read_json
from edgekit.core.records import Record
from edgekit.measure.child import Status
from edgekit.measure.profile import REQUIRED as PROFILE_REQUIRED
from edgekit.measure.profile import ProfileResult
from edgekit.measure.settings import MeasureSettings

SCHEMA_VERSION = 1


@dataclass
class BenchSettings(MeasureSettings):
    """How each row is measured (MeasureSettings, with shorter defaults: a table has many rows), and which rows."""

    runs: int = 50
    min_seconds: float = 0.5
    warmup: int = 5
    runtimes: list[str] | None = None  # only these runtimes; None: every one that loads the format
    devices: list[str] | None = None  # only these devices; None: the CPU and each accelerator here
    isolate: bool = True  # one process per row
    include_source: bool = True  # a row for the source model where a runtime here runs it
    timeout: float = 600.0  # seconds per row in its own process


@dataclass
class BenchRow(Record):
    """One line of the table: what ran where, its fidelity (from the manifest) and its speed."""

    label: str = ""  # "onnx int8", "source (torch-exported)"
    format: str = ""
    precision: str | None = None
    runtime: str = ""
    device: str = ""
    host: str | None = None  # the --remote device (user@host:port) it was measured on; None: this machine
    path: str = ""
    sha256: str = ""  # the file measured (its ProfileResult's artifact.sha256): serve trusts a row of this file only
    size_bytes: int | None = None
    top1_agreement: float | None = None
    accuracy: float | None = None
    # The rest of the manifest's figures the table's agreement column reads (edgekit.report.fidelity.FIGURES):
    # the kind its worst output was judged as, and that kind's measure; detectors' box figures and mAP
    kind: str | None = None
    pixel_agreement: float | None = None
    step_agreement: float | None = None
    relative_error: float | None = None
    detection_recall: float | None = None
    detection_precision: float | None = None
    box_iou: float | None = None
    score_change: float | None = None
    detections: int | None = None
    map50: float | None = None  # the source model's row: the source's own mAP50 (as accuracy is its accuracy)
    reference_map50: float | None = None
    map50_95: float | None = None
    reference_map50_95: float | None = None
    # probability maps (the mask kind): pixels on the same side of the threshold, regions kept (edgekit.fidelity.mask)
    mask_agreement: float | None = None
    region_recall: float | None = None
    region_precision: float | None = None
    regions: int | None = None
    mask_threshold: float | None = None
    # landmarks (edgekit.fidelity.landmarks), an anchor head's keypoints, a presence score's decisions at 0.5
    landmark_error_px: float | None = None
    landmark_p95_px: float | None = None
    landmark_error_share: float | None = None
    landmark_p95_share: float | None = None
    keypoint_error_px: float | None = None
    keypoint_error_share: float | None = None
    score_agreement: float | None = None
    status: Status = "ok"
    note: str | None = None  # why not measured, or the ProfileResult's notes
    p50_ms: float | None = None
    p90_ms: float | None = None
    throughput_per_s: float | None = None
    joules_per_inference: float | None = None
    energy_estimated: bool = False
    speedup: float | None = None  # reference p50 / this row's p50


@dataclass
class Reference(Record):
    """The row speed-ups are against: what kind (source model or fp32 artifact), which row, its p50."""

    kind: str = ""
    label: str = ""
    p50_ms: float = 0.0


@dataclass
class BenchReport(Record):
    """bench.json: the rows, every row's full ProfileResult, and what the figures were measured on and with."""

    edgekit_version: str = ""
    manifest: str = ""  # the manifest.json benched (made up for a folder without one)
    source: SourceInfo = field(default_factory=SourceInfo)  # the manifest's source
    host: dict[str, Any] = field(default_factory=dict)  # edgekit.measure.devices.host_info()
    # one per --remote device: edgekit.remote.device.DeviceFacts, plus "reference", the row its speed-ups are against
    hosts: list[dict[str, Any]] = field(default_factory=list)
    settings: BenchSettings = field(default_factory=BenchSettings)
    reference: Reference | None = None
    rows: list[BenchRow] = field(default_factory=list)
    results: list[ProfileResult] = field(default_factory=list)
    energy_note: str | None = None  # why no row has an energy figure
    files: dict[str, str] = field(default_factory=dict)  # json, markdown, chart -> path
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        return {"schema_version": d.pop("schema_version"), **d}

    @classmethod
    def from_dict(cls, d: Any, where: str = "The bench report") -> BenchReport:
        """Read bench.json back as hostile input: UsageError for a file that is not one or of a newer schema
        (the version gate every edgekit file shares, edgekit.core.filedoc); a figure of the wrong type is no figure."""
        if not isinstance(d, dict) or not isinstance(d.get("rows"), list):
            raise UsageError(f"{where} is not an edgekit bench report (no 'rows' list).",
                             hint="Pass the folder `edgekit bench` wrote into (bench/bench.json), or leave it out.")
        gate_version(d, "schema_version", SCHEMA_VERSION, where, "bench schema")
        try:  # a hand-edited or hostile file: a field of the wrong kind is bad input, not a crash (issue 12)
            report = super().from_dict({k: v for k, v in d.items() if k != "results"})
            report.results = [r for r in map(_result, d.get("results") or []) if r is not None] \
                if isinstance(d.get("results"), list) else []
            return report
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
            raise UsageError(f"{where} is not a valid edgekit bench report: {type(exc).__name__}: {exc}.",
                             hint="Pass the bench.json `edgekit bench` wrote, unedited.") from exc

    @classmethod
    def read(cls, path: Path) -> BenchReport:
        """bench.json at PATH (edgekit.core.filedoc: size cap, bounded nesting), through from_dict."""
        return cls.from_dict(read_json(path, "bench report"), f"The bench report {path}")

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame, one column per BenchRow field (figures as numbers, not text).

        pandas is not a dependency of edgekit: MissingDependency with the pip line where it is not installed."""
        from edgekit.core._deps import require

        pandas = require("pandas", purpose="make a DataFrame of the bench rows")
        return pandas.DataFrame([row.to_dict() for row in self.rows], columns=[f.name for f in fields(BenchRow)])


def _result(d: Any) -> ProfileResult | None:
    """One row's full ProfileResult; None for a partial one (a hand-made report: the row's own figures still
    count). One that has every part but is malformed or of a newer schema is bad input, as the report is."""
    if not isinstance(d, dict) or any(k not in d for k in PROFILE_REQUIRED):
        return None
    return ProfileResult.from_dict(d)


__all__ = ["SCHEMA_VERSION", "BenchReport", "BenchRow", "BenchSettings", "Reference"]
