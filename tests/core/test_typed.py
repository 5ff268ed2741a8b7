"""A Python API value is made its option's declared type, as the command line would make the same text, or refused
by name (edgekit.core.typed): a string "90" for a float used to reach a comparison and fail with Python's TypeError."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from edgekit.conversion.options import ConvertOptions
from edgekit.core.errors import UsageError
from edgekit.core.typed import plain_type, typed, typed_fields
from edgekit.measure.settings import MeasureSettings


@pytest.mark.parametrize(("value", "hint", "expected"), [
    ("90", float | None, 90.0), (" 2.5 ", float, 2.5), ("inf", float | None, float("inf")), (3, float, 3.0),
    (np.float32(0.5), float, 0.5), ("5", int, 5), (np.int64(7), int, 7), (4.0, int, 4), (None, int | None, None),
    ("yes", bool, True), ("off", bool, False), (False, bool, False), ("m.pt", Path, Path("m.pt")),
    (["a"], list[str], ["a"]),  # not a plain type: its own parser's business, left as given
])
def test_what_the_command_line_would_take_is_converted(value, hint, expected) -> None:
    got = typed("opt", value, hint)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(("value", "hint", "words"), [
    ("ninety", float | None, "a number or None, got 'ninety' (str)"), ([1], float, "a number, got [1] (list)"),
    (True, int, "a whole number, got True (bool)"), (4.5, int, "a whole number, got 4.5 (float)"),
    ("4.0", int, "a whole number"), ("maybe", bool, "True or False"), (3, Path, "a path"), (None, int, "got None"),
])
def test_anything_else_is_refused_naming_the_option_and_the_type(value, hint, words) -> None:
    with pytest.raises(UsageError) as caught:
        typed("runs", value, hint)
    assert caught.value.message.startswith("runs must be ") and words in caught.value.message
    assert caught.value.hint is not None and caught.value.hint.startswith("e.g. runs=")


def test_plain_type_reads_optional_hints() -> None:
    assert plain_type(float | None) == (float, True) and plain_type(int) == (int, False)
    assert plain_type(list[int]) == (None, False) and plain_type(str | int) == (None, False)


def test_typed_fields_converts_a_record_in_place() -> None:
    @dataclass
    class Rec:
        n: int = 1
        x: float | None = None
        name: str = "a"

    rec = Rec(n="3", x="0.25", name="b")  # type: ignore[arg-type]  # what an untyped caller passes
    typed_fields(rec, name=lambda f: f"--{f}")
    assert (rec.n, rec.x, rec.name) == (3, 0.25, "b")
    with pytest.raises(UsageError, match="--n must be a whole number"):
        typed_fields(Rec(n="three"), name=lambda f: f"--{f}")  # type: ignore[arg-type]


def test_convert_keywords_are_typed_by_their_declarations() -> None:
    opts = ConvertOptions.from_keywords(int8_budget="90", val_size="50")
    assert opts.int8_budget == 90.0 and opts.val_size == 50
    with pytest.raises(UsageError, match="int8_budget must be a number or None, got 'ninety'"):
        ConvertOptions.from_keywords(int8_budget="ninety")


def test_measure_settings_from_the_api_are_typed_before_they_are_checked() -> None:
    settings = MeasureSettings(runs="5", threads="2", min_seconds="0")  # type: ignore[arg-type]
    settings.check()
    assert (settings.runs, settings.threads, settings.min_seconds) == (5, 2, 0.0)
    with pytest.raises(UsageError, match="runs must be a whole number, got 'many'"):
        MeasureSettings(runs="many").check()  # type: ignore[arg-type]
