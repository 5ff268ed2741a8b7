"""The docs that list edgekit's formats, targets, runtimes and extras by hand name every one the records hold
(edgekit.core.formats.FORMATS, edgekit.targets.TARGETS and the runtimes their records bring): a format added with its
records but without its words in the docs fails here, and the message says which file, which line, and what to add.

The lists stay prose, in the order and the words that read best there; this only keeps them complete. Each place is
found by how its line starts (a table row's first cell, a paragraph's first words), so a reworded list still counts
and a moved one fails with "no line starts with ...". tests/pipeline/test_new_format.py shows what a new format's
records ask of the docs (the places named for weightpack's `.wpk`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Place:
    """Where the docs list something by hand: DOC's line (or paragraph, where it is prose) that starts with START,
    which must spell each of NAMES() (name -> its spelling there); where START is None, each name's spelling starts a
    line of its own (a table with a row per name)."""

    doc: str
    start: str | None
    what: str
    names: Callable[[], dict[str, str]]


def _formats() -> dict:
    from edgekit.core.formats import FORMATS

    return FORMATS


def _made() -> dict[str, str]:
    """The format of every target (an artifact edgekit writes), as prose names it."""
    from edgekit.targets import TARGETS, get_target

    return {get_target(t).format: _formats()[get_target(t).format].label for t in TARGETS}


def _target_rows() -> dict[str, str]:
    from edgekit.targets import TARGETS

    return {t: f"| `{t}` |" for t in TARGETS}


def _exported() -> dict[str, str]:
    return {n: s.label for n, s in _formats().items() if s.triton_backend}


def _runtimes() -> dict[str, str]:
    from edgekit.runtimes import runtime_table

    return {n: f"`{n}`" for n in runtime_table()}


def _profiled() -> dict[str, str]:
    """Every format a runtime runs: a ProfileResult's `artifact.format`."""
    return {n: f"`{n}`" for n, s in _formats().items() if s.runtime}


def _inspected() -> dict[str, str]:
    """Every format `edgekit inspect` reads, by its own suffix (a compiled format is read as the one it came from)."""
    return {n: f"`{s.suffix}`" for n, s in _formats().items() if s.inspector and not s.compiled_from}


def _counted() -> dict[str, str]:
    return {n: _formats()[n].label for n in _inspected()}


def _served() -> dict[str, str]:
    """Every format `edgekit serve` picks on some device, by its suffix."""
    return {n: f"`{s.suffix}`" for n, s in _formats().items() if s.serve}


def _extras() -> dict[str, str]:
    """Every extra a format's library is installed by: a row of README's install table."""
    return {lib.extra: f"| `edgekit[{lib.extra}]` |" for s in _formats().values() for lib in s.libraries.values()
            if lib.extra}


PLACES = (
    Place("README.md", "Every artifact it writes (", "the artifact formats", _made),
    Place("README.md", "| `edgekit convert` |", "the artifact formats", _made),
    Place("README.md", "| `edgekit export --triton` |", "the formats Triton serves", _exported),
    Place("README.md", None, "the extras of the formats' libraries (## Install)", _extras),
    Place("docs/index.md", "| `edgekit convert` |", "the artifact formats", _made),
    Place("docs/index.md", "| `edgekit export --triton` |", "the formats Triton serves", _exported),
    Place("docs/convert.md", None, "the targets (## Targets and precisions)", _target_rows),
    Place("docs/profile.md", "| `--runtime` |", "the runtimes", _runtimes),
    Place("docs/profile.md", "| `format` |", "the formats a runtime runs", _profiled),
    Place("docs/profile.md", "| `macs` |", "the formats whose MACs inspect counts", _counted),
    Place("docs/inspect.md", "`inspect` reads", "the formats inspect reads", _inspected),
    Place("docs/serve.md", "PATH is an artifact (", "the formats serve runs", _served),
)


def _text(place: Place) -> str | None:
    """The line that starts with PLACE's start (a table row), or the paragraph it starts; None where none does."""
    lines = (REPO / place.doc).read_text().splitlines()
    at = next((i for i, ln in enumerate(lines) if ln.startswith(place.start or "")), None)
    if at is None:
        return None
    if lines[at].startswith("|"):
        return lines[at]
    end = next((j for j in range(at, len(lines)) if not lines[j].strip()), len(lines))
    return " ".join(lines[at:end])


def gaps(place: Place) -> list[str]:
    """The names PLACE's list lacks."""
    names = place.names()
    if place.start is None:
        lines = (REPO / place.doc).read_text().splitlines()
        return [n for n, row in names.items() if not any(ln.startswith(row) for ln in lines)]
    text = _text(place)
    if text is None:
        raise AssertionError(f"{place.doc}: no line starts with {place.start!r} any more; point this place in "
                             f"tests/test_docs_lists.py at the line that lists {place.what} now")
    return [n for n, spelled in names.items() if not re.search(rf"(?<!\w){re.escape(spelled)}(?!\w)", text)]


def missing() -> list[tuple[Place, list[str]]]:
    """Every place that lacks something, with what it lacks."""
    return [(p, g) for p in PLACES if (g := gaps(p))]


def message(place: Place, lacking: list[str]) -> str:
    spelled = place.names()
    where = f"the line starting {place.start!r}" if place.start else "a line (a table row) of its own for each"
    return (f"{place.doc}: {where} lists {place.what}, and lacks "
            + ", ".join(f"{n} (spelled {spelled[n]!r})" for n in lacking)
            + ": add them in words that read well there (the records: edgekit.core.formats.FORMATS, "
              "edgekit.targets.TARGETS)")


@pytest.mark.parametrize("place", PLACES, ids=[f"{p.doc}:{p.start or p.what}" for p in PLACES])
def test_every_registered_one_is_in_the_docs_list(place: Place) -> None:
    lacking = gaps(place)
    assert not lacking, message(place, lacking)


def test_the_places_list_something() -> None:
    """A place whose records list nothing would pass whatever the docs say."""
    for place in PLACES:
        assert place.names(), f"{place.doc}: {place.what}: the records name none"
