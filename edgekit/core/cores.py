"""The CPU cores this process may use: what validation, calibration and measurement size their thread pools by."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


__all__ = ["usable_cores"]
