"""A pool whose window covers its whole input becomes the Global pool before onnx2tf (edgekit.steps.onnx_pools).

transformers' EfficientNet ends with AvgPool2d(1280, ceil_mode=True) over a 5x5 map; onnx2tf padded the map
to 1280x1280x1280 (8 GB) for it. The rewrite must give the same values (ONNX Runtime before and after) and
leave every other pool alone.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

from edgekit.steps.onnx_pools import covers_input, whole_input_pools_to_global  # noqa: E402


def _model(op: str, **attrs) -> onnx.ModelProto:
    """x -> Relu -> the pool -> y: the pool's input shape is in no value_info, so the rewrite infers it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node(op, ["r"], ["y"], name="pool",
                                                                                     **attrs)]
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 18)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize(("op", "attrs"), [
    ("AveragePool", {"kernel_shape": [1280, 1280], "strides": [1280, 1280], "ceil_mode": 1}),  # transformers' B0
    ("AveragePool", {"kernel_shape": [1280, 1280], "strides": [1280, 1280], "ceil_mode": 1, "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [5, 5]}),
    ("MaxPool", {"kernel_shape": [5, 5], "strides": [2, 2]}),
])
def test_a_pool_over_the_whole_input_becomes_global_with_the_same_values(op: str, attrs: dict) -> None:
    x = np.random.default_rng(0).standard_normal((1, 4, 5, 5)).astype(np.float32)
    model = _model(op, **attrs)
    before = _run(model, x)
    words = whole_input_pools_to_global(model)
    assert [n.op_type for n in model.graph.node] == ["Relu", f"Global{op}"] and "pool" in words[0]
    np.testing.assert_allclose(_run(model, x), before, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3]},  # a window smaller than the input: a real pool
    {"kernel_shape": [5, 5], "pads": [1, 1, 1, 1]},  # padded: more than one output cell
    {"kernel_shape": [4, 4], "ceil_mode": 1, "strides": [1, 1]},  # 2x2 output cells
])
def test_other_pools_are_left_alone(attrs: dict) -> None:
    model = _model("AveragePool", **attrs)
    assert whole_input_pools_to_global(model) == []
    assert [n.op_type for n in model.graph.node] == ["Relu", "AveragePool"]


def test_the_output_size_rule_is_onnx_s() -> None:
    assert covers_input({"kernel_shape": [1280], "strides": [1280], "ceil_mode": 1}, [5])
    assert not covers_input({"kernel_shape": [1280], "strides": [1], "ceil_mode": 1}, [5])  # ceil(-1275)+1 cells
    assert not covers_input({"kernel_shape": [6]}, [5])  # floor mode: no output cell at all
