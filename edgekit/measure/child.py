"""One measurement in a child process: `edgekit profile --json`, its ProfileResult read back from stdout.

Bench runs each row this way by default so that peak memory is the row's own and a runtime that
crashes on a file takes only its row down. The child speaks through its exit code (edgekit.core.errors'
EXIT_*) and its last "error:" line on stderr; this module is the one place that reads them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING, Literal

from edgekit.core.errors import EXIT_MISSING, UsageError

if TYPE_CHECKING:
    from edgekit.measure.profile import ProfileResult

Status = Literal["ok", "not available", "failed"]


def profile_in_child(args: list[str], timeout: float) -> tuple[Status, ProfileResult | None, str | None]:
    """Run `edgekit ARGS` (a profile command with --json); (status, result, message)."""
    from edgekit.measure.profile import ProfileResult

    cmd = [sys.executable, "-m", "edgekit.cli", *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "failed", None, f"timed out after {timeout:g} s"
    if proc.returncode == 0:
        try:
            data = json.loads(proc.stdout)
        except json.JSONDecodeError:
            return "failed", None, "edgekit profile printed no JSON"
        try:
            return "ok", ProfileResult.from_dict(data), None
        except (UsageError, TypeError, AttributeError) as exc:  # JSON, but not a ProfileResult
            return "failed", None, f"edgekit profile printed no ProfileResult: {exc}"[:500]
    return ("not available" if proc.returncode == EXIT_MISSING else "failed"), None, last_error(proc)


def last_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The child's last `error:` message on stderr, else its last line, else its exit code (500 chars at most)."""
    errors = [ln.split("error:", 1)[1].strip() for ln in proc.stderr.splitlines() if "error:" in ln]
    message = errors[-1] if errors else (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return message[:500]


__all__ = ["Status", "last_error", "profile_in_child"]
