"""A target added from one file plus one TARGETS line converts, validates, profiles and benches.

This is the promise of README "Extending edgekit": no planner, validation, profile, bench or CLI
change is needed for a new target. The target lives in tests/pipeline/resave_target.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.precisions import PRECISIONS
from edgekit.targets import TARGETS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def resaved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(TARGETS, "onnx-resaved", "resave_target:TARGET")  # the one registry line


def test_a_new_target_converts_validates_profiles_and_benches(resaved: None, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from edgekit.commands.convert import _help

    assert "onnx-resaved: the fp32 ONNX export, re-saved" in _help()  # the CLI help reads the table

    out = tmp_path / "o"
    rc = main(["convert", str(REPO / "models" / "mnist_cnn.pt2"), "--target", "onnx-resaved,onnx",
               "--calib", "mnist", "--val-size", "200", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text())
    by_path = {a["path"]: a for a in manifest["artifacts"]}
    art = by_path["mnist_cnn.fp32.resaved.onnx"]
    assert art["format"] == "onnx" and art["precision"] == "fp32"
    assert art["fidelity"]["passed"] and art["fidelity"]["top1_agreement"] == 1.0
    assert [s["step"] for s in art["extra"]["steps"]] == ["torch_to_onnx", "resave_onnx"]
    # the export is shared with the plain ONNX target: run once, charged to the first artifact
    assert by_path["mnist_cnn.fp32.onnx"]["extra"]["steps"][0]["shared"] is True

    import onnx

    props = {p.key: p.value for p in onnx.load(str(out / art["path"])).metadata_props}
    assert props["resaved_by"] == "edgekit test target"

    capsys.readouterr()
    rc = main(["profile", str(out / art["path"]), "--json", "--runs", "5", "--min-seconds", "0", "--warmup", "1"])
    result = json.loads(capsys.readouterr().out)
    assert rc == 0 and result["artifact"]["precision"] == "fp32" and result["artifact"]["format"] == "onnx"
    assert result["latency_ms"]["p50"] > 0 and result["runtime"]["name"] == "onnxruntime"

    rc = main(["bench", str(out), "--json", "--in-process", "--no-source", "--runs", "3", "--min-seconds", "0",
               "--warmup", "1"])
    report = json.loads(capsys.readouterr().out)
    rows = [r for r in report["rows"] if r["path"].endswith("mnist_cnn.fp32.resaved.onnx")]
    assert rc == 0 and rows and rows[0]["status"] == "ok" and rows[0]["p50_ms"] > 0


def test_an_unknown_target_still_gets_a_suggestion(resaved: None, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["convert", str(REPO / "models" / "mnist_cnn.pt2"), "--target", "onnx-resave", "--out",
               str(tmp_path / "o")])
    assert rc == 2 and "did you mean 'onnx-resaved'" in capsys.readouterr().err


def test_a_new_precision_is_one_table_line(resaved: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from resave_target import PRECISION

    monkeypatch.setitem(PRECISIONS, "exact", PRECISION)  # the one registry line
    out = tmp_path / "o"
    rc = main(["convert", str(REPO / "models" / "mnist_cnn.pt2"), "--target", "onnx-resaved", "--quantize",
               "bitexact,fp32", "--calib", "mnist", "--val-size", "100", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text())
    art = {a["precision"]: a for a in manifest["artifacts"]}["exact"]
    # validated against the new precision's own thresholds, which a bit-exact copy meets
    assert art["path"] == "mnist_cnn.exact.resaved.onnx" and art["fidelity"]["passed"]
    assert art["fidelity"]["thresholds"] == {"top1_agreement": 1.0, "cosine": 0.999999}
    capsys.readouterr()
    rc = main(["bench", str(out), "--json", "--in-process", "--no-source", "--runs", "3", "--min-seconds", "0",
               "--warmup", "1"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    # bench orders by the table (onnxruntime's rows: OpenVINO, where installed, runs the ONNX artifacts too)
    assert rc == 0 and [r["precision"] for r in rows if r["runtime"] == "onnxruntime"] == ["fp32", "exact"]
