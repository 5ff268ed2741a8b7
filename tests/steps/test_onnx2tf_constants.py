"""Rank 3-5 Constant nodes reach onnx2tf as initializers (edgekit.steps.onnx2tf_fixes, issue 27).

onnx2tf 1.28.8 writes a Constant node of rank 3-5 channels-last whatever its consumers' layout; YOLOv8's anchor
grid is one (onnxsim folds make_anchors into it), and the DFL head's last Concat then met boxes channels-last
beside scores in ONNX's order. As an initializer the same tensor is laid out for each consumer.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from onnx2tf_models import converts_like_onnxruntime, yolov8_dfl_head  # noqa: E402

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _decode_graph():
    """anchors [1, 2, 6] (a Constant node) - x, * strides [1, 6] (a rank-2 Constant node), a rank-3 Constant
    node that is itself a graph output and rank-3 int64 indices: what the rewrite moves, what it leaves."""
    from onnx import TensorProto, helper, numpy_helper

    grid = (np.arange(12, dtype=np.float32).reshape(1, 2, 6) + 0.5)
    nodes = [helper.make_node("Constant", [], ["anchors"], value=numpy_helper.from_array(grid, "anchors")),
             helper.make_node("Constant", [], ["strides"], value=numpy_helper.from_array(
                 np.full((1, 6), 8.0, np.float32), "strides")),
             helper.make_node("Constant", [], ["grid_out"], value=numpy_helper.from_array(grid, "grid_out")),
             helper.make_node("Constant", [], ["idx"], value=numpy_helper.from_array(
                 np.zeros((1, 2, 1), np.int64), "idx")),
             helper.make_node("Sub", ["anchors", "x"], ["x1y1"]),
             helper.make_node("Mul", ["x1y1", "strides"], ["y"])]
    graph = helper.make_graph(nodes, "decode", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 6]),
                               helper.make_tensor_value_info("grid_out", TensorProto.FLOAT, [1, 2, 6])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model, x: np.ndarray) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})


def test_rank3_constant_nodes_become_initializers_with_the_same_values() -> None:
    from edgekit.steps.onnx2tf_fixes import constant_nodes_to_initializers

    model = _decode_graph()
    x = np.random.default_rng(0).standard_normal((1, 2, 6)).astype(np.float32)
    before = _run(model, x)
    assert constant_nodes_to_initializers(model) == ["anchors"]
    onnx.checker.check_model(model, full_check=True)
    assert [n.output[0] for n in model.graph.node] == ["strides", "grid_out", "idx", "x1y1", "y"]
    (anchors,) = model.graph.initializer
    assert anchors.name == "anchors" and list(anchors.dims) == [1, 2, 6]
    for got, want in zip(_run(model, x), before, strict=True):
        np.testing.assert_array_equal(got, want)  # the same tensor: bit for bit
    assert constant_nodes_to_initializers(model) == []


def test_onnx2tf_imports_a_copy_and_the_conversion_notes_say_so() -> None:
    from edgekit.steps import onnx2tf_fixes

    class Graphsurgeon:  # stands in for onnx_graphsurgeon: returns what onnx2tf would import
        Variable = "the real module's attributes pass through"

        def import_onnx(self, model):
            return model

    model = _decode_graph()
    onnx2tf_fixes._REPAIRS.clear()
    stand_in = onnx2tf_fixes._InitializerImport(Graphsurgeon())
    imported = stand_in.import_onnx(model)
    assert stand_in.Variable == Graphsurgeon.Variable
    assert [i.name for i in imported.graph.initializer] == ["anchors"]
    assert len(model.graph.node) == 6 and not model.graph.initializer  # onnx2tf's own ModelProto: unchanged
    stand_in.import_onnx(model)  # onnx2tf imports the graph more than once: one note
    (note,) = onnx2tf_fixes.repairs()
    assert "1 float Constant node(s)" in note and "'anchors'" in note and "channels-last" in note


@pytest.mark.slow
def test_a_yolov8_dfl_head_converts_to_fp32_tflite_like_onnxruntime(tmp_path: Path) -> None:
    # issue 27: "at ONNX node Concat_24: Dimension 0 in both shapes must be equal, but are 2 and 84 ... [1,84,2],
    # [1,2,84]" (a real YOLOv8n: its last Concat, [1,2100,4] against [1,14,2100])
    x = np.random.default_rng(1).random((24, 3, 32, 32), dtype=np.float32)
    shape = converts_like_onnxruntime(yolov8_dfl_head(tmp_path / "head.onnx"), x, tmp_path)
    assert shape == [1, 7, 84]  # (1, 4 + classes, anchors): ONNX's order kept


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="TensorFlow 2.21's TFLite converter writes C - Transpose(x) as Transpose(x - C)")
def test_the_tflite_converter_keeps_a_subs_operands_after_a_transpose() -> None:
    # Why the fix keeps the decode in ONNX's order rather than letting the last Concat take two layouts: with
    # the anchors channels-last, onnx2tf writes anchor - Transpose(lt), and the TFLite converter swaps the operands
    # when it moves the TRANSPOSE after the SUB (the fp32 TFLite's boxes: cosine 0.65). Both converter entry
    # points, a scalar constant too. Strict: when TensorFlow fixes it, this test says so.
    tf = pytest.importorskip("tensorflow")
    from ai_edge_litert.interpreter import Interpreter

    @tf.function(input_signature=[tf.TensorSpec([1, 2, 6], tf.float32)])
    def anchor_minus(x):
        return tf.math.subtract(np.float32(3.0), tf.transpose(x, [0, 2, 1]))

    blob = tf.lite.TFLiteConverter.from_concrete_functions([anchor_minus.get_concrete_function()],
                                                          anchor_minus).convert()
    it = Interpreter(model_content=blob)
    it.allocate_tensors()
    x = np.random.default_rng(0).random((1, 2, 6), dtype=np.float32)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    np.testing.assert_allclose(it.get_tensor(it.get_output_details()[0]["index"]), anchor_minus(x).numpy(), atol=1e-6)
