"""Facts about this machine while it measures: resident memory, and this CPU's measured peak compute.

The peak is what "fraction of peak" in a ProfileResult divides by: a number measured here (numpy's
BLAS on a float32 matmul), not a datasheet figure, cached so that every profile does not pay for it.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core.fsutil import cache_dir


def require_proc(what: str, proc: Path = Path("/proc")) -> None:
    """On Linux, a clear error where /proc is not mounted (a chroot or container made without it).

    psutil, the memory readings and the runtimes' CPU detection read it; without it psutil raised
    NoSuchProcess about edgekit's own process, which read as a bug in edgekit.
    """
    if sys.platform.startswith("linux") and not (proc / "self" / "stat").exists():
        from edgekit.core.errors import UsageError

        raise UsageError(f"/proc is not mounted here, and {what} reads this process's memory and the CPU there.",
                         hint="Mount it (mount -t proc proc /proc; in a chroot, mount -t proc proc ROOT/proc before "
                              "entering), or run edgekit in an environment that has it.")


def current_rss() -> int | None:
    """This process's resident set size in bytes now (psutil, else /proc/self/statm), or None."""
    try:
        import psutil
    except ImportError:
        pass
    else:
        try:
            return int(psutil.Process().memory_info().rss)
        except psutil.Error:  # /proc unreadable: no figure rather than a crash
            return None
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def release_freed_memory() -> bool:
    """Give the heap memory this process has freed back to the OS (glibc's malloc_trim); False where there is none.

    Why: TensorFlow's and PyTorch's CPU allocators free a batch's activations to malloc, and glibc keeps the
    pages for reuse: after the reference outputs of a Keras ConvNeXt-T (chunks of 27 samples at 160x160) the
    process held 2.25 GiB, 0.94 GiB once trimmed: memory the child processes of the later steps (onnx2tf,
    validation) can have. Trimming costs milliseconds; it runs between a conversion's phases and steps.
    """
    import ctypes
    import ctypes.util

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # musl and other libcs have no malloc_trim
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
    return True


def peak_rss() -> int | None:
    """The process's peak resident set size in bytes (getrusage: KiB on Linux, bytes on macOS)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def peak_rss_children() -> int | None:
    """The largest peak resident set size, in bytes, among the child processes this one has waited for."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024) or None


def measured_peak(refresh: bool = False, seconds: float = 0.5) -> dict[str, Any]:
    """This CPU's float32 matrix-multiply rate in GMAC/s (numpy's BLAS, its default threads), cached.

    The probe multiplies 1024x1024 matrices for about SECONDS and keeps the best run; the result is
    cached per CPU model, core count and numpy version in <cache>/cpu_peak.json.
    """
    from edgekit.measure.devices import cpu_model

    key = f"{cpu_model()}|{os.cpu_count()}|numpy {np.__version__}"
    path = cache_dir() / "cpu_peak.json"
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        cached = {}
    if not refresh and isinstance(cached.get(key), dict):
        return {**cached[key], "cached": True}
    n = 1024
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    np.matmul(a, b, out=out)  # warm the BLAS threads
    best, deadline = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        np.matmul(a, b, out=out)
        best = min(best, time.perf_counter() - t0)
    entry = {"gmacs_per_s": n**3 / best / 1e9, "method": f"numpy float32 matmul {n}x{n}, best of {seconds:g} s",
             "measured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    try:
        from edgekit.core.fsutil import atomic_write_json

        atomic_write_json(path, {**cached, key: entry})
    except OSError:
        pass  # a read-only home: the figure is still returned, just not cached
    return {**entry, "cached": False}
