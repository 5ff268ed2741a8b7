"""Run .tflite candidates on float samples in a child process (a freshly written int8 model can make
LiteRT abort natively: that must fail the candidate, not edgekit), all of one stage in one child.

A candidate fails (None) only for what LiteRT does to it: a native abort of the child, or the RuntimeFailure
the runtime's border (edgekit.runtimes.base) turns LiteRT's own exceptions into. Anything else is a bug in
edgekit (a TypeError in this code, the InternalError the border or the child makes of one) and is raised:
judged as "LiteRT could not run it", it would have been dropped by the search as one more failed recipe.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core.errors import RuntimeFailure
from edgekit.core.records import Record


def run_tflite(paths: list[Path], x: np.ndarray, latency: bool = False) -> list[np.ndarray | None]:
    """First output of each model on every sample of X (float in, float out); None for one that failed.
    LATENCY: instead, each model's median milliseconds per invoke (one thread), as a 1-element array."""
    ran = _ask(RunRequest(paths=[str(p) for p in paths], latency=latency), x)
    if ran is None:  # the child crashed
        if len(paths) == 1:
            return [None]
        return [run_tflite([p], x, latency)[0] for p in paths]  # one of them crashed the child: find which
    _, arrays = ran
    return [arrays.get(f"y{i}") for i in range(len(paths))]


def _ask(request: RunRequest, x: np.ndarray) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """`_run_in_child`'s answer to REQUEST on X, in a child process where isolation is on; None where it crashed."""
    from edgekit.core.isolate import isolation_enabled, run_isolated

    if not isolation_enabled():
        return _run_in_child(request, {"x": x})
    try:
        return run_isolated("edgekit.quantize.tflite.run:_run_in_child", request, {"x": x}, who="LiteRT",
                            doing="running int8 candidates")
    except RuntimeFailure:
        return None


def run_tflite_outputs(paths: list[Path], x: np.ndarray) -> list[dict[str, np.ndarray] | None]:
    """Every output of each model, by tensor name, on every sample of X (float in, float out); None for one that
    failed. For a detector whose boxes and scores are separate outputs (MediaPipe's anchor heads), which the first
    output alone does not judge."""
    ran = _ask(RunRequest(paths=[str(p) for p in paths], every_output=True), x)
    if ran is None:  # the child crashed
        if len(paths) == 1:
            return [None]
        return [run_tflite_outputs([p], x)[0] for p in paths]
    answer, arrays = ran
    names = answer.get("names", {})
    return [{n: arrays[f"y{i}_{k}"] for k, n in enumerate(names[str(i)])} if str(i) in names else None
            for i in range(len(paths))]


@dataclass(frozen=True)
class RunRequest(Record):
    """What `_run_in_child` is sent besides the samples ("x"): the candidates, and whether to time them instead
    (LATENCY) or to send back every output (EVERY_OUTPUT: arrays y<i>_<k>, their names in the answer) rather than
    the first.

    A record rather than a dict so a renamed key fails at the call, not as a KeyError inside the child.
    """

    paths: list[str]
    latency: bool = False
    every_output: bool = False


def _run_in_child(request: RunRequest, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any],
                                                                              dict[str, np.ndarray]]:
    from edgekit.core.cores import usable_cores
    from edgekit.runtimes import runtime_for_format

    x = arrays["x"]
    out: dict[str, np.ndarray] = {}
    errors: dict[str, str] = {}
    names: dict[str, list[str]] = {}
    for i, path in enumerate(request.paths):
        if request.latency:
            out[f"y{i}"] = np.array([latency_ms(path)])
            continue
        runtime = runtime_for_format("tflite")()
        try:
            runtime.load(Path(path), threads=usable_cores())  # LiteRT runs on one thread unless told
            spec = runtime.inputs[0]
            batch = spec.shape[0] if spec.shape and spec.shape[0] > 0 else 1
            wanted = [o.name for o in (runtime.outputs if request.every_output else runtime.outputs[:1])]
            parts: dict[str, list[np.ndarray]] = {n: [] for n in wanted}
            for k in range(0, len(x), batch):
                chunk = x[k:k + batch]
                n = len(chunk)
                if n < batch:
                    chunk = np.concatenate([chunk, np.repeat(chunk[-1:], batch - n, axis=0)])
                got = runtime.run_float({spec.name: chunk.astype(np.float32)})
                for name in wanted:
                    parts[name].append(np.asarray(got[name], np.float32)[:n])
            if request.every_output:
                for k, name in enumerate(wanted):
                    out[f"y{i}_{k}"] = np.concatenate(parts[name])
                names[str(i)] = wanted
            else:
                out[f"y{i}"] = np.concatenate(parts[wanted[0]])
        except RuntimeFailure as exc:  # LiteRT refused this candidate: it is judged failed, the others go on
            errors[path] = exc.message[:300]
        finally:
            runtime.close()
    return {"errors": errors, "names": names}, out


def latency_ms(path: str, runs: int = 20) -> float:
    """Median milliseconds of one invoke of PATH on zeros, one thread, after 3 warm-ups."""
    import time

    from edgekit.runtimes.litert_io import interpreter_class

    it = interpreter_class()(model_path=path, num_threads=1)
    it.allocate_tensors()
    d = it.get_input_details()[0]
    it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
    for _ in range(3):
        it.invoke()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        it.invoke()
        times.append(time.perf_counter() - t0)
    return float(1000 * np.median(times))


def run_first_output(path: str | Path, x: np.ndarray) -> np.ndarray:
    """The first output of the .tflite at PATH on every sample of X, run by LiteRT in its child process."""
    y = run_tflite([Path(path)], x)[0]
    if y is None:
        raise RuntimeError(f"LiteRT could not run {path}")
    return y


__all__ = ["RunRequest", "latency_ms", "run_first_output", "run_tflite", "run_tflite_outputs"]
