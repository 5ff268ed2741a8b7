"""Optional dependencies: import on demand, or fail with the exact line that installs them."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import TYPE_CHECKING

from edgekit.core.errors import MissingDependency

if TYPE_CHECKING:
    from edgekit.core.vendor import Vendor

# module name -> (pip distribution, edgekit extra that brings it), for the tools edgekit calls. A format's runtime
# library says the same in its record (edgekit.core.formats.FORMATS: `libraries`), and install_line reads it there.
KNOWN: dict[str, tuple[str, str]] = {
    "torch": ("torch==2.13.0", "convert"),
    "tensorflow": ("tensorflow", "convert"),
    "onnx": ("onnx", "convert"),
    "onnxscript": ("onnxscript", "convert"),
    "onnx2tf": ("onnx2tf", "convert"),
    "tf2onnx": ("tf2onnx", "convert"),
    "keras": ("keras", "convert"),
    "mlxtend": ("mlxtend", "convert"),
    "matplotlib": ("matplotlib", "convert"),
    "PIL": ("pillow", "runtime"),
    "psutil": ("psutil", "runtime"),
    "skimage": ("scikit-image", "dev"),
    "pycocotools": ("pycocotools", "convert"),
}


def requirement(module: str, library: Vendor | None = None) -> tuple[str, str | None]:
    """(pip requirement, edgekit extra) of MODULE: LIBRARY's where it names MODULE (a target's own library), else
    KNOWN, else the format library that names it, else itself."""
    if library is not None and module in library.modules:
        return library.modules[module], library.extra
    if module in KNOWN:
        return KNOWN[module]
    from edgekit.core.formats import libraries

    for lib in libraries().values():
        if module in lib.modules:
            return lib.modules[module], lib.extra
    return module, None


def install_line(module: str, extra: str | None = None, library: Vendor | None = None) -> str:
    dist, default_extra = requirement(module, library)
    extra = extra or default_extra
    if extra:
        return f"pip install 'edgekit[{extra}]'  (or just: pip install '{dist}')"
    return f"pip install '{dist}'"


def available(module: str) -> bool:
    """True when MODULE can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, extra: str | None = None, purpose: str | None = None,
            library: Vendor | None = None) -> ModuleType:
    """Import MODULE or raise MissingDependency naming the pip line that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        why = f" to {purpose}" if purpose else ""
        raise MissingDependency(
            f"The Python package '{module}' is needed{why} but is not installed ({exc}).",
            hint=install_line(module, extra, library),
        ) from exc


def version_of(dist: str) -> str | None:
    """Installed version of a distribution, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None
