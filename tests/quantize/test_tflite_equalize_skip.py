"""The TFLite search skips equalize (and equalize+bias) where no op pair can be equalized: on a SiLU network (a
trained YOLOv5n) equalization changed nothing, so its candidate was plain again and took the budget's second slot
(22 s of a 62 s budget) before a recipe that could change anything."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from edgekit.quantize.tflite import search


def _candidates(pairs: int, monkeypatch: Any) -> tuple[Any, list[str], list[str]]:
    notes: list[str] = []
    lines: list[str] = []
    fmt = object.__new__(search.TfliteCandidates)  # only what build() reads before building
    fmt._equalizable = None
    fmt.job = SimpleNamespace(notes=notes, log=lines.append, fixed=b"float model")
    monkeypatch.setattr("edgekit.quantize.tflite.equalize.equalizable", lambda blob: pairs)
    built: list[str] = []
    monkeypatch.setattr(search, "build", lambda job, name, nodes: built.append(name) or (b"", None, {}))
    monkeypatch.setattr(search.TfliteCandidates, "candidate", lambda self, held, label="": held[0])
    return fmt, notes, built


def test_nothing_to_equalize_skips_both_equalizing_recipes(monkeypatch: Any) -> None:
    fmt, notes, built = _candidates(0, monkeypatch)
    assert fmt.build("equalize") is None and fmt.build("equalize+bias") is None
    assert built == []
    assert "would be plain again" in notes[0] and "would be bias again" in notes[1]
    assert fmt.build("bias") == "bias" and built == ["bias"]  # the others are built as before


@pytest.mark.parametrize("name", ["equalize", "equalize+bias"])
def test_a_model_with_pairs_is_equalized(name: str, monkeypatch: Any) -> None:
    fmt, notes, built = _candidates(3, monkeypatch)
    assert fmt.build(name) == name and built == [name] and not notes
