"""Reading the files `edgekit check` is given, as hostile input: size-capped, decoded, parsed, typed.

A CI gate reads what a pull request (or anyone) put in the repository: a manifest that is not JSON, a
baseline of the wrong shape, a multi-gigabyte file or a deeply nested one must end in a clear "bad input"
(exit 2), never in a traceback or an hour of parsing. Baselines may also come from a git revision
(`git:REV:path`, read with `git show`), so a pull request is compared with its base branch.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from edgekit import jsonsafe
from edgekit.errors import UsageError

# manifest.json and bench.json of a conversion are kilobytes; a baseline is smaller still
MAX_BYTES = 32 * 1024 * 1024


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


def git_show(spec: str, cwd: Path | None = None) -> tuple[str, str]:
    """(text, description) of `git:REV:PATH`: the file PATH at revision REV of the repository here."""
    body = spec[len("git:"):]
    rev, sep, path = body.partition(":")
    if not sep or not rev or not path:
        raise UsageError(f"'{spec}' is not git:REV:PATH.",
                         hint="For example git:origin/main:models/edgekit-baseline.json (the path from the "
                              "repository root, or ./path from the current folder).")
    try:
        proc = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=cwd, capture_output=True, timeout=60)
    except FileNotFoundError as exc:
        raise UsageError(f"Cannot read {spec}: git is not installed here.",
                         hint="Install git, or pass the baseline file itself.") from exc
    except subprocess.TimeoutExpired as exc:
        raise UsageError(f"Cannot read {spec}: `git show` did not answer in 60 s.") from exc
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"Cannot read {spec}: git says: {why[-1] if why else 'exit ' + str(proc.returncode)}.",
                         hint="In CI, fetch the base branch first (actions/checkout with fetch-depth: 0, or "
                              "`git fetch origin main`); on the first run, when no baseline is committed yet, "
                              "run without --baseline.")
    if len(proc.stdout) > MAX_BYTES:
        raise UsageError(f"{spec} is {len(proc.stdout):,} bytes: larger than any edgekit file.")
    try:
        return proc.stdout.decode("utf-8"), spec
    except UnicodeDecodeError as exc:
        raise UsageError(f"{spec} is not UTF-8 text.") from exc


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


__all__ = ["MAX_BYTES", "as_bool", "as_dict", "as_float", "as_int", "as_list", "as_str", "git_show",
           "parse_json", "read_json", "read_text"]
