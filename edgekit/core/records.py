"""The one base for plain-data records that travel as JSON: `to_dict()` and a tolerant `from_dict()`.

Profile results, power reports and bench rows are written to files that other commands (bench,
check, CI scripts) read back, sometimes from an older or newer edgekit. A reader keeps the fields
it knows, ignores the rest, and gives a field a file lacks its default: the same rule for every
record, written once here. Nested records convert themselves through the fields' declared types.

The files are hostile input too (a hand-edited manifest, a fuzzed bench.json), so a value is kept only
where it has its field's declared type: `"size": "huge"` for an int field is no figure, the field keeps
its default, and no caller meets a string where it compares numbers. A field without a default whose
value is of the wrong type is a TypeError, which each file reader turns into bad input.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

R = TypeVar("R", bound="Record")


class Record:
    """Mixin for dataclasses: `to_dict()` is `dataclasses.asdict`; `from_dict()` rebuilds nested records."""

    if TYPE_CHECKING:  # every Record is a dataclass: what dataclasses.fields() takes (typeshed's DataclassInstance)
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def to_dict(self) -> dict[str, Any]:
        """The fields in declaration order; nested records through their own to_dict()."""
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls: type[R], d: dict[str, Any]) -> R:
        record_class: type = cls  # the caches' key; mypy sees no Hashable in a type[R] (a class is hashable)
        kinds = _record_fields(record_class)
        hints = _hints(record_class)
        required = _required(record_class)
        values: dict[str, Any] = {}
        for key, value in d.items():
            if key not in hints:
                continue
            if not fits(hints[key], value):
                if key in required:
                    raise TypeError(f"{cls.__name__}.{key} is {type(value).__name__}, not {hints[key]}")
                continue  # the wrong type: no value, the field keeps its default
            sub = kinds.get(key)
            if sub is not None and isinstance(value, dict):
                value = sub.from_dict(value)
            elif sub is not None and isinstance(value, list):
                value = [sub.from_dict(v) if isinstance(v, dict) else v for v in value]
            values[key] = value
        return cls(**values)


def plain(value: Any) -> Any:
    """VALUE as JSON-ready data: a record through its to_dict(), lists and dicts copied, item by item."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def fits(hint: Any, value: Any) -> bool:
    """Whether VALUE (parsed JSON, or a live value) has the declared type HINT; types not named here pass.

    An int fits a float (JSON writes 1.0 as 1), a bool is not a number, a list fits `list[X]` when every
    item fits X, and a record's field fits its dict; a NaN fits a float (edgekit writes it for "not measured").
    """
    if hint is Any or isinstance(hint, TypeVar):
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(fits(a, value) for a in args)
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if hint is type(None) or hint is None:
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is list or hint is list:
        return isinstance(value, list) and (not args or all(fits(args[0], v) for v in value))
    if origin is dict or hint is dict:
        return isinstance(value, dict) and (len(args) < 2 or all(fits(args[1], v) for v in value.values()))
    if isinstance(hint, type) and issubclass(hint, Record):
        return isinstance(value, (dict, hint))
    return True


@cache
def _hints(cls: type) -> dict[str, Any]:
    """The declared type of each init field of CLS, resolved."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


@cache
def _required(cls: type) -> frozenset[str]:
    """The fields of CLS without a default: a wrong-typed value there cannot fall back."""
    return frozenset(f.name for f in dataclasses.fields(cls) if f.init and f.default is dataclasses.MISSING
                     and f.default_factory is dataclasses.MISSING)


@cache
def _record_fields(cls: type) -> dict[str, type[Record]]:
    """Fields of CLS typed as a Record (or `Record | None`, `list[Record]`): the ones from_dict rebuilds."""
    hints = typing.get_type_hints(cls)
    out: dict[str, type[Record]] = {}
    for f in dataclasses.fields(cls):
        for candidate in (hints[f.name], *typing.get_args(hints[f.name])):
            if isinstance(candidate, type) and issubclass(candidate, Record):
                out[f.name] = candidate
    return out


__all__ = ["Record", "fits", "plain"]
