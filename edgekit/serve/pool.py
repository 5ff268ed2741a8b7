"""A fixed pool of loaded Runtime instances behind one bounded queue.

Each worker thread owns one Runtime (loaded in that thread, warmed up once) and takes jobs from a
queue of at most `max_queue` waiting jobs. A full queue refuses at once (`QueueFull`: the app answers
503 with Retry-After), so the backlog, and the latency of what is accepted, stay bounded. With
`max_batch > 1` (only for a model whose batch is dynamic) a worker gathers up to that many waiting
jobs within `batch_timeout_s`, runs them as one batch and splits the outputs back.
Runtimes release the GIL while they compute, so threads give real parallelism to several workers.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from edgekit.runtimes.base import Runtime

log = logging.getLogger(__name__)


class QueueFull(Exception):
    """The pool's queue holds max_queue jobs already."""


@dataclass
class Job:
    inputs: dict[str, np.ndarray]
    future: Future = field(default_factory=Future)
    enqueued: float = field(default_factory=time.perf_counter)
    started: float = 0.0
    finished: float = 0.0
    batch: int = 1  # the size of the batch it ran in (dynamic batching), in jobs

    @property
    def rows(self) -> int:
        first = next(iter(self.inputs.values()))
        return int(first.shape[0]) if first.ndim else 1


class RuntimePool:
    """WORKERS runtimes made by FACTORY, fed from a queue of at most MAX_QUEUE jobs."""

    def __init__(self, factory: Callable[[], Runtime], workers: int = 1, max_queue: int = 32,
                 max_batch: int = 1, batch_timeout_s: float = 0.0, name: str = "model") -> None:
        self.factory = factory
        self.workers = max(1, workers)
        self.max_batch = max(1, max_batch)
        self.batch_timeout_s = max(0.0, batch_timeout_s)
        self.name = name
        self._queue: queue.Queue[Job | None] = queue.Queue(maxsize=max(1, max_queue))
        self._threads: list[threading.Thread] = []
        self._busy = 0
        self._lock = threading.Lock()
        self.runtimes: list[Runtime] = []
        self.load_seconds = 0.0

    # ------------------------------------------------------------------ lifecycle
    def start(self, warmup: Callable[[Runtime], object] | None = None) -> None:
        """Load every worker's runtime (in its own thread) and wait; the first load error is raised."""
        t0 = time.perf_counter()
        ready: list[threading.Event] = []
        errors: list[BaseException] = []
        for i in range(self.workers):
            ev = threading.Event()
            th = threading.Thread(target=self._worker, args=(ev, errors, warmup), name=f"edgekit-{self.name}-{i}",
                                  daemon=True)
            th.start()
            ready.append(ev)
            self._threads.append(th)
        for ev in ready:
            ev.wait()
        self.load_seconds = time.perf_counter() - t0
        if errors:
            self.close()
            raise errors[0]

    def close(self, timeout: float = 5.0) -> None:
        """Stop the workers after the jobs already queued; release the runtimes."""
        deadline = time.monotonic() + timeout
        for _ in self._threads:
            try:  # waits only while the queue is full, which live workers are emptying
                self._queue.put(None, timeout=max(0.01, deadline - time.monotonic()))
            except queue.Full:
                break
        for th in self._threads:
            th.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()

    # ------------------------------------------------------------------ work
    def submit(self, inputs: dict[str, np.ndarray]) -> Job:
        job = Job(inputs)
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            raise QueueFull(self.name) from None
        return job

    @property
    def depth(self) -> int:
        """Jobs waiting (not yet taken by a worker)."""
        return self._queue.qsize()

    @property
    def busy(self) -> int:
        """Jobs being computed now."""
        return self._busy

    def _worker(self, ready: threading.Event, errors: list[BaseException],
                warmup: Callable[[Runtime], None] | None) -> None:
        try:
            rt = self.factory()
            if warmup is not None:
                warmup(rt)
        except BaseException as exc:  # noqa: BLE001 - handed to start(), which raises it
            errors.append(exc)
            ready.set()
            return
        with self._lock:
            self.runtimes.append(rt)
        ready.set()
        try:
            while True:
                job = self._queue.get()
                if job is None:
                    return
                jobs = self._gather(job)
                if jobs is None:  # the stop marker came while gathering
                    return
                self._run(rt, [j for j in jobs if j.future.set_running_or_notify_cancel()])
        finally:
            rt.close()

    def _gather(self, first: Job) -> list[Job] | None:
        jobs = [first]
        if self.max_batch == 1:
            return jobs
        deadline = time.perf_counter() + self.batch_timeout_s
        while sum(j.rows for j in jobs) < self.max_batch:
            try:
                nxt = self._queue.get(timeout=max(0.0, deadline - time.perf_counter()))
            except queue.Empty:
                break
            if nxt is None:
                self._queue.put(None)  # leave the stop marker for the next get: run what was gathered first
                break
            jobs.append(nxt)
        return jobs

    def _run(self, rt: Runtime, jobs: list[Job]) -> None:
        if not jobs:
            return
        with self._lock:
            self._busy += len(jobs)
        try:
            for group in _batches(jobs, self.max_batch):
                start = time.perf_counter()
                for j in group:
                    j.started, j.batch = start, len(group)
                try:
                    if len(group) == 1:
                        outs = [rt.run(group[0].inputs)]
                    else:
                        joined = {k: np.concatenate([j.inputs[k] for j in group]) for k in group[0].inputs}
                        outs = _split_rows(rt.run(joined), [j.rows for j in group])
                except Exception as exc:  # noqa: BLE001 - each job's caller answers 500 with it
                    # the traceback is logged with each request's 500 (edgekit.serve.logs): here only the batch
                    log.debug("%s: a batch of %d request(s) failed: %s", self.name, len(group), type(exc).__name__)
                    done = time.perf_counter()
                    for j in group:
                        j.finished = done
                        j.future.set_exception(exc)
                    continue
                done = time.perf_counter()
                for j, out in zip(group, outs, strict=True):
                    j.finished = done
                    j.future.set_result(out)
        finally:
            with self._lock:
                self._busy -= len(jobs)


def _batches(jobs: list[Job], max_rows: int) -> list[list[Job]]:
    """Jobs grouped into batches that can be concatenated: same sample shapes, at most MAX_ROWS rows."""
    groups: list[list[Job]] = []
    for j in jobs:
        key = {k: (v.dtype, v.shape[1:]) for k, v in j.inputs.items()}
        for g in groups:
            same = {k: (v.dtype, v.shape[1:]) for k, v in g[0].inputs.items()} == key
            if same and sum(x.rows for x in g) + j.rows <= max_rows:
                g.append(j)
                break
        else:
            groups.append([j])
    return groups


def _split_rows(outputs: dict[str, np.ndarray], rows: list[int]) -> list[dict[str, np.ndarray]]:
    cuts = np.cumsum(rows)[:-1]
    parts = {k: np.split(v, cuts) for k, v in outputs.items()}
    return [{k: parts[k][i] for k in outputs} for i in range(len(rows))]


__all__ = ["Job", "QueueFull", "RuntimePool"]
