"""Edge TPU support: pre-flight prediction, the compiler call and its log parser, and their records.

Light at import time (no TensorFlow; ai_edge_litert only when a model is read), so that
`edgekit inspect` and the CLI stay fast on a device install. Models are read through
`edgekit.tflite.model`, never through `edgekit.inspect` (which builds on this package).
"""

from __future__ import annotations

from edgekit.edgetpu.compiler import compare, compile_model, find_compiler, how_to_finish
from edgekit.edgetpu.logparse import parse_log
from edgekit.edgetpu.preflight import preflight, preflight_model
from edgekit.edgetpu.records import CompileResult, CompilerLog, PreflightReport

__all__ = [
    "CompileResult",
    "CompilerLog",
    "PreflightReport",
    "compare",
    "compile_model",
    "find_compiler",
    "how_to_finish",
    "parse_log",
    "preflight",
    "preflight_model",
]
