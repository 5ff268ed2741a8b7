"""What the API's objects stand for on disk, and packages that are also functions.

`check`, `bench` and `inspect` read files, never live objects (docs/design.md); the API lets a user hand
them the objects it gave out, which stand for files: a `Conversion` for its run's manifest, a
`ConvertedArtifact` for its file. They are told apart by their attributes, so the modules that take
them need not import the classes (edgekit.api.result imports those modules).

`edgekit.check` and `edgekit.inspect` are subpackages and public functions at once: Python binds a
subpackage to its parent's attribute when it is first imported, so a function of that name on the
package root would be replaced by the module sooner or later. The package is made callable instead
(`callable_package`), so `edgekit.check(...)` works whichever was imported first, and
`import edgekit.check.budgets` keeps working too.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any


def run_manifest(obj: Any) -> Path:
    """A run's folder or manifest.json as given, or the manifest.json of a Conversion."""
    return Path(obj.manifest_path) if hasattr(obj, "manifest_path") and hasattr(obj, "artifacts") else Path(obj)


def run_folder(obj: Any) -> Path:
    """A run's folder as given (or its manifest.json), or a Conversion's output folder."""
    return run_manifest(obj).parent if hasattr(obj, "manifest_path") and hasattr(obj, "artifacts") else Path(obj)


def artifact_file(obj: Any) -> Path:
    """A path as given, or the file of a ConvertedArtifact."""
    return Path(obj.file) if hasattr(obj, "record") and hasattr(obj, "file") else Path(obj)


def callable_package(name: str, function: Callable[..., Any]) -> None:
    """Make the (imported) package NAME callable as FUNCTION: `edgekit.check(...)` is `edgekit.check.check(...)`."""
    module = sys.modules[name]

    class CallablePackage(types.ModuleType):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return function(*args, **kwargs)

    CallablePackage.__call__.__doc__ = function.__doc__
    CallablePackage.__qualname__ = CallablePackage.__name__ = f"CallablePackage[{name}]"
    module.__class__ = CallablePackage


__all__ = ["artifact_file", "callable_package", "run_folder", "run_manifest"]
