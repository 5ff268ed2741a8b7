"""A value given to the Python API made the type its option is declared with, or refused by name.

The command line converts what is typed into each option's type (typer); the Python API takes Python values,
and a number given as a string ("90") or a float where a whole number is meant used to travel on until a
comparison deep inside failed with Python's own TypeError. `typed()` converts what the command line would
accept from the same text and refuses the rest with a UsageError that names the option, the type and what was
given. Only plain types are handled (int, float, bool, Path, each optionally None); anything else is its
option's own parser's business. A leaf module (the standard library and core.errors only).
"""

from __future__ import annotations

import dataclasses
import numbers
import os
import types
import typing
from pathlib import Path
from typing import Any

from edgekit.core.errors import UsageError

_WORDS: dict[type, str] = {int: "a whole number", float: "a number", bool: "True or False", Path: "a path"}
_EXAMPLE: dict[type, str] = {int: "4", float: "2.5", bool: "True", Path: "'model.pt'"}
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def plain_type(hint: Any) -> tuple[type | None, bool]:
    """(the plain type HINT names, whether None is allowed): `float | None` -> (float, True); (None, ...) where
    HINT is no plain type (a list, a literal, a record)."""
    args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    kinds = [a for a in args if a is not type(None)]
    allows_none = len(kinds) < len(args)
    kind = kinds[0] if len(kinds) == 1 and kinds[0] in _WORDS else None
    return kind, allows_none


def typed(name: str, value: Any, hint: Any) -> Any:
    """VALUE as the type HINT names (see the module); UsageError naming NAME where it cannot be."""
    kind, allows_none = plain_type(hint)
    if kind is None or (value is None and allows_none):
        return value
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
    elif kind is Path:
        if isinstance(value, (str, os.PathLike)) and str(value).strip():
            return Path(value)
    elif isinstance(value, str):
        try:
            return int(value.strip()) if kind is int else float(value.strip())
        except ValueError:
            pass
    elif isinstance(value, bool):
        pass  # True is no number, though Python counts it as one
    elif isinstance(value, numbers.Real):  # numpy's numbers too
        if isinstance(value, numbers.Integral):
            return int(value) if kind is int else float(value)
        number = float(value)
        if kind is float:
            return number
        if number.is_integer():
            return int(number)
    shown = f"{value!r} ({type(value).__name__})"
    raise UsageError(f"{name} must be {_WORDS[kind]}{' or None' if allows_none else ''}, got {shown}.",
                     hint=f"e.g. {name}={_EXAMPLE[kind]}")


def typed_fields(record: Any, name: Any = None) -> None:
    """Each plain-typed field of the dataclass RECORD made its declared type in place (`typed`); NAME(field) is
    how a message names the field (default: the field's name)."""
    hints = typing.get_type_hints(type(record))
    for f in dataclasses.fields(record):
        label = name(f.name) if name is not None else f.name
        setattr(record, f.name, typed(label, getattr(record, f.name), hints[f.name]))


__all__ = ["plain_type", "typed", "typed_fields"]
