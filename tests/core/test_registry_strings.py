"""Every "module:attr" string in the package names something that exists.

Registries (steps, sources, targets, runtimes, sensors), child-process entry points (edgekit.core.isolate) and
the vendor border name code by string, so that listing them imports nothing heavy; a string left behind by a
rename or a move would fail only when that entry is used, at run time. This reads every string literal of
the package's source that looks like "edgekit.<module>:<attr>" and imports what it names.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "edgekit"
NAME = re.compile(r"^edgekit(\.\w+)+:\w+(\.\w+)*$")


def _strings() -> list[tuple[str, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.match(node.value):
                found.append((str(path.relative_to(PACKAGE.parent)), node.value))
    return found


STRINGS = _strings()


def test_the_tables_are_found() -> None:
    names = {s for _, s in STRINGS}
    for table in ("edgekit.steps", "edgekit.sources", "edgekit.targets", "edgekit.runtimes", "edgekit.sensors"):
        assert any(n.startswith(table + ".") for n in names), table  # the scan sees each registry's entries
    assert len(names) >= 30


@pytest.mark.parametrize(("where", "target"), STRINGS, ids=[f"{w}:{t}" for w, t in STRINGS])
def test_every_module_attr_string_resolves(where: str, target: str) -> None:
    module_name, _, attr = target.partition(":")
    obj = importlib.import_module(module_name)
    for part in attr.split("."):
        assert hasattr(obj, part), f"{where} names {target}: {module_name} has no {attr}"
        obj = getattr(obj, part)


def test_every_registry_entry_resolves() -> None:
    from edgekit.core.registry import resolve
    from edgekit.runtimes import runtime_table
    from edgekit.sensors import SENSORS
    from edgekit.sources import SOURCES
    from edgekit.steps import STEPS
    from edgekit.targets import TARGETS

    for table, what in ((STEPS, "step"), (SOURCES, "source"), (TARGETS, "target"), (runtime_table(), "runtime"),
                        (SENSORS, "sensor")):
        for name in table:
            assert resolve(table, name, what) is not None, (what, name)
