"""One typed reader per file format (issue 28): check, bench, serve and export read manifest.json through
`Manifest.read` and bench.json through `BenchReport`, with one version gate, one answer for a damaged
record, and artifact variants from the manifest's own fields, never from file names."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from edgekit.core.errors import UsageError

SEEDS = Path(__file__).resolve().parents[1] / "fuzz" / "seeds"


def _check(p: Path) -> Any:
    from edgekit.check import run_check

    return run_check(p)


def _bench(p: Path) -> Any:
    from edgekit.measure.bench import load_target

    return load_target(p)


def _serve(p: Path) -> Any:
    from edgekit.serve.models import resolve_one

    return resolve_one(p, "cpu", None, None)


def _export(p: Path) -> Any:
    from edgekit.export.triton import plan_repository

    return plan_repository(p)


READERS: dict[str, Callable[[Path], Any]] = {"check": _check, "bench": _bench, "serve": _serve, "export": _export}


def _folder(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    doc = json.loads((SEEDS / "manifest.json").read_text())
    edit(doc)
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    return tmp_path


@pytest.mark.parametrize("command", READERS)
def test_a_newer_manifest_is_refused_the_same_way_by_every_command(tmp_path: Path, command: str) -> None:
    folder = _folder(tmp_path, lambda d: d.update(manifest_version=99))
    with pytest.raises(UsageError) as exc:
        READERS[command](folder)
    assert "is manifest version 99, newer than this edgekit reads (1)" in exc.value.message
    assert exc.value.hint and "Upgrade edgekit" in exc.value.hint


@pytest.mark.parametrize("command", READERS)
def test_a_version_that_is_no_number_is_bad_input_everywhere(tmp_path: Path, command: str) -> None:
    folder = _folder(tmp_path, lambda d: d.update(manifest_version="one"))
    with pytest.raises(UsageError, match="manifest_version is 'one', not a version number"):
        READERS[command](folder)


def test_a_newer_bench_report_is_refused_with_the_same_gate(tmp_path: Path) -> None:
    from edgekit.measure.bench_report import BenchReport

    doc = json.loads((SEEDS / "bench.json").read_text())
    doc["schema_version"] = 5
    with pytest.raises(UsageError) as exc:
        BenchReport.from_dict(doc, "The bench report b.json")
    assert exc.value.message == "The bench report b.json is bench schema 5, newer than this edgekit reads (1)."
    assert exc.value.hint and "Upgrade edgekit" in exc.value.hint


def test_the_older_seed_manifest_still_reads() -> None:
    from edgekit.core.artifact import Manifest

    m = Manifest.read(SEEDS / "manifest.json")
    assert [a.label for a in m.artifacts] == ["onnx fp32", "onnx int8", "tflite fp32", "tflite int8"]
    assert all(a.fidelity is not None and a.fidelity.samples > 0 for a in m.artifacts)


def test_variants_come_from_the_manifest_fields_not_file_names(tmp_path: Path) -> None:
    """An int8 TFLite with uint8 I/O renamed to a name that says nothing still pairs with its baseline."""
    from edgekit.check.snapshot import from_folder

    def uint8io(d: dict[str, Any]) -> None:
        art = d["artifacts"][3]
        art["extra"]["io_dtype"] = "uint8"
        art["path"] = "model-for-the-phone.tflite"

    (tmp_path / "base").mkdir()
    base = _folder(tmp_path / "base", uint8io)
    keys = {f.key: f.path for f in from_folder(base, inspect=False).snapshot.artifacts}
    assert keys["tflite int8-uint8io"] == "model-for-the-phone.tflite"
    now = tmp_path / "now"
    shutil.copytree(base, now)
    doc = json.loads((now / "manifest.json").read_text())
    doc["artifacts"][3]["path"] = "renamed-again.tflite"
    (now / "manifest.json").write_text(json.dumps(doc))
    assert "tflite int8-uint8io" in {f.key for f in from_folder(now, inspect=False).snapshot.artifacts}
