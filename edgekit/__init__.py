"""edgekit: convert, inspect, profile and gate CNNs for edge devices.

The public names (`edgekit.convert`, `load`, `profile`, `bench`, `check`, `inspect`, the records they return
and the errors) are listed once, in edgekit.api.PUBLIC, and resolved here on first use: the package root
stays light, heavy frameworks are imported inside the functions that need them, so `import edgekit` and
`edgekit --help` never load torch or TensorFlow.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from edgekit._version import __version__
from edgekit.api import PUBLIC

# TensorFlow 2.21's oneDNN matmul corrupts the heap on a rank-4 x rank-2 product (tensorflow/tensorflow#117700,
# fix not released): onnx2tf's MatMul layout search runs such products, and a ConvNeXt-V2 died in it with
# SIGSEGV/"free(): invalid pointer" at a different node each run. With oneDNN's kernels off it converts. They are
# off by default before TensorFlow is first imported (the Keras reference runs about 1.7x slower, ~1 s per 200
# samples on MobileNetV2 at 160x160); TF_ENABLE_ONEDNN_OPTS=1 set by the user is respected.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

if TYPE_CHECKING:  # pragma: no cover  (what type checkers see; tests/api/test_public_names.py keeps it = PUBLIC)
    from edgekit.api.artifact import ConvertedArtifact as ConvertedArtifact
    from edgekit.api.convert import convert as convert
    from edgekit.api.measure import bench as bench
    from edgekit.api.measure import load as load
    from edgekit.api.measure import profile as profile
    from edgekit.api.result import ArtifactNotFound as ArtifactNotFound
    from edgekit.api.result import Conversion as Conversion
    from edgekit.api.result import open_run as open_run
    from edgekit.api.runnable import LoadedModel as LoadedModel
    from edgekit.api.runnable import Tensor as Tensor
    from edgekit.check import check as check
    from edgekit.check.records import CheckReport as CheckReport
    from edgekit.core.artifact import Artifact as Artifact
    from edgekit.core.artifact import Manifest as Manifest
    from edgekit.core.errors import ConversionError as ConversionError
    from edgekit.core.errors import EdgekitError as EdgekitError
    from edgekit.core.errors import FidelityError as FidelityError
    from edgekit.core.errors import MissingDependency as MissingDependency
    from edgekit.core.errors import NotAvailable as NotAvailable
    from edgekit.core.errors import RuntimeCrash as RuntimeCrash
    from edgekit.core.errors import RuntimeFailure as RuntimeFailure
    from edgekit.core.errors import UnsupportedModel as UnsupportedModel
    from edgekit.core.errors import UsageError as UsageError
    from edgekit.inspect import inspect as inspect
    from edgekit.inspect.records import InspectReport as InspectReport
    from edgekit.measure.bench_report import BenchReport as BenchReport
    from edgekit.measure.profile import ProfileResult as ProfileResult


def __getattr__(name: str) -> Any:
    """A public name (edgekit.api.PUBLIC), imported on first use."""
    target = PUBLIC.get(name)
    if target is None:
        raise AttributeError(f"module 'edgekit' has no attribute {name!r}")
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    value = getattr(module, attr) if attr else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC})


__all__ = ["__version__", *PUBLIC]
