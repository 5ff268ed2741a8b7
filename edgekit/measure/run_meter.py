"""The conversion run's meter: the memory its whole process tree held, and the seconds of its phases.

Why sampled: a conversion runs parts of itself in child processes (the source probe, onnx2tf, validation,
the TFLite candidates), so edgekit's own peak (getrusage) misses what they held at the same time. And the
children's getrusage figure (RUSAGE_CHILDREN) is not theirs: Linux starts a child's peak at its parent's
peak when it execs (the mm's high-water mark is carried over), so it read 5.4 GB for small validation
children of a 5.4 GB parent. A thread sums the memory of edgekit and its descendants (`tree_rss`) a few
times a second; the largest sum is the run's peak for the machine (what the model zoo's 4 GB bound is
about).

Phases outside the steps (loading the source, the calibration data and the reference outputs) are timed
here too, so that the manifest accounts for the whole run: those phases, every step (`extra.steps`), every
validation (`extra.validation_seconds`) and every int8 diagnosis (`extra.diagnosis_seconds`).
One meter runs per `convert()`; `current()` is the one running (None outside a conversion).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

INTERVAL_S = 0.5  # a reading costs ~8 ms (psutil lists every process to find the children)
_current: RunMeter | None = None


def _own_bytes(pid: int) -> int | None:
    """A child's anonymous and shared-memory resident bytes (/proc/PID/status, Linux), or None where unread."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    try:
        return sum(int(fields[k].split()[0]) * 1024 for k in ("RssAnon", "RssShmem"))
    except (KeyError, ValueError, IndexError):
        return None


def tree_rss() -> int:
    """Memory of this process and all its descendants now (0 where psutil is missing).

    Edgekit's own RSS, plus each child's anonymous memory (its tensors, arenas, interpreter): a child's
    file-backed pages are mostly the libraries edgekit maps too (TensorFlow alone is 1 GB of them), which
    summed RSS counts again for every child (2.4 GB summed against 1.7 GB of PSS on one run). PSS itself
    costs 60-100 ms a reading for a TensorFlow process: too much to read several times a second.
    """
    try:
        import psutil
    except ImportError:
        return 0
    me = psutil.Process()
    total = int(me.memory_info().rss)
    for proc in me.children(recursive=True):
        with contextlib.suppress(psutil.Error):  # a child that ended between the listing and the reading
            own = _own_bytes(proc.pid)
            total += own if own is not None else int(proc.memory_info().rss)
    return total


class RunMeter:
    """Samples `tree_rss()` in a daemon thread from start() to stop(); keeps the phases' seconds."""

    def __init__(self, interval: float = INTERVAL_S) -> None:
        self.interval = interval
        self.peak_tree_rss = 0
        self.phases: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        self.peak_tree_rss = max(self.peak_tree_rss, tree_rss())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def start(self) -> RunMeter:
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="edgekit-run-meter", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    def add(self, name: str, seconds: float) -> None:
        self.phases[name] = round(self.phases.get(name, 0.0) + seconds, 3)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Add the seconds the block takes to phase NAME; what it freed goes back to the OS at its end."""
        from edgekit.measure.machine import release_freed_memory

        t0 = time.perf_counter()
        try:
            yield
        finally:
            release_freed_memory()
            self.add(name, time.perf_counter() - t0)


@contextlib.contextmanager
def metering() -> Iterator[RunMeter]:
    """A meter that runs for the block, and is `current()` inside it."""
    global _current
    outer, meter = _current, RunMeter().start()
    _current = meter
    try:
        yield meter
    finally:
        meter.stop()
        _current = outer


def current() -> RunMeter | None:
    return _current


def add(name: str, seconds: float) -> None:
    """Add SECONDS to the running meter's phase NAME (nothing outside a conversion)."""
    if _current is not None:
        _current.add(name, seconds)


def phase(name: str) -> contextlib.AbstractContextManager[None]:
    """The running meter's phase NAME, or nothing outside a conversion."""
    return _current.phase(name) if _current is not None else contextlib.nullcontext()


__all__ = ["RunMeter", "add", "current", "metering", "phase", "tree_rss"]
