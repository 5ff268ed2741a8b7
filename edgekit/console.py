"""Where output goes: results to stdout, progress and logs to stderr (so `--json` stays clean)."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


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
