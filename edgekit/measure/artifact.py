"""What is known about the file being measured: its digest and size, its manifest entry, its precision,
and its MAC count (from `edgekit inspect`).

Bench and profile both ask these questions of a path; the answers come from the records that
describe the file (the manifest beside it, the inspect report), never from a second copy of their logic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgekit.core.errors import EdgekitError
from edgekit.measure.records import ArtifactInfo


def describe_artifact(path: Path, fmt: str) -> tuple[ArtifactInfo, list[str]]:
    """The `artifact` object of a ProfileResult for PATH, and notes for the reader (a changed file)."""
    from edgekit.core.fsutil import sha256_path, size_path

    entry = manifest_entry(path)
    precision, precision_source = guess_precision(path, entry)
    info = ArtifactInfo(path=str(path), sha256=sha256_path(path), format=fmt, precision=precision,
                        precision_source=precision_source, size_bytes=size_path(path))
    notes: list[str] = []
    if entry is not None and entry.sha256 and entry.sha256 != info.sha256:
        notes.append("the file's sha256 differs from its manifest entry: it changed after conversion and "
                     "validation (the manifest's fidelity figures may not describe it)")
    return info, notes


def manifest_entry(path: Path) -> Any:
    """The Artifact record for PATH in a manifest.json beside it (or one folder up), if any."""
    found = manifest_for(path)
    return found[1] if found is not None else None


def manifest_for(path: Path) -> tuple[Any, Any] | None:
    """(Manifest, the Artifact record for PATH) from a manifest.json beside PATH (or one folder up), if any."""
    from edgekit.core.artifact import Manifest

    for folder in (path.parent, path.parent.parent):
        mf = folder / "manifest.json"
        if mf.is_file():
            try:
                m = Manifest.read(mf)
            except EdgekitError:
                continue
            for a in m.artifacts:
                try:
                    if m.resolve(a, mf) == path.resolve():
                        return m, a
                except EdgekitError:  # an entry that names a file outside the folder is no entry for PATH
                    continue
    return None


def guess_precision(path: Path, entry: Any) -> tuple[str | None, str | None]:
    """(precision, where it came from): the manifest, else a token of the file name (edgekit.core.precisions)."""
    from edgekit.core.precisions import PRECISIONS, precision_from_token

    if entry is not None:
        return entry.precision, "manifest"
    for token in path.name.lower().replace("-", "_").replace(".", "_").split("_")[::-1]:
        found = precision_from_token(token)
        if found is not None:
            return found, "file name"
    low = path.name.lower()
    for spec in PRECISIONS.values():  # spellings of several words: full_integer_quant, dynamic_range_quant
        if any("_" in token and token in low for token in spec.tokens):
            return spec.name, "file name"
    return None, None


def artifact_macs(path: Path) -> tuple[int | None, str]:
    """MACs of one inference at the artifact's own batch, from `edgekit inspect`, and where from."""
    try:
        from edgekit.inspect import inspect_model
    except ImportError:
        return None, "not counted: edgekit.inspect is not available"
    try:
        report = inspect_model(path)
    except EdgekitError as exc:
        return None, f"not counted: inspect failed ({exc.message})"
    return int(report.macs), "edgekit inspect"  # InspectReport: one MAC field for .tflite and .onnx alike


__all__ = ["artifact_macs", "describe_artifact", "guess_precision", "manifest_entry"]
