"""Issue 27: a detector's int8 keeps its final decode in float, found from the graph, recorded, and judged by boxes."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from detector_models import DECODE, HEAD_LAYERS, canvases, dfl_detector

from edgekit.fidelity.decide import decide_kinds
from edgekit.fidelity.metrics import judge_detection
from edgekit.quantize.detect_decode import onnx_decode
from edgekit.quantize.onnx.graph import run_batches, session
from edgekit.quantize.onnx.recipes import ONNX_RECIPES, QuantData
from edgekit.quantize.onnx.search import KindSource, quantize_onnx
from edgekit.quantize.records import RecipeChoice


@pytest.fixture(scope="module")
def detector(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dfl_detector(tmp_path_factory.mktemp("det") / "dfl.onnx")


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return canvases(192)


def test_decode_found_structurally(detector: Path) -> None:
    import onnx

    model = onnx.load(str(detector))
    region = onnx_decode(model, ["y"])
    assert set(region.nodes) == set(DECODE)  # DFL softmax and its conv, anchors, strides, sigmoid, concats
    assert region.head_layers == HEAD_LAYERS  # the walk stops at the head's last convs, never in the backbone
    assert region.ops["Softmax"] == 1 and region.ops["Conv"] == 1 and not region.reason


def test_decode_found_without_names(detector: Path) -> None:
    """Names mean nothing to the walk: shuffled, meaningless names find the same nodes."""
    import onnx

    model = onnx.load(str(detector))
    before = {n.name: k for k, n in enumerate(model.graph.node)}
    fresh = [f"n{k}" for k in range(len(model.graph.node))]
    random.Random(0).shuffle(fresh)
    for node, name in zip(model.graph.node, fresh, strict=True):
        node.name = name
    found = {k for k, n in enumerate(model.graph.node) if n.name in set(onnx_decode(model, ["y"]).nodes)}
    assert found == {before[n] for n in DECODE}


def test_no_head_keeps_nothing(tmp_path: Path) -> None:
    """An output computed from the input without a layer between is not a head: nothing is kept, and why."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"], name="s")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    region = onnx_decode(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), ["y"])
    assert region.nodes == () and "without a layer" in region.reason
    assert isinstance(onnx, object)


def _recall_precision(src: Path, q: Path, x: np.ndarray) -> tuple[float, float]:
    y_ref, y = run_batches(session(str(src)), x)[0], run_batches(session(str(q)), x)[0]
    head = decide_kinds({"y": y_ref}, "NCHW", None, {"task": "detect"})["y"].head
    fid = judge_detection([y_ref], [y], head, precision="int8")
    assert fid.detections and fid.detections > 100
    return float(fid.detection_recall or 0.0), float(fid.detection_precision or 0.0)


def test_int8_keeps_the_boxes(detector: Path, x: np.ndarray, tmp_path: Path) -> None:
    """Plain int8 of the whole graph shares one scale between pixels and scores and loses boxes; with the decode in
    float (what quantize_onnx does for a detection output) it keeps them, and the record says what was kept."""
    (tmp_path / "plain").mkdir()
    ONNX_RECIPES["plain"]().build(detector, tmp_path / "plain.onnx", QuantData("x", x[:96], 1, tmp_path / "plain"))
    before = _recall_precision(detector, tmp_path / "plain.onnx", x[96:])
    choice = quantize_onnx(detector, tmp_path / "q.onnx", QuantData("x", x[:96], 1, tmp_path), "plain", lambda s: None,
                           kinds=KindSource({"task": "detect"}))
    after = _recall_precision(detector, tmp_path / "q.onnx", x[96:])
    assert min(before) < 0.9 <= min(after)
    rec = choice.detection_decode
    assert rec is not None and rec["nodes"] == len(DECODE) and rec["outputs"] == ["y"]
    assert 0 < rec["macs_float_fraction"] < 0.05 and "nodes_to_exclude" in rec["kept_in_float"]
    assert set(choice.config["decode_nodes"]) == set(DECODE) and choice.float_nodes == ()
    import onnx

    q = onnx.load(str(tmp_path / "q.onnx"))
    quantized = {i for n in q.graph.node if n.op_type == "QuantizeLinear" for i in n.input}
    decode_outputs = {o for n in q.graph.node if n.name in set(DECODE) for o in n.output}
    assert not quantized & decode_outputs  # nothing after the head's last convs is quantized
    head_outputs = {o for n in q.graph.node if n.name in set(HEAD_LAYERS) for o in n.output}
    assert not quantized & head_outputs  # and the head's last convs write float (their weights stay int8)
    assert {n.op_type for n in q.graph.node if n.name in set(HEAD_LAYERS)} == {"Conv"}
    assert sum(n.op_type == "DequantizeLinear" for n in q.graph.node) > len(HEAD_LAYERS)
    again = RecipeChoice.from_dict(choice.to_dict())
    assert again.detection_decode == rec


