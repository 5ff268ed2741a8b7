"""The records of `edgekit check`: one line per budget check, and the report (`--format json` is its to_dict()).

Fields may be added, never renamed or removed without bumping SCHEMA_VERSION: CI scripts read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from edgekit.core.records import Record

SCHEMA_VERSION = 1

Verdict = Literal["pass", "warn", "fail"]
# What a figure is, so each format can show it: bytes as KB, fractions as %, ratios as x, ...
Unit = Literal["bytes", "fraction", "ratio", "ms", "count", "text"]
RANK: dict[str, int] = {"fail": 0, "warn": 1, "pass": 2}


@dataclass(frozen=True)
class CheckResult(Record):
    """One budget check of one artifact: the figures, the change, the budget, the verdict and why."""

    artifact: str = ""  # "tflite int8" (format and variant)
    metric: str = ""  # "size", "size growth", "accuracy drop vs source", "p50 latency onnxruntime/cpu" ...
    budget_key: str = ""  # the budget key that decided it (edgekit.check.budgets.KEYS)
    unit: Unit = "text"
    baseline: Any = None  # the figure in the baseline (None: not in it, or no baseline)
    now: Any = None
    change: float | None = None  # relative (size, latency: now/baseline - 1) or points (fractions: now - baseline)
    budget: str = ""  # the bound as words: "<= +5%", ">= 97.00%"
    verdict: Verdict = "pass"
    message: str = ""  # one sentence for an annotation or a failure message
    budget_from: str = "default"  # "default", or the budget file and line that set it
    file: str | None = None  # the file a CI annotation points at (the budget file, else the source model)
    line: int | None = None
    compared: str | None = None  # for latency: what was compared (relative to the source model, or absolute)


@dataclass
class CheckReport(Record):
    """Everything `edgekit check` found: the verdict, the exit code, each check (worst first) and notes."""

    schema_version: int = SCHEMA_VERSION
    verdict: Verdict = "pass"
    exit_code: int = 0
    current: str = ""
    baseline: str | None = None  # where the baseline came from; None: absolute budgets only
    budgets: str = ""  # the budget file, or "defaults (no budget file)"
    latency_compared: list[str] = field(default_factory=list)  # what latency checks compared, in words
    counts: dict[str, int] = field(default_factory=dict)  # pass / warn / fail
    checks: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was not checked, and why

    @property
    def failed(self) -> list[CheckResult]:
        return [c for c in self.checks if c.verdict == "fail"]

    @property
    def warned(self) -> list[CheckResult]:
        return [c for c in self.checks if c.verdict == "warn"]


__all__ = ["RANK", "SCHEMA_VERSION", "CheckReport", "CheckResult", "Unit", "Verdict"]
