"""A flag several commands take is one `Flag` (edgekit.core.flags): each use keeps its spelling and parser."""

from __future__ import annotations

import dataclasses

import pytest

from edgekit.core import flags
from edgekit.core.errors import UsageError
from edgekit.core.option_field import EACH, declared, flag


def test_a_use_keeps_the_spelling_and_may_give_its_own_default_and_help() -> None:
    @dataclasses.dataclass
    class Opts:
        device: str = flags.DEVICE()
        devices: str | None = flags.DEVICE(None, help="Only these devices.")

    own, other = declared(Opts)
    assert own.flags == other.flags == ("--device", "-d")
    assert (own.default, own.help) == ("auto", flags.DEVICE.form.help)
    assert (other.default, other.help) == (None, "Only these devices.")
    assert own.form.origin is other.form.origin is flags.DEVICE


def test_a_flag_without_a_default_of_its_own_needs_one_from_each_command() -> None:
    runs = flag(EACH, "Timed runs.", flags=("--runs",))
    with pytest.raises(TypeError, match="--runs has no default of its own"):
        runs()
    assert dataclasses.make_dataclass("O", [("runs", int, runs(7))])().runs == 7


def test_runtime_options_are_parsed_into_values() -> None:
    assert flags.runtime_options(["xnnpack=false", "threads=4", "api=compiled", "n=-2"]) == {
        "xnnpack": False, "threads": 4, "api": "compiled", "n": -2}
    assert flags.runtime_options(None) == {}
    with pytest.raises(UsageError, match="--option 'xnnpack' is not KEY=VALUE"):
        flags.runtime_options(["xnnpack"])
    with pytest.raises(UsageError, match="is not KEY=VALUE"):
        flags.runtime_options(["=1"])
