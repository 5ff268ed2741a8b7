"""edgekit: convert, inspect, profile and gate CNNs for edge devices.

The package root stays light: heavy frameworks are imported inside the functions that need them,
so `import edgekit` and `edgekit --help` never load torch or TensorFlow.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from edgekit._version import __version__

# TensorFlow 2.21's oneDNN matmul corrupts the heap on a rank-4 x rank-2 product (tensorflow/tensorflow#117700,
# fix not released): onnx2tf's MatMul layout search runs such products, and a ConvNeXt-V2 died in it with
# SIGSEGV/"free(): invalid pointer" at a different node each run. With oneDNN's kernels off it converts. They are
# off by default before TensorFlow is first imported (the Keras reference runs about 1.7x slower, ~1 s per 200
# samples on MobileNetV2 at 160x160); TF_ENABLE_ONEDNN_OPTS=1 set by the user is respected.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

if TYPE_CHECKING:  # pragma: no cover
    from edgekit.core.artifact import Artifact


def convert(source: str, **options: Any) -> list[Artifact]:
    """Convert SOURCE and return the validated artifacts (see `edgekit.conversion.pipeline.convert`)."""
    from edgekit.conversion.pipeline import convert as _convert

    return _convert(source, **options).artifacts


__all__ = ["__version__", "convert"]
