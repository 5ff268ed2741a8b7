"""Source models by kind: one module each in this package, one line in SOURCES.

A source module holds its loader, a cheap byte-level sniff that recognises its files, and the
`SourceSpec` that ties them together (`SOURCE = SourceSpec(...)`). SOURCES names those specs as
plain "module:attr" strings, so nothing here imports torch or TensorFlow: the source modules import
them only inside their loaders.

Order matters: `edgekit.sources.detect.detect` asks the specs in this order and the first claim
wins. The zip-based and magic-byte kinds come first; ONNX, recognised by its suffix or by a loose
protobuf check, comes last among the built-ins. An entry added later is asked after these, so its
sniff must claim files none of them does (it may not end in .onnx or start like an ONNX protobuf).
"""

from __future__ import annotations

from edgekit.core.registry import resolve_record
from edgekit.sources.base import LoadOptions, Source, SourceSpec

SOURCES: dict[str, str] = {
    "keras": "edgekit.sources.keras:SOURCE",  # .keras (zip), .h5 (HDF5); before torch: a zip with both layouts is Keras
    "torch": "edgekit.sources.torch:SOURCE",  # .pt2, TorchScript, torch.save zip archives, legacy pickles
    "savedmodel": "edgekit.sources.savedmodel:SOURCE",  # folders only
    "tflite": "edgekit.sources.tflite:SOURCE",  # 'TFL3' at byte 4; before onnx, whose protobuf check is loose
    "onnx": "edgekit.sources.onnx:SOURCE",  # last: a .onnx suffix or a loose protobuf check
}


def get_source(name: str) -> SourceSpec:
    """The SourceSpec registered as NAME; UsageError with a did-you-mean for a typo."""
    return resolve_record(SOURCES, name, "source", SourceSpec)


def source_specs() -> list[SourceSpec]:
    """Every registered SourceSpec, in table (detection) order."""
    return [get_source(name) for name in SOURCES]


def source_for_kind(kind: str) -> SourceSpec:
    """The spec whose loader reads KIND (a detected kind, or "<family>-factory")."""
    for spec in source_specs():
        if kind in spec.kinds:
            return spec
    known = sorted(k for spec in source_specs() for k in spec.kinds)
    raise KeyError(f"no source reads kind {kind!r}; known kinds: {', '.join(known)}")


def family_of(kind: str) -> str:
    """The family (first Intermediate kind of the conversion chain) of a source of KIND."""
    return source_for_kind(kind).family


__all__ = ["SOURCES", "LoadOptions", "Source", "SourceSpec", "family_of", "get_source", "source_for_kind",
           "source_specs"]
