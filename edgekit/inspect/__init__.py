"""`edgekit inspect`: what is inside a .tflite, .onnx or OpenVINO IR (.xml + .bin) file, without TensorFlow.

`inspect_model(path)` returns an `InspectReport` (edgekit.inspect.records; `to_dict()` is the
JSON of `edgekit inspect --json`): format, size, sha256, inputs/outputs with shape, dtype and
quantization, the ops in execution order with their tensors and MACs, parameters by dtype, total
MACs, whether every shape is static, and for .tflite the Edge TPU pre-flight.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.core.flags import edgetpu_runtime
from edgekit.core.formats import FORMATS, sniffed
from edgekit.core.handles import artifact_file, callable_package
from edgekit.core.registry import resolve
from edgekit.core.sniff import read_head

if TYPE_CHECKING:  # pragma: no cover
    from edgekit.inspect.records import InspectReport


def inspect_model(path: str | Path, min_runtime: int | None = None) -> InspectReport:
    """Inspect the model at PATH (.tflite, .onnx or an OpenVINO IR's .xml, told apart by content)."""
    runtime = edgetpu_runtime(min_runtime)  # judged as --edgetpu-min-runtime is (its one parser): 9 refused, "13" 13
    p = Path(path)
    if not p.exists():
        raise UsageError(f"No such file: {p}.", hint="Check the path (it is relative to the current folder).")
    if p.is_dir():
        raise UsageError(
            f"{p} is a folder; `edgekit inspect` takes one model file (.tflite, .onnx, an OpenVINO .xml ...).",
            hint="Pass one of the files that `edgekit convert` wrote (see its manifest.json).",
        )
    fmt = sniffed(p) or _source_family(p)
    spec = FORMATS.get(fmt or "")
    if spec is None or spec.inspector is None:
        readable = ", ".join(f"{name} ({f.suffix})" for name, f in FORMATS.items() if f.inspector)
        what = f"a {fmt} model" if fmt else f"not a model file edgekit reads (first bytes: {read_head(p, 8)!r})"
        raise UnsupportedModel(f"{p} is {what}: `edgekit inspect` reads {readable} files.",
                               hint="Convert it with `edgekit convert`, then inspect what it wrote.")
    describe = resolve({spec.name: spec.inspector}, spec.name, "inspector")
    return describe(p, min_runtime=runtime)


def _source_family(path: Path) -> str | None:
    """The family of a source model file edgekit.sources recognises by content (an ONNX file without its suffix);
    None for anything else."""
    from edgekit.sources.detect import FAMILY, detect

    try:
        return FAMILY.get(detect(path))
    except UnsupportedModel:
        return None


def inspect(artifact: str | Path | Any, min_runtime: int | None = None) -> InspectReport:
    """`edgekit inspect` from Python: ops, shapes, MACs, parameters and, for .tflite, the Edge TPU pre-flight.

    ARTIFACT: a model file, or a ConvertedArtifact of `edgekit.convert()`'s result. MIN_RUNTIME: the Edge TPU
    runtime version to pre-flight against (default 14). Returns the InspectReport (`to_dict()` is the JSON of
    `edgekit inspect --json`). This package is callable as this function: `edgekit.inspect(path)`.
    """
    return inspect_model(artifact_file(artifact), min_runtime=min_runtime)


__all__ = ["inspect", "inspect_model"]

callable_package(__name__, inspect)  # edgekit.inspect(...) calls inspect(...) (edgekit.core.handles)
