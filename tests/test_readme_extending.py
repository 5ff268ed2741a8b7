"""README "Extending edgekit" says exactly what each extension needs, and this keeps it so: every table it names
exists, every proof test exists and registers exactly the tables its row names, every registry of the package is
in the table, and every real format's record names what the README says a format's record holds (its runtime, its
library and the extra that installs it, its tiny test model). What a new format once needed edited by hand beyond
its records is read from them: the emulated Pi's extras (Vendor.arm64), the tiny models (FormatSpec.tiny_model); the
docs' lists are checked against them (tests/test_docs_lists.py). The proof test asserts all three for its format."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REGISTRIES = {"TARGETS": "edgekit.targets", "FORMATS": "edgekit.core.formats", "RUNTIMES": "edgekit.runtimes",
              "PRECISIONS": "edgekit.core.precisions", "SOURCES": "edgekit.sources"}


def _rows() -> list[dict[str, str]]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Extending edgekit", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in ln.strip("|").split("|")), strict=True)) for ln in lines[2:]]


def _tables(cell: str) -> set[str]:
    """The registry names a cell mentions (`edgekit.targets.TARGETS` or `TARGETS`)."""
    return {name.rsplit(".", 1)[-1] for name in re.findall(r"`([\w.]+)`", cell) if name.rsplit(".", 1)[-1].isupper()}


def _registered(test_file: Path) -> set[str]:
    """The tables a proof test adds entries to: monkeypatch.setitem(TABLE, ...) calls."""
    tree = ast.parse(test_file.read_text())
    return {node.args[0].id for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == "setitem"
            and node.args and isinstance(node.args[0], ast.Name)}


def test_every_table_named_exists_and_every_registry_is_named() -> None:
    named: set[str] = set()
    for row in _rows():
        for table in _tables(row["register"]):
            assert table in REGISTRIES, f"README names a table edgekit does not have: {table}"
            assert isinstance(getattr(importlib.import_module(REGISTRIES[table]), table), dict)
            named.add(table)
    assert named == set(REGISTRIES), f"registries missing from README's table: {set(REGISTRIES) - named}"


def test_each_proof_registers_exactly_what_its_row_says() -> None:
    for row in _rows():
        proof = REPO / row["proof"].strip("`")
        assert proof.is_file(), f"{row['to add']}: no proof test {proof}"
        if row["to add"] in ("a target", "a target with a new format"):
            assert _registered(proof) >= _tables(row["register"]), (row["to add"], _registered(proof))
    new_format = next(r for r in _rows() if r["to add"] == "a target with a new format")
    assert _registered(REPO / new_format["proof"].strip("`")) == _tables(new_format["register"])


def test_every_artifact_format_record_brings_its_runtime_library_and_extra() -> None:
    """A format a target makes is run by a runtime some record brings, and the library behind that runtime is in a
    record with the extra that installs it, an extra pyproject.toml has."""
    from edgekit.core.formats import FORMATS
    from edgekit.runtimes import get_runtime, runtime_table
    from edgekit.targets import TARGETS, get_target

    extras = set(re.findall(r"^(\w+) = \[", (REPO / "pyproject.toml").read_text(), re.M))
    for name in TARGETS:
        spec = FORMATS[get_target(name).format]
        assert spec.runtime in runtime_table(), (name, spec.runtime)
        owner = next(s for s in FORMATS.values() if spec.runtime in s.runtimes)
        assert owner.libraries, f"{owner.name}: its record names no library"
        for lib in (*owner.libraries.values(), *get_target(name).libraries.values()):
            assert lib.extra in extras and lib.modules, (name, lib)
        assert get_runtime(spec.runtime).vendor in owner.libraries, (name, get_runtime(spec.runtime).vendor)


def test_every_format_that_brings_a_runtime_names_its_tiny_model() -> None:
    """The runtimes' conformance suite runs every runtime on the tiny CNN of each format it loads, and a format's
    record names that model's writer (FormatSpec.tiny_model): a record that brings a runtime and names none would
    leave the runtime unchecked."""
    from edgekit.core.formats import FORMATS
    from edgekit.testing.tiny_cnn import kinds

    covered = {fmt for fmt, _, _ in kinds().values()}
    for spec in FORMATS.values():
        if spec.runtimes:
            assert spec.name in covered, f"{spec.name}: its record brings a runtime and names no tiny model"
