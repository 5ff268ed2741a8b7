"""The one base for plain-data records that travel as JSON: `to_dict()` and a tolerant `from_dict()`.

Profile results, power reports and bench rows are written to files that other commands (bench,
check, CI scripts) read back, sometimes from an older or newer edgekit. A reader keeps the fields
it knows, ignores the rest, and gives a field a file lacks its default: the same rule for every
record, written once here. Nested records convert themselves through the fields' declared types.
"""

from __future__ import annotations

import dataclasses
import typing
from functools import cache
from typing import Any, TypeVar

R = TypeVar("R", bound="Record")


class Record:
    """Mixin for dataclasses: `to_dict()` is `dataclasses.asdict`; `from_dict()` rebuilds nested records."""

    def to_dict(self) -> dict[str, Any]:
        """The fields in declaration order; nested records through their own to_dict()."""
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls: type[R], d: dict[str, Any]) -> R:
        kinds = _record_fields(cls)
        known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        values: dict[str, Any] = {}
        for key, value in d.items():
            if key not in known:
                continue
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


__all__ = ["Record", "plain"]
