"""Reading the files `edgekit check` is given, as hostile input: size-capped, decoded, parsed, typed.

The reading itself is edgekit.core.filedoc's, shared with every other reader of edgekit's files and
re-exported here; what is check's own is the baseline from a git revision (`git:REV:path`, read with
`git show`), so a pull request is compared with its base branch.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from edgekit.core.errors import UsageError
from edgekit.core.filedoc import (
    MAX_BYTES,
    as_bool,
    as_dict,
    as_float,
    as_int,
    as_list,
    as_str,
    parse_json,
    read_json,
    read_text,
)


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


__all__ = ["MAX_BYTES", "as_bool", "as_dict", "as_float", "as_int", "as_list", "as_str", "git_show",
           "parse_json", "read_json", "read_text"]
