"""Budgets: what `edgekit check` allows, from a TOML file or `[tool.edgekit.check]` in a pyproject.toml.

A budget file holds keys that apply to every artifact, then tables named by a pattern that select
artifacts by format and precision, with shell wildcards (`*`, `?`):

    max_growth = "5%"            # every artifact
    ["tflite int8"]              # FORMAT PRECISION; the precision may also be a variant: "int8-uint8io"
    max_bytes = "250 KB"
    ["* int8"]
    max_accuracy_drop = 0.01

In a pyproject.toml the same lives under `[tool.edgekit.check]` and `[tool.edgekit.check."tflite int8"]`.
Tables apply after the top-level keys, the ones with wildcards before the exact ones, so the most
specific value wins. Every value remembers the file and line it came from, so a broken budget can be
annotated where it is written. An unknown key, a value of the wrong type or a pattern naming no known
format is bad input (exit 2) with a "did you mean".
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from edgekit.core.errors import UsageError
from edgekit.core.registry import suggest

Kind = Literal["bytes", "percent", "fraction", "count", "level", "bool"]
Level = Literal["error", "warn", "off"]
LEVELS: tuple[str, ...] = ("error", "warn", "off")


@dataclass(frozen=True)
class Key:
    """One budget key: its kind of value, its default (None: not checked unless set) and what it bounds."""

    kind: Kind
    default: Any
    help: str


# Every key a budget may set. Defaults are the checks that run without a budget file.
KEYS: dict[str, Key] = {
    # size
    "max_bytes": Key("bytes", None, "the artifact's file size at most this (bytes, or '250 KB', '1.5 MB')"),
    "max_growth": Key("percent", 0.05, "size growth vs the baseline at most this ('5%' or 0.05)"),
    # fidelity
    "fidelity_must_pass": Key("bool", True, "the artifact passes its conversion's fidelity thresholds"),
    "min_top1_agreement": Key("fraction", None, "top-1 agreement with the source at least this"),
    "min_accuracy": Key("fraction", None, "accuracy on the labelled held-out set at least this"),
    "max_accuracy_drop": Key("fraction", None, "accuracy lost vs the source and vs the baseline, in points (0.01)"),
    # detectors (fidelity kind "detection"): the source's boxes the artifact keeps, its boxes that are the source's,
    # mAP50 with labelled boxes; artifacts without these figures (classifiers, older manifests) are not held to them
    "min_detection_recall": Key("fraction", None, "share of the source's boxes the artifact keeps at least this"),
    "min_detection_precision": Key("fraction", None, "share of the artifact's boxes that are the source's at least "
                                   "this"),
    "max_map_drop": Key("fraction", None, "mAP50 lost vs the source and vs the baseline, in points (0.03)"),
    # Edge TPU
    "min_ops_on_tpu_fraction": Key("fraction", None, "share of ops mapped to the Edge TPU at least this"),
    "min_macs_on_tpu_fraction": Key("fraction", None, "share of MACs on the Edge TPU at least this"),
    "max_tpu_coverage_drop": Key("fraction", 0.0, "share of ops or MACs on the Edge TPU lost vs the baseline"),
    "new_partition_point": Key("level", "error", "a partition point the baseline did not have (or earlier)"),
    # compute
    "max_macs": Key("count", None, "multiply-accumulates of one inference at most this"),
    "max_params": Key("count", None, "parameters (constant elements) at most this"),
    "new_ops": Key("level", "warn", "operator types the baseline did not have"),
    # latency: the artifact's p50/p90 relative to the source model measured in the same bench run
    "max_p50_growth": Key("percent", 1.0, "p50 latency growth vs the baseline (relative to the source)"),
    "max_p90_growth": Key("percent", None, "p90 latency growth vs the baseline (relative to the source)"),
    "latency": Key("level", "warn", "how a broken default latency budget counts; one you set counts as error"),
    # presence
    "missing": Key("level", "error", "an artifact of the baseline that is gone, or one that failed to convert"),
}

_UNITS = {"b": 1, "kb": 1024, "kib": 1024, "mb": 1024**2, "mib": 1024**2, "gb": 1024**3, "gib": 1024**3}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")
_PERCENT = re.compile(r"^\s*(-?[0-9]+(?:\.[0-9]+)?)\s*%\s*$")


@dataclass(frozen=True)
class Origin:
    """Where a budget value was written: the file and line, or None for edgekit's default."""

    file: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        if self.file is None:
            return "default"
        return f"{self.file}:{self.line}" if self.line else self.file


DEFAULT = Origin()


