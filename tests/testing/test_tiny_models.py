"""The tiny CNN is written as the format records say (FormatSpec.tiny_model names a TinyModels): every format that
names one is written, in the table's order, each from what earlier ones wrote; a writer that cannot run here is
skipped with its reason; a writer that writes other models than its record declares is an error; a folder is reused
only when its index covers the formats asked for. Fast: the writers here are fakes, no framework runs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from edgekit.core.errors import UsageError
from edgekit.core.formats import FORMATS, FormatSpec
from edgekit.testing import tiny_cnn

CALLS: list[str] = []


def _write_base(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    CALLS.append("base")
    (out / "base.npy").write_bytes(b"base")
    return {"base-fp32": out / "base.npy"}


def _write_derived(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    CALLS.append("derived")
    (out / "derived.bin").write_bytes(tiny_cnn.made_from(written, "base-fp32").read_bytes() * 2)
    return {"derived-int8": out / "derived.bin"}


def _write_absent(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    tiny_cnn.need("edgekit_no_such_module")
    raise AssertionError("need() let a missing module through")


def _write_wrong(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    (out / "w").write_bytes(b"")
    return {"something-else": out / "w"}


BASE = tiny_cnn.TinyModels({"base-fp32": ("fp32", "NCHW")}, _write_base)
DERIVED = tiny_cnn.TinyModels({"derived-int8": ("int8", "NHWC")}, _write_derived)
ABSENT = tiny_cnn.TinyModels({"absent-fp32": ("fp32", "NCHW")}, _write_absent)
WRONG = tiny_cnn.TinyModels({"wrong-fp32": ("fp32", "NCHW")}, _write_wrong)


@pytest.fixture()
def fakes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Four formats registered as a test registers one: their records name their tiny models, nothing else."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    for order, name in ((91, "derived"), (90, "base"), (92, "absent"), (93, "wrong")):  # the table orders, not the dict
        monkeypatch.setitem(FORMATS, name, FormatSpec(name, order, None, tiny_model=f"test_tiny_models:{name.upper()}"))
    CALLS.clear()
    return CALLS


def test_the_kinds_are_the_records(fakes: list[str]) -> None:
    kinds = tiny_cnn.kinds()
    assert kinds["base-fp32"] == ("base", "fp32", "NCHW") and kinds["derived-int8"] == ("derived", "int8", "NHWC")
    assert kinds["ncnn-fp32"] == ("ncnn", "fp32", "NCHW") and kinds["tflite-int8"] == ("tflite", "int8", "NHWC")
    assert {fmt for fmt, _, _ in kinds.values()} == {n for n, s in FORMATS.items() if s.tiny_model}
    assert list(tiny_cnn.writers())[-4:] == ["base", "derived", "absent", "wrong"]


def test_each_record_writes_its_models_in_the_tables_order(fakes: list[str], tmp_path: Path) -> None:
    index = tiny_cnn.build(tmp_path, formats=["derived", "base", "absent"])
    assert fakes == ["base", "derived"]  # base (order 90) first, whatever order they were asked in
    assert Path(index["models"]["derived-int8"]).read_bytes() == b"basebase"
    assert index["skipped"] == {"absent": "edgekit_no_such_module is not installed"}
    assert json.loads((tmp_path / tiny_cnn.INDEX).read_text()) == index

    assert tiny_cnn.build(tmp_path, formats=["base"]) == index and fakes == ["base", "derived"]  # reused
    assert tiny_cnn.build(tmp_path, formats=["absent", "derived"]) == index and fakes == ["base", "derived"]
    alone = tiny_cnn.build(tmp_path / "alone", formats=["derived"])  # what it converts from was not asked for
    assert alone["skipped"] == {"derived": "the base-fp32 model it is converted from was not written"}


def test_a_writer_that_writes_other_models_than_its_record_says_is_an_error(fakes: list[str], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"wrote \['something-else'\]; its TinyModels says \['wrong-fp32'\]"):
        tiny_cnn.build(tmp_path, formats=["wrong"])
    with pytest.raises(UsageError, match="did you mean 'base'"):
        tiny_cnn.build(tmp_path, formats=["bsae"])
    assert not (tmp_path / tiny_cnn.INDEX).exists()


def test_a_folder_whose_index_misses_a_format_asked_for_is_written_again(fakes: list[str], tmp_path: Path) -> None:
    tiny_cnn.build(tmp_path, formats=["base"])
    index = tiny_cnn.build(tmp_path, formats=["base", "derived"])
    assert fakes == ["base", "base", "derived"] and set(index["models"]) == {"base-fp32", "derived-int8"}
