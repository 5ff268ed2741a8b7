"""What both LiteRT backends share: the Interpreter class to use and TensorSpecs from its details.

The Interpreter backend (litert.py) and the CompiledModel backend (litert_compiled.py) describe
tensors the same way, quantization included, and CompiledModel reads those details through an
Interpreter over the same file. This leaf module holds that shared part, so neither backend
module imports the other. `LiteRTBackend` is the small interface `LiteRT` holds one of.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from edgekit.core.artifact import QuantParams, TensorSpec
from edgekit.tflite.interpreter import interpreter_class


def tensor_spec(detail: dict[str, Any]) -> TensorSpec:
    """TensorSpec from an Interpreter input/output detail dict."""
    sig = detail.get("shape_signature")
    shape = [int(d) for d in (sig if sig is not None and len(sig) else detail["shape"])]
    q = detail.get("quantization_parameters") or {}
    quant = QuantParams.from_arrays(q.get("scales"), q.get("zero_points"), int(q.get("quantized_dimension", 0)))
    return TensorSpec(name=detail["name"], shape=shape, dtype=np.dtype(detail["dtype"]).name, quantization=quant)


class LiteRTBackend(Protocol):
    """One loaded .tflite behind one LiteRT API; `LiteRT` maps its vendor errors at the border."""

    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    delegates: list[str]  # what accelerates it, as `info()["delegates"]` reports ("xnnpack", "edgetpu", "gpu" ...)

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...

    def bind(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]: ...

    def info(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


__all__ = ["LiteRTBackend", "interpreter_class", "tensor_spec"]
