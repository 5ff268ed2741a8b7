"""README "Extending edgekit" says exactly what each extension needs, and this keeps it so: every table it names
exists, every proof test exists and registers exactly the tables its row names, every registry of the package is
in the table, and the OpenVINO target (the format added last) is in each table the README says a format takes."""

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


def test_the_openvino_target_is_in_every_table_a_format_takes() -> None:
    from edgekit.core._deps import KNOWN
    from edgekit.core.border import VENDORS

    for table, module in REGISTRIES.items():
        if table in ("PRECISIONS", "SOURCES"):
            continue
        assert "openvino" in getattr(importlib.import_module(module), table), table
    assert "openvino" in VENDORS and "openvino" in KNOWN
    assert 'openvino = [' in (REPO / "pyproject.toml").read_text()
