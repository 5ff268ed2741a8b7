"""The Edge TPU records that cross module borders: pre-flight report, compiler log, compile result.

They travel from `edgetpu/` to `inspect`, to the `edgetpu_compile` step and into the manifest
(`extra.edgetpu`), so each is a dataclass whose `to_dict()` gives exactly the JSON the manifest and
`edgekit inspect --json` have always carried (keys that were written only in some cases are still
written only then), and `from_dict()` reads that JSON back, keeping a value only where it has its
field's type (edgekit.core.records.fits: a manifest is hostile input). No imports from the rest of edgekit
but that leaf: the pre-flight, the log parser and the compiler wrapper all build these, and inspect reads them.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_type_hints

from edgekit.core.records import fits

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# Why the pre-flight puts an op where it does (rules.STATUS quotes the compiler's words for most of them).
OpCode = Literal[
    "mapped",
    "unsupported_op",
    "dynamic_shape",
    "dtype",
    "runtime_version",
    "nonconst_params",
    "rank",
    "limitation",
    "float_io",
    "after_partition",
]
# What keeps ops off the Edge TPU, one Problem per cause.
ProblemKind = Literal[
    "float_io",
    "dynamic_shape",
    "not_quantized",
    "int_tensors",
    "unsupported_activation",
    "unsupported_op",
    "runtime_version",
    "rank",
    "nonconst_params",
    "limitation",
    "transpose",
    "subgraphs",
]
# Where parse_log found the "Operator Count Status" table.
OperatorsSource = Literal["stdout", "log"]

_R = TypeVar("_R", bound="DataclassInstance")


def _flat(cls: type[_R], d: dict[str, Any], **nested: Any) -> _R:
    """CLS from the JSON D of a flat record: its own fields only (a manifest adds others), NESTED as given."""
    hints = get_type_hints(cls)
    own: dict[str, Any] = {}
    for f in fields(cls):
        if not f.init or f.name not in d or f.name in nested:
            continue
        if not fits(hints[f.name], d[f.name]):  # a wrong-typed value is none; a field without a default refuses
            if f.default is MISSING and f.default_factory is MISSING:
                raise TypeError(f"{cls.__name__}.{f.name} is {type(d[f.name]).__name__}, not {hints[f.name]}")
            continue
        own[f.name] = d[f.name]
    return cls(**own, **nested)


def _tables(value: Any) -> list[dict[str, Any]]:
    """The tables in a JSON list (a nested record list); anything else in it, or a non-list, is none."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


@dataclass
class PartitionPoint:
    """The first op the compiler cannot map: it and everything after it run on the CPU."""

    index: int
    op: str
    reason: str | None
    code: OpCode
    tried: str | None = None  # what edgekit's graph fixes do for such an op, and why this one is left (edgetpu.tried)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "op": self.op, "reason": self.reason, "code": self.code, "tried": self.tried}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PartitionPoint:
        return _flat(cls, d)


@dataclass
class PreflightOp:
    """The pre-flight's verdict on one op, in execution order."""

    index: int
    op: str
    mapped: bool
    reason: str | None
    code: OpCode
    macs: int
    # for an op after the partition point: its own verdict, had the mapping reached it
    own_reason: str | None = None
    own_code: OpCode | None = None
    caveat: str | None = None  # a documented caveat of a mapped op

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "index": self.index,
            "op": self.op,
            "mapped": self.mapped,
            "reason": self.reason,
            "code": self.code,
            "macs": self.macs,
        }
        if self.code == "after_partition":
            d["own_reason"] = self.own_reason
            d["own_code"] = self.own_code
        if self.caveat:
            d["caveat"] = self.caveat
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PreflightOp:
        return _flat(cls, d)


