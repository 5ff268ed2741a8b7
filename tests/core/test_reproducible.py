"""Byte-reproducible artifacts: the same source, options and tool versions give the same bytes.

The suite's own conversion of the bundled model (`bundled_conversion`, in this process) is run
again by the CLI in a fresh process with another hash seed; every artifact's sha256 must match,
and the manifests must be equal except for the fields the manifest itself says vary between runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgekit.core.fsutil import sha256_file
from edgekit.core.reproducible import VARIES_BETWEEN_RUNS, differences, split_path, stable_part


def test_stable_part_drops_only_the_listed_fields() -> None:
    doc = {"created": "t", "varies_between_runs": ["created", "artifacts[].extra.steps[].seconds"],
           "artifacts": [{"sha256": "s", "extra": {"steps": [{"step": "a", "seconds": 1.5}], "k": 1}}]}
    assert stable_part(doc) == {"varies_between_runs": doc["varies_between_runs"],
                                "artifacts": [{"sha256": "s", "extra": {"steps": [{"step": "a"}], "k": 1}}]}
    deep = {"seconds": 1, "a": [{"b": {"seconds": 2, "load_seconds": 3, "secondsx": 4}}], "run": {}, "created": ""}
    assert stable_part(deep, VARIES_BETWEEN_RUNS) == {"a": [{"b": {"secondsx": 4}}]}
    assert doc["created"] == "t" and doc["artifacts"][0]["extra"]["steps"][0]["seconds"] == 1.5  # a copy
    assert split_path("a[][].b") == ["a", "[]", "[]", "b"]
    assert differences({"a": [1, {"b": 2}], "c": 3}, {"a": [1, {"b": 4}], "d": 3}) == ["a[1].b", "c", "d"]
    assert stable_part({"run": 1, "x": 2}) == {"x": 2}  # a manifest without the list: this edgekit's list


def test_manifest_names_what_varies(tmp_path: Path) -> None:
    from edgekit.core.artifact import Manifest, SourceInfo

    path = Manifest(source=SourceInfo(), artifacts=[]).write(tmp_path / "manifest.json")
    data = json.loads(path.read_text())
    assert data["varies_between_runs"] == list(VARIES_BETWEEN_RUNS)
    assert Manifest.from_dict({**data, "varies_between_runs": 7}).varies_between_runs == list(VARIES_BETWEEN_RUNS)


@pytest.mark.slow  # a second real conversion of the bundled model (the first is the suite's shared one)
def test_two_runs_give_identical_artifacts(bundled_conversion, bundled_pt2: Path, tmp_path: Path) -> None:
    first = bundled_conversion.manifest_path.parent
    second = tmp_path / "mnist_cnn"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    run = subprocess.run(
        [sys.executable, "-m", "edgekit.cli", "convert", str(bundled_pt2), "--target", "onnx,tflite",
         "--quantize", "fp32,fp16,dynamic,int8", "--calib", "mnist", "--out", str(second)],
        capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    a, b = (json.loads((d / "manifest.json").read_text()) for d in (first, second))
    files = sorted(p.name for p in first.iterdir())
    assert files == sorted(p.name for p in second.iterdir())
    assert len(a["artifacts"]) == 8 and all(art["status"] == "ok" for art in a["artifacts"])
    differ = [n for n in files if n != "manifest.json" and sha256_file(first / n) != sha256_file(second / n)]
    assert differ == [], f"not byte-identical between two runs: {differ}"
    assert [art["sha256"] for art in a["artifacts"]] == [art["sha256"] for art in b["artifacts"]]
    # the manifests: equal but for the fields they name, and the option that was meant to differ
    sa, sb = stable_part(a), stable_part(b)
    assert sa["options"].pop("out_dir") != sb["options"].pop("out_dir")
    assert differences(sa, sb) == []


@pytest.mark.slow  # one more onnx2tf conversion, in this process, after the shared one
def test_a_second_conversion_in_one_process_gives_the_same_bytes(bundled_conversion, bundled_pt2: Path,
                                                                  tmp_path: Path) -> None:
    # Keras's per-process layer-name counters reached the TFLite file: the Python API's second conversion
    # (and the test suite's) gave other bytes than the first until onnx_to_savedmodel reset them
    from edgekit.conversion.pipeline import convert

    again = convert(bundled_pt2, "tflite", "fp32", calib="mnist", out=tmp_path / "again")
    first = bundled_conversion.manifest_path.parent / "mnist_cnn.fp32.tflite"
    assert sha256_file(again.manifest_path.parent / "mnist_cnn.fp32.tflite") == sha256_file(first)
