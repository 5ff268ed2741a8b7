"""The names users import from `edgekit` stay: listed once (edgekit.api.PUBLIC), resolvable, documented, light.

STABLE is the promise: a name here that disappears from the package fails this test. Adding a name to
PUBLIC is fine (add it here too); removing one breaks users' code and needs a deprecation first.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import edgekit
from edgekit.api import PUBLIC

ROOT = Path(edgekit.__file__).resolve().parent
STABLE = frozenset({
    "convert", "load", "profile", "bench", "check", "inspect", "open_run",
    "Conversion", "ConvertedArtifact", "LoadedModel", "Tensor", "ProfileResult", "BenchReport", "CheckReport",
    "InspectReport", "Manifest", "Artifact",
    "EdgekitError", "UsageError", "UnsupportedModel", "MissingDependency", "NotAvailable", "ConversionError",
    "FidelityError", "RuntimeFailure", "ArtifactNotFound",
})
FUNCTIONS = ("convert", "load", "profile", "bench", "check", "inspect", "open_run")


def test_no_public_name_disappears() -> None:
    assert STABLE - set(PUBLIC) == set(), "a public name was removed from edgekit.api.PUBLIC"
    assert set(edgekit.__all__) >= STABLE
    assert "__version__" in edgekit.__all__ and edgekit.__version__


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_name_resolves_and_has_a_docstring(name: str) -> None:
    value = getattr(edgekit, name)
    assert (value.__call__ if name in ("check", "inspect") else value).__doc__, f"edgekit.{name} has no docstring"
    if name in FUNCTIONS:
        assert callable(value)
    assert name in dir(edgekit)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'convrt'"):
        edgekit.convrt  # noqa: B018


def test_what_type_checkers_see_is_the_public_table() -> None:
    """edgekit/__init__.py's TYPE_CHECKING imports name exactly PUBLIC (typing and runtime cannot drift)."""
    tree = ast.parse((ROOT / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    names = {alias.asname or alias.name for node in block.body if isinstance(node, ast.ImportFrom)
             for alias in node.names}
    assert names == set(PUBLIC)


def test_importing_edgekit_and_its_api_names_loads_no_framework() -> None:
    code = ("import sys, edgekit\n"
            "for n in ('convert', 'load', 'profile', 'bench', 'check', 'inspect', 'Conversion', 'ProfileResult'):\n"
            "    getattr(edgekit, n)\n"
            "print([m for m in ('torch', 'tensorflow', 'keras', 'onnx', 'onnxruntime', 'ai_edge_litert') "
            "if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_check_and_inspect_are_packages_and_functions_whatever_is_imported_first() -> None:
    """A subpackage is bound to its parent's attribute on import: the package itself is callable instead."""
    code = ("import edgekit.check.budgets, edgekit.inspect.records\n"
            "import edgekit\n"
            "from edgekit import check, inspect\n"
            "import edgekit.check as c\n"
            "print(callable(edgekit.check), callable(check), check is c, edgekit.check.check.__name__,\n"
            "      callable(edgekit.inspect), inspect is edgekit.inspect, hasattr(edgekit.check, 'budgets'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["True", "True", "True", "check", "True", "True", "True"], out.stderr


def test_a_package_call_is_its_function(tmp_path: Path) -> None:
    with pytest.raises(edgekit.UsageError, match="No such file"):
        edgekit.inspect(tmp_path / "missing.tflite")
    with pytest.raises(edgekit.UsageError):
        edgekit.check(tmp_path / "no-run-here")


def test_the_package_is_typed() -> None:
    assert (ROOT / "py.typed").is_file()


def test_the_python_api_reference_documents_every_public_name() -> None:
    sys.path.insert(0, str(ROOT.parent / "docs" / "hooks"))
    try:
        import generated
    finally:
        sys.path.pop(0)
    page = generated.python_api_reference()
    for name in PUBLIC:
        assert f"### edgekit.{name}\n" in page, name
    assert "edgekit.convert(model: Any, targets: str | list[str] | None = None" in page  # signatures, as written
    assert "- `load(device: str = 'cpu'" in page  # the classes' methods