@dataclass
class Problem:
    """One cause that keeps ops off the Edge TPU, with the fix where one is known and its source."""

    kind: ProblemKind
    message: str
    suggestion: str
    ops: list[int]
    source: str
    blocking: bool = False  # the cause of the partition point

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": self.kind,
            "message": self.message,
            "suggestion": self.suggestion,
            "ops": list(self.ops),
            "source": self.source,
        }
        if self.blocking:
            d["blocking"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Problem:
        return _flat(cls, d)


_PREDICTED_KEYS = (
    "predicted",
    "compiled",
    "min_runtime",
    "ops_total",
    "ops_on_tpu",
    "ops_on_cpu",
    "ops_on_tpu_fraction",
    "macs_total",
    "macs_on_tpu",
    "macs_on_tpu_fraction",
    "first_unsupported",
    "ops",
    "problems",
    "suggestions",
    "rules_source",
    "summary",
)
_COMPILED_KEYS = (
    "predicted",
    "compiled",
    "ops_total",
    "ops_on_tpu",
    "macs_on_tpu_fraction",
    "first_unsupported",
    "edgetpu_custom_ops",
    "cpu_ops",
    "note",
)


@dataclass
class PreflightReport:
    """The pre-flight of one .tflite: a prediction (`predicted`), or, for a model that is already
    compiled (`compiled`), what it holds. The two cases carry different keys in JSON, as they always did.
    """

    predicted: bool
    compiled: bool
    ops_total: int
    ops_on_tpu: int | None  # None for a compiled model: the custom op hides how many source ops it holds
    min_runtime: int | None = None
    ops_on_cpu: int | None = None
    ops_on_tpu_fraction: float | None = None
    macs_total: int | None = None
    macs_on_tpu: int | None = None
    macs_on_tpu_fraction: float | None = None
    first_unsupported: PartitionPoint | None = None
    ops: list[PreflightOp] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    rules_source: str | None = None
    summary: str = ""
    # a compiled model only
    edgetpu_custom_ops: int | None = None
    cpu_ops: list[str] = field(default_factory=list)
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        keys = _COMPILED_KEYS if self.compiled and not self.predicted else _PREDICTED_KEYS
        out: dict[str, Any] = {}
        for key in keys:
            value = getattr(self, key)
            if key == "first_unsupported":
                value = value.to_dict() if value is not None else None
            elif key in ("ops", "problems"):
                value = [v.to_dict() for v in value]
            elif isinstance(value, list):
                value = list(value)
            out[key] = value
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PreflightReport:
        """Read back the JSON of `to_dict()` (e.g. a manifest's `extra.edgetpu`; extra keys are ignored)."""
        first = d.get("first_unsupported")
        return _flat(
            cls,
            d,
            first_unsupported=PartitionPoint.from_dict(first) if isinstance(first, dict) and first else None,
            ops=[PreflightOp.from_dict(e) for e in _tables(d.get("ops"))],
            problems=[Problem.from_dict(p) for p in _tables(d.get("problems"))],
        )


@dataclass
class OperatorRow:
    """One row of the compiler's "Operator  Count  Status" table."""

    op: str
    count: int
    status: str
    mapped: bool

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "count": self.count, "status": self.status, "mapped": self.mapped}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> OperatorRow:
        return _flat(cls, d)


@dataclass
class CompilerLog:
    """What one edgetpu_compiler run said (parse_log): the summary fields, the operator table, the verdict.

    Every summary field is None where the compiler did not print it. `stdout` and `compiler_path` are
    filled by `compile_model`, `log_path` and `seconds` by the step that publishes the log; each is
    left out of `to_dict()` until it is set, as those keys were absent from a bare parse.
    """

    compiler_version: str | None = None
    compile_ms: int | None = None
    input_model: str | None = None
    input_size_bytes: int | None = None
    output_model: str | None = None
    output_size_bytes: int | None = None
    on_chip_memory_bytes: int | None = None
    on_chip_memory_remaining_bytes: int | None = None
    on_chip_memory_available_bytes: int | None = None
    off_chip_memory_bytes: int | None = None
    subgraphs: int | None = None
    ops_total: int | None = None
    operation_log: str | None = None
    ops_on_tpu: int | None = None
    ops_on_cpu: int | None = None
    timeout_s: int | None = None
    operators: list[OperatorRow] = field(default_factory=list)
    operators_complete: bool = False  # False also where the table was cut short or one of several attempts
    operators_source: OperatorsSource | None = None
    success: bool | None = None  # None: the output says neither
    failure: str | None = None
    errors: list[str] = field(default_factory=list)
    attempts: int | None = None
    stdout: str | None = None
    compiler_path: str | None = None
    log_path: str | None = None
    seconds: float | None = None

    SUMMARY_FIELDS = (
        "compiler_version",
        "compile_ms",
        "input_model",
        "input_size_bytes",
        "output_model",
        "output_size_bytes",
        "on_chip_memory_bytes",
        "on_chip_memory_remaining_bytes",
        "on_chip_memory_available_bytes",
        "off_chip_memory_bytes",
        "subgraphs",
        "ops_total",
        "operation_log",
        "ops_on_tpu",
        "ops_on_cpu",
        "timeout_s",
    )
    _TAIL = ("operators_complete", "operators_source", "success", "failure", "errors", "attempts")
    _SET_LATER = ("stdout", "compiler_path", "log_path", "seconds")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {k: getattr(self, k) for k in self.SUMMARY_FIELDS}
        d["operators"] = [r.to_dict() for r in self.operators]
        d.update({k: getattr(self, k) for k in self._TAIL})
        d["errors"] = list(self.errors)
        d.update({k: getattr(self, k) for k in self._SET_LATER if getattr(self, k) is not None})
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompilerLog:
        return _flat(cls, d, operators=[OperatorRow.from_dict(r) for r in _tables(d.get("operators"))])


