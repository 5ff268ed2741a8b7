"""Which LiteRT Interpreter class runs a .tflite here: the one place both the runtime (edgekit.runtimes.litert_io)
and the calibration of a .tflite (edgekit.tflite.calibrate) take it from."""

from __future__ import annotations

import importlib
from typing import Any

from edgekit.core._deps import available
from edgekit.core.errors import MissingDependency


def interpreter_class() -> Any:
    """The Interpreter class of ai_edge_litert, else of tf.lite, else MissingDependency."""
    if available("ai_edge_litert"):
        return importlib.import_module("ai_edge_litert.interpreter").Interpreter
    if available("tensorflow"):
        return importlib.import_module("tensorflow").lite.Interpreter
    raise MissingDependency(
        "No TFLite runtime is installed (neither ai_edge_litert nor tensorflow).",
        hint="pip install 'edgekit[runtime]'  (or just: pip install ai-edge-litert)",
    )


__all__ = ["interpreter_class"]
