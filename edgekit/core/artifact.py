"""The records that cross module borders: Artifact, SourceInfo and Manifest (with TensorSpec from
edgekit.core.tensors and Fidelity from edgekit.core.fidelity, re-exported here as parts of an Artifact).

All are plain data that round-trip to JSON. `manifest.json` is a public interface for CI users:
fields may be added, never renamed or removed without bumping MANIFEST_VERSION.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from edgekit.core.errors import UsageError
from edgekit.core.fidelity import Fidelity, OutputFidelity
from edgekit.core.filedoc import as_dict, as_float, as_int, as_list, as_str, gate_version, read_json
from edgekit.core.fsutil import atomic_write_json
from edgekit.core.records import Record
from edgekit.core.reproducible import VARIES_BETWEEN_RUNS
from edgekit.core.tensors import QuantParams, TensorSpec

MANIFEST_VERSION = 1


@dataclass
class ArtifactFailure(Record):
    """Why an artifact was not made: the step (or "validate"), the op where known, the message and the hint."""

    step: str | None = None
    message: str = ""
    hint: str | None = None
    op: str | None = None
    error: str = ""  # the edgekit error class: ConversionError, RuntimeFailure, UsageError ...
    exit_code: int = 0  # what the run would have exited with had this been the only artifact

    @classmethod
    def of(cls, exc: Any, step: str | None) -> ArtifactFailure:
        """From an EdgekitError raised while making (or validating) the artifact."""
        return cls(step=getattr(exc, "step", None) or step, message=exc.message, hint=exc.hint,
                   op=getattr(exc, "op", None), error=type(exc).__name__, exit_code=int(exc.exit_code))


@dataclass
class DiagnosisRun(Record):
    """What the int8 diagnosis after validation (edgekit.quantize.explain) added to an artifact, typed.

    Set on the artifact before the manifest is written, never edited into its serialized `extra`. The manifest
    keeps the v1 keys: `extra.diagnosis_seconds`, `diagnosis_same_as`, `diagnosis_note`, `diagnosis_error`,
    `noise_agreement_error`, and the input-noise figure inside `extra.int8_recipe` (the recipe's own field).
    """

    seconds: float | None = None  # the diagnosis's time, part of the artifact's `seconds`
    same_as: str | None = None  # the artifact whose diagnosis this one shares (same calibrated model)
    note: str | None = None  # why it shares it where the models differ (Edge TPU graph fixes)
    error: str | None = None  # why the diagnosis could not run (an EdgekitError's message): advice, not a failure
    noise_agreement_error: str | None = None  # why the fp32 input-noise agreement could not be measured
    noise_agreement: float | None = None  # that agreement, measured after validation for a named recipe ...
    noise_measured_on: str | None = None  # ... on this artifact's float twin, or the run's first one

    # manifest v1 key in `extra` of each field written there (the noise figure goes into `int8_recipe`)
    KEYS: ClassVar[dict[str, str]] = {
        "seconds": "diagnosis_seconds", "same_as": "diagnosis_same_as", "note": "diagnosis_note",
        "error": "diagnosis_error", "noise_agreement_error": "noise_agreement_error"}

    def write(self, extra: dict[str, Any]) -> dict[str, Any]:
        """EXTRA with these facts under their manifest keys (a copy; None fields are not written)."""
        out = dict(extra)
        out.update({key: getattr(self, name) for name, key in self.KEYS.items() if getattr(self, name) is not None})
        recipe = out.get("int8_recipe")
        if self.noise_agreement is not None and isinstance(recipe, dict):
            out["int8_recipe"] = {**recipe, "float_input_noise_agreement": self.noise_agreement,
                                  "float_input_noise_measured_on": self.noise_measured_on}
        return out

    @classmethod
    def read(cls, extra: dict[str, Any]) -> tuple[DiagnosisRun, dict[str, Any]]:
        """The facts a manifest's EXTRA holds, and EXTRA without their keys (the noise figure stays in the recipe)."""
        run = cls.from_dict({name: extra[key] for name, key in cls.KEYS.items() if key in extra})
        return run, {k: v for k, v in extra.items() if k not in cls.KEYS.values()}


@dataclass
class Artifact:
    """One converted model file and everything known about it."""

    path: str  # relative to the manifest's folder once written
    format: str  # a key of edgekit.core.formats.FORMATS
    precision: str  # a key of edgekit.core.precisions.PRECISIONS
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    size_bytes: int
    sha256: str
    parent: str | None = None  # the intermediate it was made from (e.g. "onnx fp32")
    fidelity: Fidelity | None = None
    seconds: float = 0.0
    # Format-specific reports that other commands read: "edgetpu" (pre-flight / compiler),
    # "io_dtype", "steps" (the chain that made it) ...
    extra: dict[str, Any] = field(default_factory=dict)
    # "failed": the artifact was not made or did not load; `failure` says where and why, no file was published
    status: Literal["ok", "failed"] = "ok"
    failure: ArtifactFailure | None = None
    # the int8 diagnosis's facts (edgekit.quantize.explain), written into `extra` by to_dict
    diagnosis_run: DiagnosisRun = field(default_factory=DiagnosisRun)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        del d["diagnosis_run"]
        d["inputs"] = [t.to_dict() for t in self.inputs]
        d["outputs"] = [t.to_dict() for t in self.outputs]
        d["failure"] = self.failure.to_dict() if self.failure is not None else None
        d["extra"] = self.diagnosis_run.write(d["extra"])
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Artifact:
        """One manifest entry; a field of the wrong type is no value (edgekit.core.records), its default instead.

        The caller (Manifest.from_dict) has checked that D is a table with a format and a precision; a
        malformed tensor spec is a ValueError / TypeError / KeyError, which Manifest.read makes bad input.
        """
        fid, failure = d.get("fidelity"), d.get("failure")
        diagnosis_run, extra = DiagnosisRun.read(dict(as_dict(d.get("extra"))))
        return cls(
            path=as_str(d.get("path")),
            format=d["format"],
            precision=d["precision"],
            inputs=[TensorSpec.from_dict(t) for t in as_list(d.get("inputs"))],
            outputs=[TensorSpec.from_dict(t) for t in as_list(d.get("outputs"))],
            size_bytes=as_int(d.get("size_bytes")) or 0,  # 0: not recorded
            sha256=as_str(d.get("sha256")),
            parent=as_str(d.get("parent")) or None,
            fidelity=Fidelity.from_dict(fid) if isinstance(fid, dict) and fid else None,
            seconds=as_float(d.get("seconds")) or 0.0,
            extra=extra,
            status="failed" if d.get("status") == "failed" else "ok",
            failure=ArtifactFailure.from_dict(failure) if isinstance(failure, dict) else None,
            diagnosis_run=diagnosis_run,
        )

    @property
    def io_dtype(self) -> str | None:
        """The I/O type a TFLite step chose (manifest `extra.io_dtype`); None where the step had no choice."""
        io = self.extra.get("io_dtype")
        return io if isinstance(io, str) and io else None

    @property
    def variant(self) -> str:
        """The precision, and for int8 with other than int8 I/O that I/O: "int8-uint8io" (what the file name says).

        Taken from the entry's own fields, never parsed from the file name, so a renamed file is the same variant.
        """
        io = self.io_dtype
        return f"{self.precision}-{io}io" if self.precision == "int8" and io and io != "int8" else self.precision

    @property
    def label(self) -> str:
        return f"{self.format} {self.precision}"


@dataclass
class SourceInput(Record):
    """The source model's input as loaded: name, shape (batch first, -1 where dynamic), dtype."""

    name: str = ""
    shape: list[int] = field(default_factory=list)
    dtype: str = ""


@dataclass
class SourceInfo(Record):
    """What a conversion started from (manifest.json `source`): the file, its digest and how it was read."""

    path: str = ""
    sha256: str = ""  # of the file, or of a SavedModel folder (fsutil.sha256_tree)
    kind: str = ""  # torch-exported, torchscript, torch-state-dict, torch-pickle, onnx, keras, h5, savedmodel ...
    layout: str | None = None  # NCHW | NHWC: the layout of its 4-D image input
    input: SourceInput | None = None
    inputs: list[SourceInput] = field(default_factory=list)  # every input, where there are several (issue 15)
    outputs: list[str] = field(default_factory=list)  # its output names, the names validation matches by
    # what edgekit changed in its own copy of the source before any step: dims pinned, opset raised (issue 15)
    changes: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, d: Any) -> SourceInfo:
        """From a manifest's `source` value, which a hostile or foreign file may have made anything."""
        if not isinstance(d, dict):
            return cls()
        info = cls.from_dict({k: v for k, v in d.items() if k not in ("input", "inputs")})
        info.inputs = [SourceInput.from_dict(i) for i in d.get("inputs") or [] if isinstance(i, dict)]
        inp = d.get("input")
        if isinstance(inp, dict):
            shape = inp.get("shape")
            info.input = SourceInput(name=str(inp.get("name", "")), dtype=str(inp.get("dtype", "")),
                                     shape=[int(x) for x in shape if isinstance(x, int)] if isinstance(shape, list)
                                     else [])
        return info


