"""`inspect_model` on .tflite files: ops, shapes, MACs, parameters, static shapes, compiled models."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tflite_builder import Graph, conv_chain

from edgekit.core.errors import NotAvailable, UnsupportedModel, UsageError
from edgekit.core.fsutil import sha256_file
from edgekit.inspect import inspect_model


@pytest.fixture
def chain(tmp_path):
    return conv_chain(tmp_path / "chain.tflite")


def test_ops_shapes_macs_and_params(chain):
    r = inspect_model(chain)
    assert r.format == "tflite" and r.size_bytes == chain.stat().st_size and r.sha256 == sha256_file(chain)
    assert [(o.index, o.op, o.version) for o in r.ops] == [(0, "CONV_2D", 3), (1, "CONV_2D", 3)]
    c1, c2 = r.ops
    # 3x3 conv, 8 -> 16 channels, 6x6 output: 6*6*16 outputs x 3*3*8 MACs each; then 1x1, 16 -> 4
    assert c1.macs == 6 * 6 * 16 * 3 * 3 * 8 == 41472
    assert c2.macs == 6 * 6 * 4 * 16 == 2304
    assert r.macs == 41472 + 2304
    assert [t.shape for t in c1.inputs] == [[1, 8, 8, 8], [16, 3, 3, 8], [16]]
    assert c1.inputs[1].const is True and "const" not in c1.inputs[0].to_dict()
    assert c1.outputs[0].to_dict() == {
        "name": "h",
        "shape": [1, 6, 6, 16],
        "dtype": "int8",
        "quantization": {"scale": pytest.approx(0.05), "zero_point": 0},
    }
    assert c1.options["padding"] == "VALID" and c1.options["fusedActivationFunction"] == "NONE"
    assert r.params.by_dtype == {
        "int8": {"count": 16 * 72 + 4 * 16, "bytes": 1216},
        "int32": {"count": 20, "bytes": 80},
    }
    assert r.params.count == 1236 and r.params.bytes == 1296
    assert r.inputs[0].name == "input" and r.outputs[0].shape == [1, 6, 6, 4]
    assert r.all_static is True and r.edgetpu_compiled is False
    assert r.edgetpu.ops_on_tpu == 2
    json.dumps(r.to_dict())  # plain data all the way down


def test_dynamic_batch_is_not_static(tmp_path):
    r = inspect_model(conv_chain(tmp_path / "dyn.tflite", dynamic=True))
    assert r.all_static is False
    assert r.inputs[0].shape == [-1, 8, 8, 8]
    assert "input" in r.dynamic_tensors
    assert r.ops[0].macs == 41472  # per sample: a dynamic dimension counts as 1


def test_depthwise_fc_and_transpose_conv_macs(tmp_path):
    g = Graph()
    x = g.tensor("x", [1, 5, 5, 4])
    dw = g.tensor("dw", [1, 3, 3, 4], data=np.ones((1, 3, 3, 4)))
    h = g.tensor("h", [1, 3, 3, 4])
    g.op(
        "DEPTHWISE_CONV_2D",
        [x, dw, -1],
        [h],
        padding=0,
        strideW=1,
        strideH=1,
        depthMultiplier=1,
        dilationWFactor=1,
        dilationHFactor=1,
    )
    shp = g.tensor("shape", [2], "int32", data=np.array([1, 36]), scale=None)
    f = g.tensor("f", [1, 36])
    g.op("RESHAPE", [h, shp], [f])
    w = g.tensor("w", [10, 36], data=np.ones((10, 36)))
    y = g.tensor("y", [1, 10])
    g.op("FULLY_CONNECTED", [f, w, -1], [y])
    r = inspect_model(g.write(tmp_path / "m.tflite", [x], [y]))
    assert [o.macs for o in r.ops] == [3 * 3 * 4 * 9, 0, 10 * 36]


def test_compiled_model_is_recognised_and_refused_by_the_cpu_runtime(tmp_path):
    g = Graph()
    x = g.tensor("input", [1, 8, 8, 3], "uint8")
    y = g.tensor("output", [1, 10], "uint8")
    g.op("edgetpu-custom-op", [x], [y])
    path = g.write(tmp_path / "m_edgetpu.tflite", [x], [y])
    r = inspect_model(path)
    assert r.edgetpu_compiled is True
    assert r.ops[0].op == "edgetpu-custom-op" and r.ops[0].custom is True
    assert r.edgetpu.compiled is True and r.edgetpu.predicted is False
    assert "libedgetpu" in r.edgetpu.note
    from edgekit.runtimes.litert import LiteRT

    with pytest.raises(NotAvailable) as ei:
        LiteRT().load(path)
    assert "libedgetpu" in ei.value.message  # not "unresolved custom op"


def test_truncated_and_foreign_files(tmp_path, chain):
    cut = tmp_path / "cut.tflite"
    cut.write_bytes(chain.read_bytes()[: chain.stat().st_size // 3])
    with pytest.raises(UnsupportedModel, match="truncated or corrupt"):
        inspect_model(cut)
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a model\n")
    with pytest.raises(UnsupportedModel, match="not a model file edgekit reads"):
        inspect_model(text)
    with pytest.raises(UsageError, match="folder"):
        inspect_model(tmp_path)
    with pytest.raises(UsageError, match="No such file"):
        inspect_model(tmp_path / "missing.tflite")
