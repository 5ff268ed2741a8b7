"""edgekit: convert, inspect, profile and gate CNNs for edge devices.

The package root stays light: heavy frameworks are imported inside the functions that need them,
so `import edgekit` and `edgekit --help` never load torch or TensorFlow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgekit._version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from edgekit.artifact import Artifact


def convert(source: str, **options: Any) -> list[Artifact]:
    """Convert SOURCE and return the validated artifacts (see `edgekit.pipeline.convert`)."""
    from edgekit.pipeline import convert as _convert

    return _convert(source, **options).artifacts


__all__ = ["__version__", "convert"]
