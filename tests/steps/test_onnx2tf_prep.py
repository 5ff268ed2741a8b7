"""The graph clean-up before onnx2tf (edgekit/steps/onnx_tf_prep.py), on tiny graphs with the zoo's patterns."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from onnx2tf_models import paddle_like  # noqa: E402

onnx = pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def paddle_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return paddle_like(tmp_path_factory.mktemp("paddle") / "cls.onnx")


def _pinned(path: Path):  # what edgekit's ONNX source hands onnx2tf after --input-shape 1,3,16,16
    from edgekit.sources.onnx_pin import pin

    model, _ = pin(onnx.load(str(path)), {"x": [1, 3, 16, 16]}, 13)
    return model


def test_a_negative_batch_becomes_a_free_dim_everywhere(paddle_onnx: Path) -> None:
    from edgekit.steps.onnx_tf_prep import free_negative_dims

    model = _pinned(paddle_onnx)
    values = [*model.graph.input, *model.graph.output, *model.graph.value_info]
    negative = [v.name for v in values if any(d.dim_value < 0 for d in v.type.tensor_type.shape.dim)]
    assert "x" in negative and len(negative) > 5  # shape inference carried Paddle's -1 into value_info
    changes = free_negative_dims(model)
    assert len(changes) == 1 and "negative dim" in changes[0]
    assert not any(d.dim_value < 0 for v in values for d in v.type.tensor_type.shape.dim)
    assert [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == ["batch", 3, 16, 16]
    onnx.checker.check_model(model, full_check=True)


def test_node_names_become_tf_scopes_and_tensor_names_stay(paddle_onnx: Path) -> None:
    from edgekit.steps.onnx_tf_prep import prepare, tf_safe_node_names

    model = _pinned(paddle_onnx)
    tensors = [(list(n.input), list(n.output)) for n in model.graph.node]
    changes = tf_safe_node_names(model)
    assert len(changes) == 1 and "'Conv@0' -> 'Conv_0'" in changes[0]
    assert all("@" not in n.name for n in model.graph.node)
    assert [(list(n.input), list(n.output)) for n in model.graph.node] == tensors
    assert [o.name for o in model.graph.output] == ["prob"]
    assert len(prepare(model)) == 4  # negative dims, the batch, the GELU, the layer scale: the names are done
    assert [n.op_type for n in model.graph.node].count("Gelu") == 1 and "Erf" not in [n.op_type for n in
                                                                                      model.graph.node]
    muls = {n.output[0]: list(n.input) for n in model.graph.node if n.op_type == "Mul"}
    assert muls["scaled@out"] == ["gelu@out", "gamma"]  # the constant second (onnx2tf#698)
    assert prepare(model) == []  # a clean graph goes to onnx2tf unchanged


@pytest.mark.slow
def test_a_paddle_style_onnx_converts_to_tflite(paddle_onnx: Path, tmp_path: Path) -> None:
    # PP-OCR's orientation classifier (issue 15): "at ONNX node Add@0: Dimension -1 must be >= 0", then
    # "'Softmax@0' is not a valid scope name"; ConvNeXt's norm and BiT's computed weight at the depthwise Conv@1
    pytest.importorskip("onnx2tf")
    from edgekit.conversion.pipeline import convert

    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(1).random((24, 3, 16, 16), dtype=np.float32))
    run = convert(paddle_onnx, "tflite", "fp32", calib=str(calib), calib_size=8, val_size=16,
                  input_shape=[1, 3, 16, 16], out=tmp_path / "out")
    (art,) = run.artifacts
    assert art.status != "failed", art.failure
    assert art.fidelity is not None and art.fidelity.passed


def _gelu_graph(divisor: float):
    from onnx import TensorProto, helper, numpy_helper

    consts = {"sqrt2": divisor, "one": 1.0, "half": 0.5}
    inits = [numpy_helper.from_array(np.array([v], np.float32), k) for k, v in consts.items()]
    nodes = [helper.make_node("Div", ["x", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["half", "a"], ["h"]),
             helper.make_node("Mul", ["x", "h"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_torchs_five_node_gelu_becomes_one_gelu_with_the_same_values() -> None:
    ort = pytest.importorskip("onnxruntime")
    from edgekit.steps.onnx_tf_prep import erf_gelu_to_gelu

    x = np.linspace(-4, 4, 10, dtype=np.float32).reshape(2, 5)
    model = _gelu_graph(1.4142135)
    before = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    assert len(erf_gelu_to_gelu(model)) == 1
    onnx.checker.check_model(model, full_check=True)
    assert [n.op_type for n in model.graph.node] == ["Gelu"] and not model.graph.initializer
    assert model.opset_import[0].version == 20
    after = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(after, before, atol=1e-6)
    other = _gelu_graph(2.0)  # not a GELU: left alone
    assert erf_gelu_to_gelu(other) == [] and len(other.graph.node) == 5


def test_a_one_group_groupnorm_becomes_reductions_on_the_4d_tensor() -> None:
    """PoolFormer: onnx2tf lost the layout in GroupNorm(1)'s (N, 1, C*H*W) middle; fp32 TFLite cosine 0.56."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from edgekit.steps.onnx_tf_prep import one_group_norm_to_reductions, static_batch

    inits = [numpy_helper.from_array(np.array([1, 1, -1], np.int64), "flat"),
             numpy_helper.from_array(np.array([1, 4, 3, 3], np.int64), "back"),
             numpy_helper.from_array(np.ones(1, np.float32), "one"), numpy_helper.from_array(np.zeros(1, np.float32),
                                                                                              "zero")]
    nodes = [helper.make_node("Reshape", ["x", "flat"], ["r"]),
             helper.make_node("InstanceNormalization", ["r", "one", "zero"], ["n"], epsilon=1e-5),
             helper.make_node("Reshape", ["n", "back"], ["y"])]
    graph = helper.make_graph(nodes, "gn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 3, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = np.random.default_rng(0).normal(2.0, 3.0, (1, 4, 3, 3)).astype(np.float32)
    before = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    static_batch(model, 1)  # what prepare runs first: the shapes the rewrite reads
    assert len(one_group_norm_to_reductions(model)) == 1
    onnx.checker.check_model(model, full_check=True)
    ops = [n.op_type for n in model.graph.node]
    assert "InstanceNormalization" not in ops and "Reshape" not in ops and ops.count("ReduceMean") == 2
    assert {i.name for i in model.graph.initializer} == {"edgekit_gn1_0_eps", "edgekit_gn1_0_axes"}
    after = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(after, before, atol=1e-5)
