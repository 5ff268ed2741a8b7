"""bench/pnet_int8_layers.py: the ONNX int8 file edited one grid at a time keeps every other value and each
initializer's type, so a variant differs from the file as made only where it says."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
onnx = pytest.importorskip("onnx")
layers = pytest.importorskip("pnet_int8_layers")


def _qdq() -> object:
    """x -> QuantizeLinear -> DequantizeLinear -> y, with a uint8 zero point and a float scale."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "x_scale"),
             numpy_helper.from_array(np.array(47, np.uint8), "x_zero_point"),
             numpy_helper.from_array(np.array([0.1, -0.2], np.float32), "slope")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero_point"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "x_scale", "x_zero_point"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_an_edit_replaces_only_the_named_initializers_in_their_own_type() -> None:
    from onnx import numpy_helper

    model = _qdq()
    out = layers.edited(model, {"x_scale": 0.0554, "x_zero_point": 64.0})
    got = {i.name: numpy_helper.to_array(i) for i in out.graph.initializer}
    assert got["x_zero_point"].dtype == np.uint8 and int(got["x_zero_point"]) == 64
    assert got["x_scale"].dtype == np.float32 and got["x_scale"].shape == ()
    assert abs(float(got["x_scale"]) - 0.0554) < 1e-7
    assert np.array_equal(got["slope"], np.array([0.1, -0.2], np.float32)) and got["slope"].dtype == np.float32
    before = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    assert int(before["x_zero_point"]) == 47  # the model as made is left as it was
    assert layers.relative(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == 0.0
