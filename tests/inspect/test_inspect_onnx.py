"""`inspect_model` on .onnx files: nodes, inferred shapes, MACs, parameters, external data."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from edgekit.core.errors import MissingDependency
from edgekit.inspect import inspect_model

onnx = pytest.importorskip("onnx")


def small_cnn(batch: int | str = "N"):
    """x[N,1,8,8] -> Conv 3x3 (4 out) -> Relu -> Flatten -> Gemm (10)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "W"),
        numpy_helper.from_array(np.zeros(4, np.float32), "B"),
        numpy_helper.from_array(rng.standard_normal((10, 144)).astype(np.float32), "FC"),
        numpy_helper.from_array(np.zeros(10, np.float32), "FCB"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "FC", "FCB"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def test_nodes_macs_params(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(small_cnn(batch=1), str(path))
    r = inspect_model(path)
    assert r.format == "onnx" and r.opsets == {"ai.onnx": 17}
    assert [o.op for o in r.ops] == ["Conv", "Relu", "Flatten", "Gemm"]
    conv, _, _, gemm = r.ops
    assert conv.outputs[0].shape == [1, 4, 6, 6]  # from shape inference
    assert conv.macs == 4 * 6 * 6 * 9 and gemm.macs == 10 * 144
    assert r.macs == 1296 + 1440
    assert r.params.by_dtype == {"float32": {"count": 1490, "bytes": 5960}}
    assert [i.name for i in r.inputs] == ["x"]  # initializers are not inputs
    assert r.all_static is True and r.edgetpu is None and "edgetpu" not in r.to_dict()


def test_dynamic_batch_and_external_data_not_loaded(tmp_path):
    path = tmp_path / "dyn.onnx"
    onnx.save(
        small_cnn(),
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="dyn.onnx.data",
        size_threshold=0,
    )
    (tmp_path / "dyn.onnx.data").write_bytes(b"")  # weights gone: inspect must not need them
    r = inspect_model(path)
    assert r.external_data is True
    assert r.params.count == 1490
    assert r.all_static is False and "x" in r.dynamic_tensors
    assert r.inputs[0].shape == [-1, 1, 8, 8]
    assert r.macs == 1296 + 1440  # per sample


def test_missing_onnx_package_names_the_install_line(tmp_path, monkeypatch):
    path = tmp_path / "m.onnx"
    onnx.save(small_cnn(batch=1), str(path))
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(MissingDependency) as ei:
        inspect_model(path)
    assert "pip install" in ei.value.hint
