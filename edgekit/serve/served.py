"""One model being served: its runtime pool, its tensors as advertised, and inference as a coroutine.

The HTTP layer hands it arrays already checked against `inputs`; it queues them on the pool (503
with Retry-After when the queue is full, at once), waits at most `timeout_s` (504), and turns what
a runtime raised into a 500 with the runtime's message: a failed inference never takes the server
down, and the next request runs as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from edgekit.core.errors import EdgekitError, RuntimeFailure, UsageError
from edgekit.runtimes.base import Runtime
from edgekit.serve.config import ServeConfig
from edgekit.serve.detect import Detector, detector_of
from edgekit.serve.errors import RequestError
from edgekit.serve.metrics import Metrics
from edgekit.serve.models import ModelChoice
from edgekit.serve.names import renaming
from edgekit.serve.pool import QueueFull, RuntimePool
from edgekit.serve.tensors import WireTensor, wire_tensors

VERSION = "1"

log = logging.getLogger(__name__)


def platform(fmt: str) -> str:
    """The KServe v2 / Triton platform name of a served FMT model: its record's, else the format's own name."""
    from edgekit.core.formats import FORMATS

    spec = FORMATS.get(fmt)
    return spec.platform if spec and spec.platform else fmt


@dataclass(frozen=True)
class Probed:
    """What a candidate's probe (its load and one run in a child) settled: the load options (LiteRT's kernels),
    the note on them, and what the child took."""

    options: dict[str, Any]
    kernels_note: str | None
    seconds: float


def probe(choice: ModelChoice, config: ServeConfig) -> Probed | None:
    """Load CHOICE and run it once on random inputs in a child process (edgekit.measure.profile.first_run_isolated):
    a runtime that crashes there (SIGILL: an instruction this CPU lacks) is a RuntimeFailure naming it, not a dead
    server. On the CPU only (a crash on an instruction the board lacks is a CPU matter; an accelerator's device
    is not opened twice), and not with EDGEKIT_NO_ISOLATION=1: None then, nothing probed."""
    from edgekit.core.isolate import isolation_enabled
    from edgekit.measure.profile import first_run_isolated
    from edgekit.runtimes import get_runtime

    if choice.device != "cpu" or not isolation_enabled():
        return None
    t0 = time.perf_counter()
    options, note = first_run_isolated(choice.path, get_runtime(choice.runtime), choice.device,
                                       config.threads or choice.threads, 1, dict(config.options), probe=True)
    return Probed(options, note, time.perf_counter() - t0)


def first_that_runs(candidates: list[ModelChoice], config: ServeConfig,
                    say: Callable[[str], None]) -> tuple[ModelChoice, Probed | None]:
    """The first of CANDIDATES (edgekit.serve.models.resolve_candidates, best first) whose probe passes, and what it
    settled. One that fails (RuntimeFailure: a crash in the child, a load error) is skipped with a line through SAY
    naming the artifact, the runtime and why; a later candidate whose runtime is not available here, or that fails
    in any way, too. None runs: RuntimeFailure with each candidate's reason (one candidate: its own error). Where
    nothing is probed (not the CPU, EDGEKIT_NO_ISOLATION=1) the first candidate is served as before."""
    from edgekit.runtimes import get_runtime

    reasons: list[str] = []
    last: EdgekitError | None = None
    for i, c in enumerate(candidates):
        what = f"{c.path.name} ({c.format} {c.precision or ''}) on {c.runtime}".replace(" )", ")")
        try:
            if i > 0:
                ok, why = get_runtime(c.runtime).available(c.device)
                if not ok:
                    reasons.append(f"{what}: not available here: {why}")
                    continue
            probed = probe(c, config)
        except EdgekitError as exc:
            if i == 0 and not isinstance(exc, RuntimeFailure):
                raise  # the first candidate's usage error or missing runtime: as before, not a fallback
            if len(candidates) == 1:
                raise  # nothing to fall to: its own error, as an unprobed load would have said it
            reasons.append(f"{what}: {exc.message}")
            last = exc
            more = i + 1 < len(candidates)
            say(f"model {c.name}: {what} cannot run here: {exc.message}"
                + ("; trying the next candidate" if more else ""))
            continue
        if reasons:
            say(f"model {c.name}: serving {what} instead (candidate {i + 1} of {len(candidates)})")
        return c, probed
    raise RuntimeFailure(f"No candidate for model {candidates[0].name} runs here:\n  "
                         + "\n  ".join(reasons),
                         hint=(last.hint if last is not None and last.hint else None)
                         or "Install a runtime built for this CPU, or convert to another format.")


class ServedModel:
    def __init__(self, choice: ModelChoice, config: ServeConfig, metrics: Metrics,
                 labels: list[str] | None = None, probed: Probed | None = None) -> None:
        self.choice = choice
        self.probed = probed  # the child's first run first_that_runs already did (its kernels), if any
        self.name = choice.name
        self.config = config
        self.metrics = metrics
        self.labels = labels
        self.pool: RuntimePool | None = None
        self.inputs: list[WireTensor] = []
        self.outputs: list[WireTensor] = []
        self.max_batch = 1
        self.in_service = 0  # requests admitted and not yet answered (see admitted())
        self.load_seconds = 0.0
        self.info: dict[str, Any] = {}
        self.detector: Detector | None = None  # the detection head its manifest records (/detect), if any
        self.options: dict[str, Any] = dict(config.options)  # runtime load options (kernels settled by a child)

    # ------------------------------------------------------------------ loading
    @property
    def threads(self) -> int | None:
        return self.config.threads or self.choice.threads

    def _open(self) -> Runtime:
        from edgekit.runtimes import get_runtime

        rt = get_runtime(self.choice.runtime)()
        rt.load(self.choice.path, device=self.choice.device, threads=self.threads, **self.options)
        return rt

    def _first_run_isolated(self) -> None:
        """Run the model once in a child first, as `edgekit profile` does: LiteRT's kernels can abort the process
        on a badly quantized model, which would kill the server with a signal; the child's crash becomes a
        RuntimeFailure naming it, and the kernels the child settled on are the ones the workers load.
        (LiteRT on the CPU only; EDGEKIT_NO_ISOLATION=1 skips it.)"""
        from edgekit.measure.profile import first_run_isolated
        from edgekit.runtimes import get_runtime

        self.options, note = first_run_isolated(self.choice.path, get_runtime(self.choice.runtime),
                                                 self.choice.device, self.threads, 1, dict(self.config.options))
        if note:
            self.info["kernels_note"] = note

    def load(self) -> None:
        """Load `workers` runtimes, each warmed up with one inference; check labels against the output."""
        t0 = time.perf_counter()
        if self.probed is None:
            self._first_run_isolated()
        else:
            self.options = dict(self.probed.options)
            if self.probed.kernels_note:
                self.info["kernels_note"] = self.probed.kernels_note
            t0 -= self.probed.seconds
        pool = RuntimePool(self._open, workers=self.config.workers, max_queue=self.config.max_queue,
                           batch_timeout_s=self.config.batch_timeout_ms / 1e3, name=self.name)
        pool.start(warmup=lambda rt: rt.run(rt.random_inputs()))
        rt = pool.runtimes[0]
        recorded = {s.name: s for s in (self.choice.artifact.inputs if self.choice.artifact else [])}
        specs = [replace(s, layout=s.layout or (recorded[s.name].layout if s.name in recorded else None))
                 for s in rt.inputs]  # the manifest knows the layout where the runtime cannot tell
        names = renaming(self.choice.artifact, self.choice.source, [s.name for s in specs],
                         [s.name for s in rt.outputs])
        self.inputs, self.outputs = wire_tensors(specs, names.inputs), wire_tensors(rt.outputs, names.outputs)
        log.debug("model %s: tensors served as %s (the artifact's own names accepted too)", self.name,
                  {**names.inputs, **names.outputs})
        self.info = {"runtime": self.choice.runtime, "runtime_version": type(rt).version(),
                     "device": self.choice.device, **self.info, **rt.info()}
        # dynamic batching only where every input's batch is dynamic; otherwise one request at a time
        dynamic = bool(rt.inputs) and all(s.shape and s.shape[0] <= 0 for s in rt.inputs)
        self.max_batch = pool.max_batch = self.config.max_batch if dynamic else 1
        self.pool = pool
        self.load_seconds = time.perf_counter() - t0  # the child's first run, every worker's load and warm-up
        self.metrics.load_seconds.labels(self.name).set(self.load_seconds)
        found = detector_of(self.choice.artifact, [w.spec.name for w in self.outputs])
        # the head's roles by served name, as run() hands the outputs back
        self.detector = None if found is None else replace(found, outputs=[names.outputs.get(o, o)
                                                                           for o in found.outputs])
        if self.labels is not None and self.classes != len(self.labels):
            self.labels = None  # --labels names another model's classes (load_models checks that one model fits)

    @property
    def classes(self) -> int | None:
        """How many classes it tells apart: a detector's head says; otherwise its first output's last axis."""
        if self.detector is not None:
            return self.detector.classes
        return self.outputs[0].shape[-1] if self.outputs else None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    # ------------------------------------------------------------------ serving
    @property
    def ready(self) -> bool:
        return self.pool is not None

    @property
    def capacity(self) -> int:
        """Requests admitted at once: what the workers compute (workers x max batch) plus --max-queue waiting."""
        return self.config.workers * self.max_batch + self.config.max_queue

    def _busy(self) -> RequestError:
        return RequestError(503, f"model '{self.name}' has {self.config.max_queue} requests waiting (--max-queue); "
                            "try again shortly.", headers={"Retry-After": "1"})

    @contextlib.contextmanager
    def admitted(self) -> Iterator[None]:
        """Hold one of CAPACITY places from routing (before the body is read) to the answer; 503 when none is
        free. The whole backlog is bounded, not only the part that reached the pool's queue: under overload a
        request is refused at once instead of waiting in the event loop behind the others' bodies."""
        if self.in_service >= self.capacity:
            raise self._busy()
        self.in_service += 1  # the event loop is one thread: no lock needed
        try:
            yield
        finally:
            self.in_service -= 1

    async def run(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Model-dtype ARRAYS in, by served name; the outputs as sent (by served name, dequantized where
        quantized). The one place the served names meet the artifact's: the runtime knows only its own."""
        if self.pool is None:
            raise RequestError(503, f"model '{self.name}' is not loaded.", headers={"Retry-After": "1"})
        own = {w.name: w.spec.name for w in self.inputs}
        try:
            job = self.pool.submit({own.get(k, k): v for k, v in arrays.items()})
        except QueueFull:
            raise self._busy() from None
        try:
            out = await asyncio.wait_for(asyncio.wrap_future(job.future), self.config.timeout_s)
        except asyncio.TimeoutError:
            job.future.cancel()
            raise RequestError(504, f"no result within {self.config.timeout_s:g} s (--timeout-s).") from None
        except UsageError as exc:
            raise RequestError(400, exc.message, "inputs") from None
        except EdgekitError as exc:  # chained: the server's log shows the runtime's traceback (edgekit.serve.logs)
            raise RequestError(500, f"inference failed: {exc.message}") from exc
        except Exception as exc:  # noqa: BLE001 - whatever a runtime raised: a 500, the server stays up
            raise RequestError(500, f"inference failed: {type(exc).__name__}: {exc}") from exc
        self.metrics.queue_seconds.labels(self.name).observe(max(0.0, job.started - job.enqueued))
        self.metrics.inference_seconds.labels(self.name).observe(max(0.0, job.finished - job.started))
        self.metrics.batch_size.labels(self.name).observe(job.batch)
        by_own = {w.spec.name: w for w in self.outputs}
        return {by_own[k].name if k in by_own else k: by_own[k].from_model(v) if k in by_own else v
                for k, v in out.items()}

    def metadata(self) -> dict[str, Any]:
        c = self.choice
        params: dict[str, Any] = {"path": c.path.name, "format": c.format, "precision": c.precision,
                                  "max_batch": self.max_batch, "aliases": list(c.aliases), **self.info,
                                  "layouts": {w.name: w.spec.layout for w in self.inputs},
                                  "quantized_inputs_take_fp32": [w.name for w in self.inputs if w.quantized],
                                  # served name -> the artifact's own (accepted too): edgekit.serve.names
                                  "artifact_names": {"inputs": {w.name: w.spec.name for w in self.inputs},
                                                     "outputs": {w.name: w.spec.name for w in self.outputs}}}
        if c.chosen_by:
            params["chosen_by"] = c.chosen_by  # its measured p50 in the bench report, or the format table's rank
        if c.preprocessing is not None:
            params["preprocessing"] = c.preprocessing.to_dict()
        if self.detector is not None:
            own = {w.name: w.spec.name for w in self.outputs}
            params["detection_head"] = {**self.detector.head.to_dict(), "served_outputs": self.detector.outputs,
                                        "artifact_outputs": [own.get(o, o) for o in self.detector.outputs]}
        return {"name": self.name, "versions": [VERSION], "platform": platform(c.format),
                "inputs": [w.metadata() for w in self.inputs], "outputs": [w.metadata() for w in self.outputs],
                "parameters": params}

    def triton_config(self) -> dict[str, Any]:
        """Triton's model configuration in its JSON form (`GET .../config`, tritonclient's get_model_config).

        max_batch_size 0 with the batch in dims (-1 where dynamic): a request may carry any batch the model
        takes, which Triton's config says this way; `--max-batch` is edgekit's own server-side batching."""
        def tensors(wires: list[WireTensor]) -> list[dict[str, Any]]:
            return [{"name": w.name, "data_type": f"TYPE_{w.datatype}", "dims": list(w.shape)} for w in wires]

        return {"name": self.name, "platform": platform(self.choice.format),
                "max_batch_size": 0, "input": tensors(self.inputs), "output": tensors(self.outputs),
                "instance_group": [{"count": self.config.workers, "kind": "KIND_CPU" if self.choice.device == "cpu"
                                    else "KIND_GPU" if self.choice.device == "gpu" else "KIND_MODEL"}]}


__all__ = ["VERSION", "platform", "Probed", "ServedModel", "first_that_runs", "probe"]
