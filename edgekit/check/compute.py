"""MACs, parameters and operator types of artifact files, read by `edgekit inspect` in a child process.

The files `check` reads may come from anyone, and the ONNX parser is native code: a crafted file that
crashes it must end as a note ("operators and MACs not read"), not take the CI job down. All files go
to one child (edgekit.core.isolate), so the start-up is paid once; EDGEKIT_NO_ISOLATION=1 reads them here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core.errors import EdgekitError
from edgekit.core.records import Record


@dataclass(frozen=True)
class InspectRequest(Record):
    """What `inspect_files` is sent: the (key, path) pairs of the files to read, all in one child.

    A record rather than a dict so a renamed key fails at the call, not as a KeyError inside the child.
    """

    files: list[list[str]]  # [key, path] pairs (JSON has no tuples)


def inspect_files(request: InspectRequest, _arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any],
                                                                                   dict[str, np.ndarray]]:
    """REQUEST's files -> {"facts": {key: {"macs", "params", "ops"} or {"error": message}}}."""
    from edgekit.inspect import inspect_model

    out: dict[str, Any] = {}
    for key, path in request.files:
        try:
            report = inspect_model(Path(path))
        except EdgekitError as exc:
            out[key] = {"error": exc.message}
            continue
        out[key] = {"macs": int(report.macs), "params": int(report.params.count), "ops": sorted(report.op_counts)}
    return {"facts": out}, {}


def read_compute(files: list[tuple[str, Path]]) -> dict[str, dict[str, Any]]:
    """KEY -> {"macs", "params", "ops"} (or {"error"}) for each (key, path) of FILES."""
    if not files:
        return {}
    request = InspectRequest(files=[[key, str(path)] for key, path in files])
    from edgekit.core.isolate import isolation_enabled, run_isolated

    if not isolation_enabled():
        return inspect_files(request, {})[0]["facts"]
    try:
        answer, _ = run_isolated("edgekit.check.compute:inspect_files", request, who="edgekit inspect",
                                 doing="reading the artifacts' operators and MACs", timeout=300)
    except EdgekitError as exc:  # the child crashed or hung on one of the files
        return {key: {"error": exc.message} for key, _ in files}
    return answer["facts"]


__all__ = ["InspectRequest", "inspect_files", "read_compute"]
