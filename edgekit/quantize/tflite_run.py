"""Run .tflite candidates on float samples in a child process (a freshly written int8 model can make
LiteRT abort natively: that must fail the candidate, not edgekit), all of one stage in one child."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from edgekit.errors import RuntimeFailure


def run_tflite(paths: list[Path], x: np.ndarray) -> list[np.ndarray | None]:
    """First output of each model on every sample of X (float in, float out); None for one that failed."""
    from edgekit.isolate import isolation_enabled, run_isolated

    request = {"paths": [str(p) for p in paths]}
    if not isolation_enabled():
        answer, arrays = _run_in_child(request, {"x": x})
    else:
        try:
            answer, arrays = run_isolated("edgekit.quantize.tflite_run:_run_in_child", request, {"x": x},
                                          who="LiteRT", doing="running int8 candidates")
        except RuntimeFailure:
            if len(paths) == 1:
                return [None]
            return [run_tflite([p], x)[0] for p in paths]  # one of them crashed the child: find which
    return [arrays.get(f"y{i}") for i in range(len(paths))]


def _run_in_child(request: dict[str, Any], arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any],
                                                                                    dict[str, np.ndarray]]:
    from edgekit.runtimes import runtime_for_format

    x = arrays["x"]
    out: dict[str, np.ndarray] = {}
    errors: dict[str, str] = {}
    for i, path in enumerate(request["paths"]):
        runtime = runtime_for_format("tflite")()
        try:
            runtime.load(Path(path))
            spec = runtime.inputs[0]
            batch = spec.shape[0] if spec.shape and spec.shape[0] > 0 else 1
            parts = []
            for k in range(0, len(x), batch):
                chunk = x[k:k + batch]
                n = len(chunk)
                if n < batch:
                    chunk = np.concatenate([chunk, np.repeat(chunk[-1:], batch - n, axis=0)])
                y = runtime.run_float({spec.name: chunk.astype(np.float32)})[runtime.outputs[0].name]
                parts.append(np.asarray(y, np.float32)[:n])
            out[f"y{i}"] = np.concatenate(parts)
        except Exception as exc:  # noqa: BLE001 - a candidate that cannot run is judged failed, the others go on
            errors[path] = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            runtime.close()
    return {"errors": errors}, out


__all__ = ["run_tflite"]