@dataclass
class RunFacts(Record):
    """What the conversion run cost: wall time and peak memory (manifest.json `run`)."""

    seconds: float = 0.0  # the whole run: loading, calibration data, every step, every validation
    peak_rss_bytes: int | None = None  # edgekit's own process
    # getrusage's largest child: on Linux a child's figure starts at its parent's peak when it execs, so it is at
    # least peak_rss_bytes then (peak_tree_rss_bytes is what the children held)
    peak_rss_children_bytes: int | None = None
    # edgekit and its child processes together, sampled (edgekit.measure.run_meter): the run's peak on the machine
    peak_tree_rss_bytes: int | None = None
    # seconds of the phases outside the artifacts' steps, validations and diagnoses (load, calibration_data,
    # reference): with those, the manifest accounts for the whole run
    phases: dict[str, float] = field(default_factory=dict)


@dataclass
class Preprocessing(Record):
    """How a picture becomes the model's input, as edgekit's calibration and validation made it.

    manifest.json `preprocessing`: what `edgekit serve` repeats on an uploaded image so that a client
    never needs to know about layouts, normalisation or int8 scales: decode, convert to COLOR
    ("L" grey or "RGB"), resize to SIZE [H, W] with RESIZE, multiply by SCALE, then (x - mean) / std
    per channel; the artifact's own input spec says the layout (NCHW / NHWC) and the quantization.
    `known` is False where the calibration data were float arrays edgekit did not preprocess.
    """

    color: str = "RGB"
    size: list[int] = field(default_factory=list)
    scale: float = 1 / 255
    mean: list[float] | None = None
    std: list[float] | None = None
    resize: str = "bilinear"
    known: bool = True

    @classmethod
    def of_conversion(cls, options: dict[str, Any], source: SourceInfo) -> Preprocessing | None:
        """From a run's options and source (also for manifests written before this record existed)."""
        shape = source.input.shape if source.input is not None else []
        if len(shape) not in (3, 4):
            return None
        if len(shape) == 3:
            c, h, w = 1, shape[1], shape[2]
        elif (source.layout or "NCHW").upper() == "NHWC":
            h, w, c = shape[1], shape[2], shape[3]
        else:
            c, h, w = shape[1], shape[2], shape[3]
        if c not in (1, 3):
            return None
        calib = str(options.get("calib") or "")
        floats = calib.lower().endswith((".npy", ".npz"))  # may hold preprocessed floats: not known for sure
        mean, std = ([float(x) for x in v] if isinstance(v, (list, tuple)) else None
                     for v in (options.get("mean"), options.get("std")))
        return cls(color="L" if c == 1 else "RGB", size=[int(h), int(w)], mean=mean, std=std, known=not floats)


