"""Every child-process call in edgekit sends a typed request record, and the child function receives one.

edgekit.core.isolate refuses a dict at run time, but only on the paths a test happens to run; this reads every
`run_isolated(...)` call in the package source, resolves the child it names ("module:function", a literal or a
module constant such as onnx_to_savedmodel.CHILD) and checks that the request argument is no dict and that the
child's first parameter is declared as a frozen Record dataclass, which the parent builds and the child rebuilds.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import typing
from pathlib import Path

import pytest

import edgekit
from edgekit.core.isolate import request_message
from edgekit.core.records import Record

PACKAGE = Path(edgekit.__file__).parent


def _calls() -> list[tuple[str, ast.Call]]:
    """(module name, call) for each run_isolated call in edgekit's source."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for node in ast.walk(tree):
            name = getattr(node, "func", None)
            if isinstance(node, ast.Call) and getattr(name, "id", getattr(name, "attr", None)) == "run_isolated":
                found.append((module, node))
    return found


def _target(module: str, arg: ast.expr) -> str:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    assert isinstance(arg, ast.Name), f"{module}: run_isolated's target is neither a literal nor a module constant"
    return str(getattr(importlib.import_module(module), arg.id))


CALLS = _calls()


def test_the_package_has_the_call_sites_it_is_known_to_have() -> None:
    """A count that drops means this test reads less than it did (a renamed import, a moved module)."""
    assert len(CALLS) >= 6, [m for m, _ in CALLS]


@pytest.mark.parametrize(("module", "call"), CALLS, ids=[f"{m}:{c.lineno}" for m, c in CALLS])
def test_each_call_sends_a_record_its_child_declares(module: str, call: ast.Call) -> None:
    request = call.args[1] if len(call.args) > 1 else None
    assert request is not None and not isinstance(request, (ast.Dict, ast.DictComp)), \
        f"{module}:{call.lineno} passes no request record"
    mod_name, _, func_name = _target(module, call.args[0]).partition(":")
    func = getattr(importlib.import_module(mod_name), func_name)
    first = next(iter(typing.get_type_hints(func)))  # the request parameter
    hint = typing.get_type_hints(func)[first]
    assert isinstance(hint, type) and issubclass(hint, Record), f"{func_name}({first}: {hint})"
    assert dataclasses.is_dataclass(hint) and hint.__dataclass_params__.frozen, f"{hint.__name__} is not frozen"


def test_a_plain_dict_is_refused() -> None:
    with pytest.raises(TypeError, match="request record"):
        request_message("edgekit.check.compute:inspect_files", {"files": []})  # type: ignore[arg-type]
