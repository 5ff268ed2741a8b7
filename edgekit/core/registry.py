"""Name tables of "module:Class" strings, resolved lazily, with "did you mean" for typos.

Registries (steps, runtimes, sensors) are plain dicts of strings so that listing them never
imports torch or TensorFlow; a class is imported only when it is used.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from edgekit.core.errors import UsageError


def suggest(name: str, choices: Iterable[str]) -> str | None:
    """The closest choice to NAME, if any is close enough to be a typo."""
    matches = difflib.get_close_matches(name.lower(), [c.lower() for c in choices], n=1, cutoff=0.5)
    if not matches:
        return None
    for c in choices:
        if c.lower() == matches[0]:
            return c
    return None


def check_choice(name: str, choices: Iterable[str], what: str) -> str:
    """Return NAME if it is one of CHOICES (case-insensitive), else a UsageError with a suggestion."""
    choices = list(choices)
    for c in choices:
        if c.lower() == name.strip().lower():
            return c
    guess = suggest(name, choices)
    hint = f"did you mean '{guess}'? " if guess else ""
    raise UsageError(
        f"Unknown {what} '{name}'.",
        hint=f"{hint}Choose one of: {', '.join(choices)}.",
    )


T = TypeVar("T")


def resolve_record(table: Mapping[str, str], name: str, what: str, kind: type[T]) -> T:
    """`resolve`, for tables whose entries name records of type KIND (a TargetSpec, a SourceSpec ...)."""
    found = resolve(table, name, what)
    if not isinstance(found, kind):
        raise TypeError(f"the {what} table's entry {name!r} names a {type(found).__name__}, not a {kind.__name__}")
    return found


def resolve(table: Mapping[str, str], name: str, what: str) -> Any:
    """Import and return the object that TABLE[name] ("module:attr") names."""
    key = check_choice(name, table.keys(), what)
    module_name, _, attr = table[key].partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr)
