"""Source model loaders, one module per kind; `load_source` detects the kind from the file's content."""

from __future__ import annotations

from edgekit.sources.base import LoadOptions, Source

# family -> "module:function(path, LoadOptions, kind) -> Source"
LOADERS: dict[str, str] = {
    "torch": "edgekit.sources.torch:load",
    "onnx": "edgekit.sources.onnx:load",
    "keras": "edgekit.sources.keras:load",
    "savedmodel": "edgekit.sources.savedmodel:load",
}

__all__ = ["LOADERS", "LoadOptions", "Source"]