@dataclass
class Manifest:
    """What one conversion run produced, from what, with which tools and options."""

    source: SourceInfo
    artifacts: list[Artifact]
    options: dict[str, Any] = field(default_factory=dict)
    tool_versions: dict[str, str | None] = field(default_factory=dict)
    edgekit_version: str = ""
    manifest_version: int = MANIFEST_VERSION
    created: str = ""
    warnings: list[str] = field(default_factory=list)
    run: RunFacts | None = None
    preprocessing: Preprocessing | None = None  # how images become inputs (edgekit serve's /classify)
    # the only fields that differ between two runs of one conversion (edgekit.core.reproducible)
    varies_between_runs: list[str] = field(default_factory=lambda: list(VARIES_BETWEEN_RUNS))

    def to_dict(self) -> dict[str, Any]:
        return {
            "manifest_version": self.manifest_version,
            "edgekit_version": self.edgekit_version,
            "created": self.created,
            "varies_between_runs": self.varies_between_runs,
            "source": self.source.to_dict(),
            "tool_versions": self.tool_versions,
            "options": self.options,
            "artifacts": [a.to_dict() for a in self.artifacts],
            "warnings": self.warnings,
            "run": self.run.to_dict() if self.run is not None else None,
            "preprocessing": self.preprocessing.to_dict() if self.preprocessing is not None else None,
        }

    @classmethod
    def from_dict(cls, d: Any, where: str = "The manifest") -> Manifest:
        """A parsed manifest.json, checked as hostile input: its shape, its version (the one gate), each entry.

        UsageError where it is no manifest, of a newer version, or an entry has no format/precision; a
        figure of the wrong type is no figure. WHERE names the file in messages.
        """
        if not isinstance(d, dict) or not isinstance(d.get("artifacts"), list):
            raise UsageError(f"{where} is not an edgekit manifest (no 'artifacts' list).",
                             hint="Pass a conversion's output folder or the manifest.json `edgekit convert` wrote.")
        version = gate_version(d, "manifest_version", MANIFEST_VERSION, where, "manifest version")
        for n, a in enumerate(d["artifacts"], 1):
            if not isinstance(a, dict) or not as_str(a.get("format")) or not as_str(a.get("precision")):
                raise UsageError(f"{where} is not a valid edgekit manifest: artifact #{n} is not an edgekit "
                                 f"artifact entry (no format/precision).",
                                 hint="Pass the manifest.json that `edgekit convert` wrote, unedited.")
        options, tools, varies = d.get("options"), d.get("tool_versions"), d.get("varies_between_runs")
        return cls(
            source=SourceInfo.read(d.get("source")),
            artifacts=[Artifact.from_dict(a) for a in d["artifacts"]],
            options=dict(as_dict(options)),
            tool_versions={str(k): v if isinstance(v, str) else None for k, v in as_dict(tools).items()},
            edgekit_version=as_str(d.get("edgekit_version")),
            manifest_version=version,
            created=as_str(d.get("created")),
            varies_between_runs=([str(v) for v in varies] if isinstance(varies, list) else list(VARIES_BETWEEN_RUNS)),
            warnings=[str(w) for w in as_list(d.get("warnings"))],
            run=RunFacts.from_dict(d["run"]) if isinstance(d.get("run"), dict) else None,
            preprocessing=(Preprocessing.from_dict(d["preprocessing"]) if isinstance(d.get("preprocessing"), dict)
                           else None),
        )

    def write(self, path: str | Path) -> Path:
        if not self.created:
            self.created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        return atomic_write_json(path, self.to_dict())

    @classmethod
    def read(cls, path: str | Path) -> Manifest:
        """Read a manifest file, or the manifest.json inside a folder: the one reader `check`, `bench`, `serve`
        and `export` share (edgekit.core.filedoc: size cap, bounded nesting, the version gate)."""
        p = Path(path)
        if p.is_dir():
            p = p / "manifest.json"
        if not p.is_file():
            raise UsageError(
                f"No manifest at {p}.",
                hint="Pass the manifest.json (or the output folder) that `edgekit convert` wrote.",
            )
        return cls.parse(read_json(p, "manifest"), str(p))

    @classmethod
    def parse(cls, data: Any, where: str) -> Manifest:
        """from_dict for JSON parsed from a file (or a git revision): a malformed field is bad input, not a crash."""
        try:  # a hand-edited or hostile file: a field of the wrong kind is bad input, not a crash (issue 12)
            return cls.from_dict(data, where)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError) as exc:
            raise UsageError(f"{where} is not a valid edgekit manifest: {type(exc).__name__}: {exc}.",
                             hint="Pass the manifest.json `edgekit convert` wrote, unedited.") from exc

    def resolve(self, artifact: Artifact, manifest_path: str | Path) -> Path:
        """Absolute path of ARTIFACT, whose path is relative to the manifest's folder.

        UsageError for a path that leads out of that folder (absolute, '..', a link to elsewhere): a manifest is
        hostile input, and what reads it would otherwise load, export or copy to a --remote device any file it
        names (`edgekit check` judges such an artifact missing, edgekit.check.snapshot)."""
        base = Path(manifest_path)
        base = base if base.is_dir() else base.parent
        target = (base / artifact.path).resolve()
        if not target.is_relative_to(base.resolve()):
            raise UsageError(f"The manifest in {base} lists the artifact {artifact.path!r}, which is not inside its "
                             "folder; edgekit reads a run's artifacts from its own folder only.",
                             hint="Pass the output folder `edgekit convert` wrote, with its manifest.json unedited.")
        return target


# TensorSpec, QuantParams, Fidelity and OutputFidelity live in their own modules and are parts of an Artifact:
# `from edgekit.core.artifact import ...` reaches every record of a manifest.
__all__ = ["MANIFEST_VERSION", "Artifact", "ArtifactFailure", "DiagnosisRun", "Fidelity", "Manifest",
           "OutputFidelity", "Preprocessing", "QuantParams", "RunFacts", "SourceInfo", "SourceInput", "TensorSpec"]
