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