def test_auto_judges_detectors_by_boxes(detector: Path, x: np.ndarray, tmp_path: Path) -> None:
    """auto's candidates of a detector are judged by box recall and precision, not by cosine or top-1."""
    choice = quantize_onnx(detector, tmp_path / "q.onnx", QuantData("x", x, 1, tmp_path), "auto", lambda s: None,
                           kinds=KindSource({"task": "detect"}))
    first = choice.trials[0]
    assert first.detection_recall is not None and first.detection_precision is not None
    assert first.top1_agreement is None
    assert first.passed == (min(first.detection_recall, first.detection_precision) >= 0.95
                            and not first.failures)
    assert choice.detection_decode is not None


def test_no_kinds_no_decode(detector: Path, x: np.ndarray, tmp_path: Path) -> None:
    """Without a detection output (a classifier, or no kinds to decide from) recipes are as before."""
    choice = quantize_onnx(detector, tmp_path / "q.onnx", QuantData("x", x[:64], 1, tmp_path), "plain",
                           lambda s: None)
    assert choice.detection_decode is None and choice.config["decode_nodes"] == []


def test_tflite_decode_found_structurally() -> None:
    """The same walk over a TFLite graph (ops named by their first output tensor, as the quantizer's denylist
    names them): CONV_2D heads, then the DFL softmax and its CONV_2D, the arithmetic and the concat."""
    from edgekit.quantize.detect_decode import tflite_decode
    from edgekit.tflite.model import TfliteModel, TOp, TTensor

    names = ["x", "feat", "box", "cls", "box_r", "dfl_t", "dfl_p", "w_dfl", "dfl_e", "dist", "pix", "scores", "y",
             "w_feat", "w_box", "w_cls"]
    t = {n: k for k, n in enumerate(names)}
    kinds = [("CONV_2D", ["x", "w_feat"], "feat"), ("CONV_2D", ["feat", "w_box"], "box"),
             ("CONV_2D", ["feat", "w_cls"], "cls"), ("RESHAPE", ["box"], "box_r"), ("TRANSPOSE", ["box_r"], "dfl_t"),
             ("SOFTMAX", ["dfl_t"], "dfl_p"), ("CONV_2D", ["dfl_p", "w_dfl"], "dfl_e"), ("RESHAPE", ["dfl_e"], "dist"),
             ("MUL", ["dist"], "pix"), ("LOGISTIC", ["cls"], "scores"), ("CONCATENATION", ["pix", "scores"], "y")]
    ops = [TOp(index=k, op=kind, version=1, custom=False, inputs=[t[i] for i in ins], outputs=[t[out]], options={})
           for k, (kind, ins, out) in enumerate(kinds)]
    tensors = [TTensor(index=k, name=n, shape=[1], dtype="float32", quantization=None, buffer=0, nbytes=0)
               for k, n in enumerate(names)]
    model = TfliteModel(path=Path("decode.tflite"), size_bytes=0, tensors=tensors, ops=ops, inputs=[t["x"]],
                        outputs=[t["y"]], subgraphs=1, description="", schema_version=3)
    region = tflite_decode(model, [t["y"]])
    assert set(region.nodes) == {"box_r", "dfl_t", "dfl_p", "dfl_e", "dist", "pix", "scores", "y"}
    assert set(region.head_layers) == {"box", "cls"} and region.outputs == ("y",)
