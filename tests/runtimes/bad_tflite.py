"""Hand-built .tflite files that LiteRT cannot run, and child functions for the isolation tests.

Found by trying malformed int8 graphs against ai_edge_litert here (each verified in a plain
`python -c`): an ADD whose int8 scales are negative makes the builtin kernels' quantized-multiplier
check abort the process (SIGABRT) even with XNNPACK on; with zero scales XNNPACK refuses the model
("failed to prepare") and the builtin kernels abort; a MUL with zero scales is refused by XNNPACK
and run by the builtin kernels (the fallback's case).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_EDGETPU_TESTS = str(Path(__file__).resolve().parents[1] / "edgetpu")
if _EDGETPU_TESTS not in sys.path:
    sys.path.insert(0, _EDGETPU_TESTS)

from tflite_builder import Graph  # noqa: E402

from edgekit.core.records import Record  # noqa: E402

HEAVY = ("tensorflow", "torch", "onnx", "onnxruntime", "keras", "jax")


def _binary(path: Path, op: str, scale_in: float, scale_out: float) -> Path:
    g = Graph()
    x = g.tensor("input", [1, 8], scale=scale_in)
    y = g.tensor("output", [1, 8], scale=scale_out)
    g.op(op, [x, x], [y])
    return g.write(path, [x], [y])


def aborts_everywhere(path: Path) -> Path:
    """int8 ADD, negative input scale: SIGABRT with XNNPACK and with the builtin kernels."""
    return _binary(path, "ADD", -1.0, 0.05)


def xnnpack_refuses_builtin_aborts(path: Path) -> Path:
    """int8 ADD, zero scales: XNNPACK fails to prepare, the builtin kernels abort (the ResNet-18 of issue 8)."""
    return _binary(path, "ADD", 0.0, 0.0)


def xnnpack_refuses_builtin_runs(path: Path) -> Path:
    """int8 MUL, zero scales: XNNPACK fails to prepare, the builtin kernels run it."""
    return _binary(path, "MUL", 0.0, 0.0)


# --- functions run in the child by edgekit.core.isolate ------------------------------------------------------
@dataclass(frozen=True)
class EchoRequest(Record):
    """A child request with a list, for the round trip (edgekit.core.isolate sends records, never dicts)."""

    a: list[int] = field(default_factory=list)


def echo(request: EchoRequest, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    return ({"got": request.to_dict(), "type": type(request).__name__, "names": sorted(arrays)},
            {"doubled": arrays["x"] * 2})


def abort(request: Any, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    sys.stderr.write("about to abort: the last words\n")
    sys.stderr.flush()
    os.abort()


def usage_error(request: Any, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any],
                                                                                 dict[str, np.ndarray]]:
    from edgekit.core.errors import UsageError

    raise UsageError("bad input in the child", hint="fix it", step="validate", op="ADD")


def bug(request: Any, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    return {}, {"x": {}["missing"]}


def check_and_list_modules(request: Any, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any],
                                                                                 dict[str, np.ndarray]]:
    """What check_artifact's child does, then which heavy libraries it imported."""
    from edgekit.validation.artifact import _check_in_child

    answer, out = _check_in_child(request, arrays)
    answer["heavy"] = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
    return answer, out
