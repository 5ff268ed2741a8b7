"""edgekit's own JSON files (manifest.json, bench.json, baselines) read back as hostile input, in one place.

A CI gate, `bench`, `serve` and `export` all read files someone else may have written or edited: a
file that is not JSON, a multi-gigabyte one, one nested 200,000 levels deep or one written by a newer
edgekit must end in a clear "bad input" (exit 2) with a hint, never in a traceback or an hour of
parsing. Every reader calls `read_json` (size cap, UTF-8, bounded nesting) and `gate_version` (the one
rule for a schema version: absent means the current one, a non-integer is bad input, a newer one is
refused with "upgrade edgekit"), so the readers cannot drift apart again. The typed records then keep
each field only where its value has the declared type (edgekit.core.records): a figure of the wrong type
is no figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from edgekit.core import jsonsafe
from edgekit.core.errors import UsageError

# manifest.json and bench.json of a conversion are kilobytes; a baseline is smaller still
MAX_BYTES = 32 * 1024 * 1024
UPGRADE_HINT = "Upgrade edgekit (pip install -U edgekit) to read it, or re-run the command that wrote it."


def read_text(path: Path, what: str) -> str:
    """The text of PATH, or UsageError when it is missing, not a file, too large or not UTF-8."""
    if not path.exists():
        raise UsageError(f"No {what} at {path}.", hint="Check the path (it is relative to the current folder).")
    if not path.is_file():
        raise UsageError(f"The {what} {path} is not a file.")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise UsageError(f"The {what} {path} is {size:,} bytes: larger than any edgekit file ({MAX_BYTES:,}).",
                         hint="Pass the manifest.json / bench.json / baseline edgekit wrote.")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"The {what} {path} is not UTF-8 text ({exc.reason} at byte {exc.start}).") from exc
    except OSError as exc:
        raise UsageError(f"Cannot read the {what} {path}: {exc.strerror or exc}.") from exc


def parse_json(text: str, where: str) -> Any:
    """TEXT as JSON, or UsageError naming WHERE (malformed, or nested beyond what a parser should follow)."""
    try:
        return jsonsafe.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).",
                         hint="Pass the file edgekit wrote, unedited (or re-run the command that writes it).") from exc
    except jsonsafe.TooDeep as exc:
        raise UsageError(f"{where} is nested too deeply to be an edgekit file ({exc}).") from exc


def read_json(path: Path, what: str) -> Any:
    return parse_json(read_text(path, what), f"The {what} {path}")


def gate_version(data: dict[str, Any], key: str, reads: int, where: str, what: str) -> int:
    """The schema version DATA[KEY] (the current READS when absent), or UsageError for a non-integer or a newer one.

    WHAT names the version in words ("manifest version", "bench schema"): the message reads
    "<where> is manifest version 2, newer than this edgekit reads (1)." for every file kind alike.
    """
    version = data.get(key, reads)
    if isinstance(version, bool) or not isinstance(version, int):
        raise UsageError(f"{where}: {key} is {version!r}, not a version number.",
                         hint="Pass the file edgekit wrote, unedited.")
    if version > reads:
        raise UsageError(f"{where} is {what} {version}, newer than this edgekit reads ({reads}).", hint=UPGRADE_HINT)
    return version


# ---------------------------------------------------------------- typed reads of parsed JSON


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def as_float(value: Any) -> float | None:
    """A finite number, else None (a bool, a string, NaN and infinity are not figures)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if f == f and f not in (float("inf"), float("-inf")) else None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        f = as_float(value)
        return int(f) if f is not None and f == int(f) else None
    return value


def as_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


__all__ = ["MAX_BYTES", "UPGRADE_HINT", "as_bool", "as_dict", "as_float", "as_int", "as_list", "as_str",
           "gate_version", "parse_json", "read_json", "read_text"]
