"""Runtime backends, by name. Plain strings: listing them imports nothing heavy."""

from __future__ import annotations

from edgekit.registry import resolve
from edgekit.runtimes.base import Runtime

RUNTIMES: dict[str, str] = {
    "onnxruntime": "edgekit.runtimes.onnxruntime:OnnxRuntime",
    "litert": "edgekit.runtimes.litert:LiteRT",
}

# The runtime used when none is named, per artifact format.
DEFAULT_FOR_FORMAT: dict[str, str] = {
    "onnx": "onnxruntime",
    "tflite": "litert",
    "edgetpu": "litert",
}


def get_runtime(name: str) -> type[Runtime]:
    return resolve(RUNTIMES, name, "runtime")


def runtime_for_format(fmt: str) -> type[Runtime]:
    from edgekit.errors import UsageError

    if fmt not in DEFAULT_FOR_FORMAT:
        raise UsageError(f"No runtime runs '{fmt}' artifacts.", hint=f"Runnable formats: {', '.join(DEFAULT_FOR_FORMAT)}.")
    return get_runtime(DEFAULT_FOR_FORMAT[fmt])


__all__ = ["RUNTIMES", "DEFAULT_FOR_FORMAT", "Runtime", "get_runtime", "runtime_for_format"]
