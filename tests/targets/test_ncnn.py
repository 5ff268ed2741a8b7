"""The ncnn target's own pieces: the ONNX's I/O it converts with, pnnx's blobs renamed after them, what pnnx said
when it failed, and ops pnnx left that ncnn has no layer for."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from edgekit.core.errors import ConversionError, UnsupportedModel
from edgekit.ncnn.param import parse_text
from edgekit.targets.ncnn import _said, check_layers, named, onnx_io, shape_arg
from tests.ncnn.tiny_ncnn import PARAM

onnx = pytest.importorskip("onnx")


def _onnx(path: Path, dims: list[int | str]) -> Path:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("image", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Relu", ["image"], ["logits"])], "g", [x], [y])
    onnx.save(helper.make_model(graph), path)
    return path


def test_onnx_io_takes_a_free_batch_as_one(tmp_path: Path) -> None:
    inputs, outputs = onnx_io(_onnx(tmp_path / "m.onnx", ["batch", 1, 28, 28]))
    assert inputs == [("image", [1, 1, 28, 28])] and outputs == ["logits"]
    assert shape_arg(inputs + [("b", [1, 10])]) == "[1,1,28,28]f32,[1,10]f32"
    with pytest.raises(UnsupportedModel, match="free dimension"):
        onnx_io(_onnx(tmp_path / "h.onnx", [1, 1, "h", 28]))


def test_named_renames_pnnx_blobs_after_the_source(tmp_path: Path) -> None:
    raw = tmp_path / "model.ncnn.param"
    raw.write_text(PARAM)
    param = parse_text(named(raw, [("image", [1, 1, 28, 28])], ["logits"]))
    assert param.input_names() == ["image"] and param.output_names() == ["logits"]
    assert param.input_shape(param.inputs[0]) == [1, 1, 28, 28]
    with pytest.raises(ConversionError, match="for a model of 1 inputs and 2 outputs"):
        named(raw, [("image", [1, 1, 28, 28])], ["logits", "boxes"])


def test_what_pnnx_said_is_kept() -> None:
    crashed = subprocess.CompletedProcess(["pnnx"], -11, "", "")
    assert "SIGSEGV" in _said(crashed)
    failed = subprocess.CompletedProcess(["pnnx"], 1, "a\nb\n", "c\nunsupported op Foo\n")
    assert _said(failed).endswith("unsupported op Foo")


def test_ops_ncnn_has_no_layer_for_are_a_conversion_error() -> None:
    pytest.importorskip("ncnn")
    check_layers(PARAM, "")  # every layer known
    left = PARAM.replace("ReLU                     relu_0", "Pad                      Pad_7 ")
    with pytest.raises(ConversionError, match=r"Pad \(1: Pad_7\); pnnx said: ignore Pad Pad_7") as err:
        check_layers(left, "ok\nignore Pad Pad_7 param pads=(0,1)\n")
    assert err.value.op == "Pad" and err.value.step == "pnnx_convert"


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bundled_cnn_converts_to_ncnn_and_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The bundled CNN: ncnn fp32 and fp16 published with their .bin and validated; run by the source's names on
    real digits; inspected with the ONNX's MACs; int8 refused before anything runs, with the reason."""
    import json

    import numpy as np

    from edgekit.cli import main
    from edgekit.data.calibration import load_samples
    from edgekit.inspect import inspect_model
    from edgekit.runtimes import open_runtime

    out = tmp_path / "o"
    rc = main(["convert", str(REPO / "models" / "mnist_cnn.pt2"), "--target", "onnx,ncnn", "--quantize", "fp32,fp16",
               "--calib", "mnist", "--val-size", "200", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    arts = {(a["format"], a["precision"]): a for a in json.loads((out / "manifest.json").read_text())["artifacts"]}
    for precision in ("fp32", "fp16"):
        art = arts["ncnn", precision]
        assert art["status"] == "ok" and art["fidelity"]["passed"], art
        param = out / art["path"]
        assert param.name == f"mnist_cnn.{precision}.ncnn.param" and param.with_suffix(".bin").is_file()
        assert art["size_bytes"] == param.stat().st_size + param.with_suffix(".bin").stat().st_size
        assert "exporter" not in art["extra"]  # traced to TorchScript: the ONNX's exporter is not its fact
    assert arts["ncnn", "fp16"]["size_bytes"] < 0.6 * arts["ncnn", "fp32"]["size_bytes"]

    x = load_samples("mnist", [1, 1, 28, 28], "NCHW").x[:16]
    onnx_rt = open_runtime(out / arts["onnx", "fp32"]["path"])
    want = onnx_rt.run({s.name: x for s in onnx_rt.inputs})
    with open_runtime(out / arts["ncnn", "fp32"]["path"], threads=1) as rt:
        assert [s.name for s in rt.inputs] == [s.name for s in onnx_rt.inputs]
        assert [s.name for s in rt.outputs] == list(want)
        got = rt.run({s.name: x for s in rt.inputs})
        np.testing.assert_allclose(got[rt.outputs[0].name], want[rt.outputs[0].name], atol=1e-4)
    report = inspect_model(out / arts["ncnn", "fp16"]["path"])
    assert report.precision == "fp16" and report.macs == inspect_model(out / arts["onnx", "fp32"]["path"]).macs

    rc = main(["convert", str(REPO / "models" / "mnist_cnn.pt2"), "--target", "ncnn", "--quantize", "int8",
               "--calib", "mnist", "--out", str(tmp_path / "int8")])
    err = capsys.readouterr().err
    assert rc == 2 and "ncnn2table" in err and not (tmp_path / "int8").exists(), err
