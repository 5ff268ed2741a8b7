"""The runtime pool on its own, with a stand-in runtime: bounded queue, batching, failures, cancelled jobs."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from edgekit.serve.pool import QueueFull, RuntimePool


class SlowDouble:
    """Doubles its input after waiting on GATE (so a test decides when work finishes); fails on negative input."""

    def __init__(self, gate: threading.Event, seen: list[int]) -> None:
        self.gate, self.seen, self.closed = gate, seen, False
        self.started = threading.Event()  # set when a job reaches run(): the worker holds it, the queue is free

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.started.set()
        self.gate.wait(10)
        x = inputs["x"]
        self.seen.append(int(x.shape[0]))
        if (x < 0).any():
            raise RuntimeError("negative input")
        return {"y": x * 2}

    def close(self) -> None:
        self.closed = True


def _pool(max_queue: int, max_batch: int = 1, timeout_s: float = 0.0):
    gate, seen, made = threading.Event(), [], []

    def factory():
        made.append(SlowDouble(gate, seen))
        return made[-1]

    pool = RuntimePool(factory, workers=1, max_queue=max_queue, max_batch=max_batch, batch_timeout_s=timeout_s)
    pool.start()
    return pool, gate, seen, made


def test_a_full_queue_refuses_at_once_and_accepted_work_finishes() -> None:
    pool, gate, _, made = _pool(max_queue=2)
    running = pool.submit({"x": np.ones((1, 3))})
    assert made[0].started.wait(10)  # the worker took it and waits on the gate
    waiting = [pool.submit({"x": np.full((1, 3), i)}) for i in range(2)]
    with pytest.raises(QueueFull):
        pool.submit({"x": np.ones((1, 3))})
    # "at once" by order, not by a clock (shared machines stall): refused while the running job still waits on the
    # shut gate; a submit that waited for room could only have come back after that job finished
    assert not gate.is_set() and not running.future.done() and pool.depth == 2
    gate.set()
    assert running.future.result(5)["y"].tolist() == [[2, 2, 2]]
    assert [j.future.result(5)["y"][0, 0] for j in waiting] == [0, 2]
    pool.close()
    assert made[0].closed


def test_a_failure_fails_its_job_only_and_a_cancelled_job_is_skipped() -> None:
    pool, gate, seen, _ = _pool(max_queue=4)
    bad = pool.submit({"x": -np.ones((1, 1))})
    skipped = pool.submit({"x": np.ones((1, 1))})
    assert skipped.future.cancel()  # the caller gave up (504) before a worker took it
    good = pool.submit({"x": np.ones((1, 1))})
    gate.set()
    with pytest.raises(RuntimeError, match="negative"):
        bad.future.result(5)
    assert good.future.result(5)["y"].tolist() == [[2]]
    assert seen == [1, 1]  # the cancelled job never ran
    pool.close()


def test_waiting_jobs_run_as_one_batch_and_get_their_own_rows_back() -> None:
    pool, gate, seen, _ = _pool(max_queue=8, max_batch=4, timeout_s=0.5)
    jobs = [pool.submit({"x": np.full((1, 2), i, np.float32)}) for i in range(3)]
    jobs.append(pool.submit({"x": np.full((1, 5), 9, np.float32)}))  # another sample shape: its own batch
    gate.set()
    assert [j.future.result(5)["y"].tolist() for j in jobs[:3]] == [[[0, 0]], [[2, 2]], [[4, 4]]]
    assert jobs[3].future.result(5)["y"].shape == (1, 5)
    assert sorted(seen) == [1, 3] and [j.batch for j in jobs] == [3, 3, 3, 1]
    pool.close()


def test_a_runtime_that_cannot_load_is_raised_by_start() -> None:
    def factory():
        raise ValueError("no such model")

    with pytest.raises(ValueError, match="no such model"):
        RuntimePool(factory, workers=2).start()