@dataclass(frozen=True)
class Value:
    """A budget value as it applies to one artifact, and where it was set."""

    value: Any
    origin: Origin = DEFAULT

    @property
    def is_default(self) -> bool:
        return self.origin.file is None


def parse_value(key: str, raw: Any, where: str) -> Any:
    """RAW (as TOML gave it) as KEY's kind of value; UsageError naming WHERE for a value of the wrong type."""
    kind = KEYS[key].kind

    def bad(expected: str) -> UsageError:
        return UsageError(f"{where}: {key} = {raw!r} is not {expected}.", hint=f"{key}: {KEYS[key].help}.")

    if kind == "bool":
        if not isinstance(raw, bool):
            raise bad("true or false")
        return raw
    if kind == "level":
        if not isinstance(raw, str) or raw.strip().lower() not in LEVELS:
            raise bad("one of " + ", ".join(f'"{v}"' for v in LEVELS))
        return raw.strip().lower()
    if isinstance(raw, bool):
        raise bad("a number")
    if kind in ("bytes", "count"):
        if isinstance(raw, int) and raw >= 0:
            return raw
        m = _SIZE.match(raw) if isinstance(raw, str) and kind == "bytes" else None
        if m and m.group(2).lower() in _UNITS:
            return int(float(m.group(1)) * _UNITS[m.group(2).lower()])
        raise bad("a size in bytes (an integer, or '250 KB', '1.5 MB')" if kind == "bytes" else "a whole number")
    # percent, fraction: a number, or "N%"
    percent = _PERCENT.match(raw) if isinstance(raw, str) else None
    if percent:
        number = float(percent.group(1)) / 100
    elif isinstance(raw, (int, float)):
        number = float(raw)
    else:
        raise bad("a number or a percentage like '5%'")
    if number < 0 or (kind == "fraction" and number > 1) or number != number:
        raise bad("between 0 and 1 (or 0% and 100%)" if kind == "fraction" else "a percentage of 0% or more")
    return number


def _check_key(key: str, where: str) -> None:
    if key in KEYS:
        return
    guess = suggest(key, KEYS)
    raise UsageError(
        f"{where}: unknown budget key '{key}'.",
        hint=(f"did you mean '{guess}'? " if guess else "") + "Budget keys: " + ", ".join(KEYS) + ".",
    )


def _check_pattern(pattern: str, where: str) -> None:
    """A pattern's format part must be a wildcard or a known format; its precision part one too, or a variant."""
    from edgekit.core.formats import FORMATS
    from edgekit.core.precisions import PRECISIONS

    parts = pattern.split()
    if not parts or len(parts) > 2:
        raise UsageError(f"{where}: budget table '{pattern}' is not 'FORMAT PRECISION'.",
                         hint='Name tables like ["tflite int8"], ["onnx *"] or ["* int8"].')
    checks = [(parts[0], list(FORMATS), "format")]
    if len(parts) == 2:
        checks.append((parts[1].split("-")[0], list(PRECISIONS), "precision"))
    for word, names, what in checks:
        if any(c in word for c in "*?[") or word in names:
            continue
        guess = suggest(word, names)
        raise UsageError(f"{where}: budget table '{pattern}' names no known {what} '{word}'.",
                         hint=(f"did you mean '{guess}'? " if guess else "") + f"Known: {', '.join(names)}.")


@dataclass(frozen=True)
class Section:
    """The keys of one table of the budget file, with the pattern that selects artifacts (None: all)."""

    pattern: str | None
    values: dict[str, Value]

    def matches(self, fmt: str, precision: str, variant: str) -> bool:
        if self.pattern is None:
            return True
        parts = self.pattern.split()
        if not fnmatch.fnmatchcase(fmt, parts[0]):
            return False
        return len(parts) == 1 or any(fnmatch.fnmatchcase(p, parts[1]) for p in (precision, variant))

    @property
    def specificity(self) -> int:
        return -1 if self.pattern is None else (0 if any(c in self.pattern for c in "*?[") else 1)


@dataclass(frozen=True)
class Budgets:
    """Every section of a budget file (or none: the defaults), and a description of where they came from."""

    sections: tuple[Section, ...] = ()
    where: str = "defaults (no budget file)"
    file: str | None = None

    def for_artifact(self, fmt: str, precision: str, variant: str) -> dict[str, Value]:
        """The budget of one artifact: defaults, then the top-level keys, then matching tables (exact ones last)."""
        out = {k: Value(spec.default) for k, spec in KEYS.items()}
        for section in sorted(self.sections, key=lambda s: s.specificity):
            if section.matches(fmt, precision, variant):
                out.update(section.values)
        return out

    def unmatched(self, artifacts: list[tuple[str, str, str]]) -> list[Section]:
        """Tables that select none of ARTIFACTS ((format, precision, variant) each): likely a typo."""
        return [s for s in self.sections if s.pattern is not None and not any(s.matches(*a) for a in artifacts)]


