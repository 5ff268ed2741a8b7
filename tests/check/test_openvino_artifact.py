"""A manifest with OpenVINO IR artifacts (model.xml + model.bin): `check` reads their operators, MACs and size
with the .bin, compares them with a baseline, and `export --triton` carries both files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgekit.cli import main
from edgekit.core.artifact import Artifact, Manifest, SourceInfo, TensorSpec
from edgekit.core.fidelity import Fidelity

ov = pytest.importorskip("openvino")


def _ir(path: Path, extra_relu: bool) -> None:
    from openvino import opset13 as op

    x = op.parameter([-1, 3, 8, 8], np.float32, name="x")
    x.output(0).get_tensor().set_names({"x"})
    h = op.relu(op.convolution(x, op.constant(np.ones((4, 3, 3, 3), np.float32)), [1, 1], [0, 0], [0, 0], [1, 1]))
    if extra_relu:
        h = op.sigmoid(h)
    out = op.result(h)
    out.output(0).get_tensor().set_names({"y"})
    ov.save_model(ov.Model([out], [x], "m"), str(path), compress_to_fp16=False)


def _conversion(folder: Path, extra_op: bool = False) -> Path:
    folder.mkdir()
    _ir(folder / "m.fp32.xml", extra_op)
    art = Artifact(path="m.fp32.xml", format="openvino", precision="fp32",
                   inputs=[TensorSpec("x", [-1, 3, 8, 8], "float32", "NCHW")],
                   outputs=[TensorSpec("y", [-1, 4, 6, 6], "float32")], size_bytes=0, sha256="",
                   fidelity=Fidelity(samples=8, top1_agreement=1.0, cosine=1.0, passed=True))
    Manifest(source=SourceInfo(path="m.onnx", kind="onnx"), artifacts=[art]).write(folder / "manifest.json")
    return folder


@pytest.mark.slow  # two check runs, each reading the IRs in a child process (about 4 s)
def test_check_reads_an_ir_and_compares_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _conversion(tmp_path / "base")
    assert main(["check", str(base), "--baseline", str(base), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {r["artifact"] for r in report["checks"]} == {"openvino fp32"}
    assert not [n for n in report["notes"] if "not read" in n], report["notes"]
    now = _conversion(tmp_path / "now", extra_op=True)
    assert main(["check", str(now), "--baseline", str(base), "--format", "json"]) == 0
    new_ops = [r for r in json.loads(capsys.readouterr().out)["checks"] if r["budget_key"] == "new_ops"]
    assert new_ops and new_ops[0]["now"] == "Sigmoid" and new_ops[0]["verdict"] == "warn"


def test_export_carries_the_xml_and_its_bin(tmp_path: Path) -> None:
    conv = _conversion(tmp_path / "conv")
    repo = tmp_path / "repo"
    assert main(["export", str(conv), "--triton", str(repo)]) == 0
    (model,) = [p for p in repo.iterdir() if p.is_dir()]
    assert sorted(p.name for p in (model / "1").iterdir()) == ["model.bin", "model.xml"]
    assert 'backend: "openvino"' in (model / "config.pbtxt").read_text()
    assert (model / "1" / "model.bin").read_bytes() == (conv / "m.fp32.bin").read_bytes()
