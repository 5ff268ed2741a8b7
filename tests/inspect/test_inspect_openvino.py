"""`edgekit inspect model.xml`: an OpenVINO IR's ops, MACs, weights by type, precision, size with its .bin.

The IRs are built here with OpenVINO's opset API (no torch, no converter): an int8 graph as NNCF writes
them (FakeQuantize on activations, i8 weights decompressed by Convert and Multiply), with a grouped
convolution and a transposed MatMul whose MACs are known by hand, and the same graph saved with fp16 weights.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgekit.cli import main
from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.inspect import inspect_model

ov = pytest.importorskip("openvino")


def _graph(int8: bool) -> object:
    from openvino import opset13 as op

    x = op.parameter([-1, 3, 8, 8], np.float32, name="image")
    x.output(0).get_tensor().set_names({"image"})
    h = x
    if int8:
        lo, hi = op.constant(np.float32(0)), op.constant(np.float32(1))
        h = op.fake_quantize(h, lo, hi, lo, hi, 256)
        w = op.constant(np.ones((3, 1, 1, 3, 3), np.int8))  # grouped (depthwise): [G, Cout/G, Cin/G, kh, kw]
        w = op.multiply(op.convert(w, "f32"), op.constant(np.full((3, 1, 1, 1, 1), 0.1, np.float32)))
    else:
        w = op.constant(np.full((3, 1, 1, 3, 3), 0.1, np.float32))
    h = op.group_convolution(h, w, [1, 1], [0, 0], [0, 0], [1, 1])  # [-1, 3, 6, 6]: 108 x 9 MACs per sample
    h = op.convolution(h, op.constant(np.ones((4, 3, 1, 1), np.float32)), [1, 1], [0, 0], [0, 0], [1, 1])
    h = op.reshape(h, op.constant(np.array([-1, 144], np.int64)), False)  # 144 x 4 x 6 x 6 = 144
    h = op.matmul(op.constant(np.ones((10, 144), np.float32)), h, False, True)  # [10,144] x [144,N]^T
    out = op.result(h)
    out.output(0).get_tensor().set_names({"scores"})
    return ov.Model([out], [x], "tiny")


@pytest.fixture(scope="module")
def irs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("irs")
    paths = {"int8": d / "m.int8.xml", "fp32": d / "m.fp32.xml", "fp16": d / "m.fp16.xml"}
    ov.save_model(_graph(True), str(paths["int8"]), compress_to_fp16=False)
    ov.save_model(_graph(False), str(paths["fp32"]), compress_to_fp16=False)
    ov.save_model(_graph(False), str(paths["fp16"]), compress_to_fp16=True)
    return paths


def test_ops_macs_weights_and_precision(irs: dict[str, Path]) -> None:
    r = inspect_model(irs["int8"])
    assert r.format == "openvino" and r.precision == "int8" and r.ir_version == 11
    assert r.op_counts["FakeQuantize"] == 1 and r.op_counts["GroupConvolution"] == 1
    assert "Constant" not in r.op_counts and "Parameter" not in r.op_counts
    by_op = {o.op: o.macs for o in r.ops}
    assert by_op["GroupConvolution"] == 108 * 9 and by_op["Convolution"] == 144 * 3 and by_op["MatMul"] == 10 * 144
    assert r.macs == 108 * 9 + 144 * 3 + 10 * 144
    assert r.params.by_dtype["int8"] == {"count": 27, "bytes": 27}
    assert [(t.name, t.shape, t.dtype) for t in r.inputs] == [("image", [-1, 3, 8, 8], "float32")]
    assert [t.name for t in r.outputs] == ["scores"] and not r.all_static
    assert r.size_bytes >= irs["int8"].stat().st_size
    assert inspect_model(irs["fp32"]).precision == "fp32"
    fp16 = inspect_model(irs["fp16"])
    assert fp16.precision == "fp16" and "float16" in fp16.params.by_dtype and fp16.macs == r.macs


def test_cli_json(irs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(irs["int8"]), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["format"] == "openvino" and d["precision"] == "int8" and d["producer"].startswith("OpenVINO")
    assert d["ops"][0]["op"] == "FakeQuantize" and d["ops"][0]["domain"] == "opset1"
    assert main(["inspect", str(irs["int8"])]) == 0
    assert "computes in int8" in capsys.readouterr().out


def test_incomplete_and_hostile_files(irs: dict[str, Path], tmp_path: Path) -> None:
    xml = tmp_path / "m.xml"
    xml.write_text(irs["fp32"].read_text())
    with pytest.raises(UsageError, match="m.bin is not beside it"):
        inspect_model(xml)
    (tmp_path / "m.bin").write_bytes(irs["fp32"].with_suffix(".bin").read_bytes())
    xml.write_text(irs["fp32"].read_text()[:600])
    with pytest.raises(UnsupportedModel, match="could not be read as an OpenVINO IR"):
        inspect_model(xml)
    xml.write_text('<?xml version="1.0"?><!DOCTYPE net [<!ENTITY a "x">]><net version="11">&a;</net>')
    with pytest.raises(UnsupportedModel, match="not a model file edgekit reads"):
        inspect_model(xml)