def _key_lines(text: str, prefix: tuple[str, ...]) -> dict[tuple[str | None, str], int]:
    """(table pattern or None, key) -> line number, found by reading the TOML text line by line.

    TOML parsers do not report lines; this reads headers (`[a."b c"]`) and `key =` lines, which is all a
    budget file holds. PREFIX is the table path the budgets sit under (("tool", "edgekit", "check") in a pyproject).
    """
    lines: dict[tuple[str | None, str], int] = {}
    current: tuple[str, ...] | None = () if not prefix else None
    header = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")
    assignment = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\")\s*=")
    for n, line in enumerate(text.splitlines(), 1):
        h = header.match(line)
        if h:
            parts = re.findall(r'"[^"]*"|\'[^\']*\'|[^.]+', h.group(1))
            current = tuple(p.strip().strip('"').strip("'") for p in parts)
            continue
        a = assignment.match(line)
        if a and current is not None and current[: len(prefix)] == prefix and len(current) <= len(prefix) + 1:
            pattern = current[len(prefix)] if len(current) > len(prefix) else None
            lines.setdefault((pattern, a.group(1).strip('"')), n)
    return lines


def parse_budgets(data: Any, file: str, text: str, prefix: tuple[str, ...] = ()) -> Budgets:
    """Budgets from the parsed TOML DATA of FILE (TEXT for line numbers), under the table path PREFIX."""
    lines = _key_lines(text, prefix)
    if not isinstance(data, dict):
        raise UsageError(f"{file}: the budget table is not a table.")
    top: dict[str, Value] = {}
    sections: list[Section] = []
    for key, raw in data.items():
        if isinstance(raw, dict):
            where = f"{file}:{lines.get((key, next(iter(raw), '')), '')}".rstrip(":")
            _check_pattern(key, where)
            values: dict[str, Value] = {}
            for sub, sub_raw in raw.items():
                line = lines.get((key, sub))
                at = f"{file}:{line}" if line else file
                _check_key(sub, at)
                values[sub] = Value(parse_value(sub, sub_raw, at), Origin(file, line))
            sections.append(Section(key, values))
            continue
        line = lines.get((None, key))
        at = f"{file}:{line}" if line else file
        _check_key(key, at)
        top[key] = Value(parse_value(key, raw, at), Origin(file, line))
    return Budgets(sections=(Section(None, top), *sections), where=file, file=file)


def load_budgets(path: str | Path | None, cwd: Path | None = None) -> Budgets:
    """Budgets from PATH (a TOML file, or a pyproject.toml's [tool.edgekit.check]); without PATH, the
    [tool.edgekit.check] of ./pyproject.toml where it has one, else the defaults."""
    from edgekit.check.files import read_text

    if path is None:
        pyproject = (cwd or Path.cwd()) / "pyproject.toml"
        if not pyproject.is_file():
            return Budgets()
        text = read_text(pyproject, "pyproject.toml")
        table = _tool_table(_toml(text, "pyproject.toml"))
        if table is None:
            return Budgets()
        return parse_budgets(table, "pyproject.toml", text, ("tool", "edgekit", "check"))
    p = Path(path)
    name = str(path)
    text = read_text(p, "budget file")
    data = _toml(text, name)
    if p.name == "pyproject.toml":
        table = _tool_table(data)
        if table is None:
            raise UsageError(f"{name} has no [tool.edgekit.check] table.",
                             hint="Add one (see docs/check.md, 'Budgets'), or pass a budget TOML file with --budget.")
        return parse_budgets(table, name, text, ("tool", "edgekit", "check"))
    return parse_budgets(data, name, text)


def _tool_table(data: dict[str, Any]) -> Any:
    """The [tool.edgekit.check] value of a parsed pyproject.toml, or None where it has none."""
    from edgekit.check.files import as_dict

    return as_dict(as_dict(data.get("tool")).get("edgekit")).get("check")


def _toml(text: str, where: str) -> dict[str, Any]:
    from edgekit.measure.devices import _toml_loads  # the one TOML reader (tomllib, or tomli on Python 3.10)

    try:
        return _toml_loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise UsageError(f"{where} is not valid TOML: {exc}.", hint="Fix the line it names.") from exc


__all__ = ["KEYS", "Budgets", "Key", "Origin", "Section", "Value", "load_budgets", "parse_budgets", "parse_value"]