@dataclass
class CompileResult:
    """What `compile_model` returns: where the compiled model and its log are, and what the compiler said."""

    compiled_path: str
    log_path: str
    report: CompilerLog
    seconds: float
    command: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "compiled_path": self.compiled_path,
            "log_path": self.log_path,
            "report": self.report.to_dict(),
            "seconds": self.seconds,
            "command": list(self.command),
        }


@dataclass
class EdgeTpuReport:
    """A manifest's `extra.edgetpu` for the Edge TPU chain: the int8 model's pre-flight and what the compiler did.

    Built whole by the edgetpu_compile step and completed (how_to_finish, which needs the published path)
    before it is serialized: nothing edits the JSON afterwards. JSON as manifest v1 wrote it: the pre-flight's
    keys flat, then `compiled`, `compiler`, `disagreements`, `how_to_finish`. `compiled` there has one
    meaning: the compiler made <stem>_edgetpu.tflite in this run. (The pre-flight's own `compiled`, "its
    input was already compiled", is always False here, the step pre-flights the uncompiled int8 model; it
    stays `preflight.compiled` and is not written over it.)
    """

    preflight: PreflightReport
    compiled: bool = False  # the compiler ran here and made the Edge TPU model
    compiler: CompilerLog | None = None  # what it said; None where it did not run
    disagreements: list[str] = field(default_factory=list)  # pre-flight vs compiler
    how_to_finish: str | None = None  # where it could not run: the command that finishes the job elsewhere

    def to_dict(self) -> dict[str, Any]:
        return {**self.preflight.to_dict(), "compiled": self.compiled,
                "compiler": self.compiler.to_dict() if self.compiler is not None else None,
                "disagreements": list(self.disagreements), "how_to_finish": self.how_to_finish}

    @classmethod
    def read(cls, d: Any) -> EdgeTpuReport | None:
        """From a manifest's `extra.edgetpu`; None where it is not a table or its pre-flight is unreadable."""
        if not isinstance(d, dict):
            return None
        try:
            preflight = PreflightReport.from_dict({**d, "predicted": d.get("predicted", True), "compiled": False})
            log = d.get("compiler")
            compiler = CompilerLog.from_dict(log) if isinstance(log, dict) else None
        except (TypeError, ValueError, KeyError, AttributeError):
            return None
        dis, finish = d.get("disagreements"), d.get("how_to_finish")
        return cls(preflight=preflight, compiled=d.get("compiled") is True, compiler=compiler,
                   disagreements=[str(x) for x in dis] if isinstance(dis, list) else [],
                   how_to_finish=finish if isinstance(finish, str) else None)


__all__ = [
    "CompileResult",
    "CompilerLog",
    "EdgeTpuReport",
    "OpCode",
    "OperatorRow",
    "OperatorsSource",
    "PartitionPoint",
    "PreflightOp",
    "PreflightReport",
    "Problem",
    "ProblemKind",
]
