"""A new artifact format is one file and three table lines: README "Extending edgekit".

tests/pipeline/ort_format.py brings ONNX Runtime's ORT format as a target, a format and a runtime; the test
registers its three lines (TARGETS, FORMATS, RUNTIMES) and nothing else, then runs the product on it:
convert (validated), detect_format, profile, bench, serve's choice, check against a baseline, export (which
says Triton has no backend for it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.formats import FORMATS
from edgekit.runtimes import RUNTIMES
from edgekit.targets import TARGETS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def ort_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    from ort_format import FORMAT, RUNTIME

    monkeypatch.setitem(TARGETS, "ort", "ort_format:TARGET")  # the three registry lines
    monkeypatch.setitem(FORMATS, "ort", FORMAT)
    monkeypatch.setitem(RUNTIMES, "ort", RUNTIME)


def test_a_new_format_converts_profiles_benches_serves_and_is_checked(ort_lines: None, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    rc = main(["convert", str(REPO / "models" / "mnist_cnn.pt2"), "--target", "ort,onnx", "--calib", "mnist",
               "--val-size", "100", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text())
    art = {a["path"]: a for a in manifest["artifacts"]}["mnist_cnn.fp32.ort"]
    assert art["format"] == "ort" and art["fidelity"]["passed"] and art["fidelity"]["top1_agreement"] == 1.0

    from edgekit.runtimes import detect_format

    assert detect_format(out / art["path"]) == "ort"
    capsys.readouterr()
    rc = main(["profile", str(out / art["path"]), "--json", "--runs", "3", "--min-seconds", "0", "--warmup", "1"])
    result = json.loads(capsys.readouterr().out)
    assert rc == 0 and result["runtime"]["name"] == "ort" and result["artifact"]["sha256"] == art["sha256"]

    rc = main(["bench", str(out), "--json", "--in-process", "--no-source", "--runs", "3", "--min-seconds", "0",
               "--warmup", "1"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rc == 0 and {(r["format"], r["status"]) for r in rows} == {("ort", "ok"), ("onnx", "ok")}

    from edgekit.core.artifact import Manifest
    from edgekit.serve.models import choose_artifact

    chosen = choose_artifact(Manifest.read(out), "cpu", None, None)  # its serve rank (1) is the best on a CPU
    assert chosen.path == "mnist_cnn.fp32.ort"

    base = tmp_path / "baseline.json"
    assert main(["check", str(out), "--baseline", str(base), "--update-baseline"]) == 0
    capsys.readouterr()
    assert main(["check", str(out), "--baseline", str(base), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "pass"
    assert {c["metric"] for c in report["checks"] if c["artifact"] == "ort fp32"} >= {"present", "fidelity"}

    assert main(["export", str(out / art["path"]), "--triton", str(tmp_path / "t")]) == 2
    assert "Triton serves" in capsys.readouterr().err
