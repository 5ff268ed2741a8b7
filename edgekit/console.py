"""Where output goes: results to stdout, progress and logs to stderr (so `--json` stays clean)."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

# Tables are wide; when output goes to a file or a CI log (no terminal to measure) use 160 columns, not 80.
err = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 160)
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)


def progress(message: str) -> None:
    """One progress line on stderr."""
    err.print(f"[dim]>[/dim] {message}")


def warn(message: str) -> None:
    err.print(f"[bold yellow]warning:[/bold yellow] {message}")


def print_json(obj: Any) -> None:
    """The machine-readable result alone on stdout."""
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")
    sys.stdout.flush()


def human_bytes(n: float | int | None) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class quiet_stdout:  # noqa: N801 - used as a context manager like contextlib's
    """Send everything written to stdout (Python and C level) to stderr for the duration.

    Converters print progress on stdout (torch.onnx, onnx2tf, TF's C++ logging); with --json,
    stdout must hold the JSON alone.
    """

    def __enter__(self) -> quiet_stdout:
        import os

        sys.stdout.flush()
        self._saved_fd = os.dup(1)
        os.dup2(2, 1)
        self._saved_py = sys.stdout
        sys.stdout = sys.stderr
        return self

    def __exit__(self, *exc: object) -> None:
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self._saved_fd, 1)
        os.close(self._saved_fd)
        sys.stdout = self._saved_py
