"""The int8 search on a detector's score drift (issue 37): candidates judged, recorded and shown with it, and mixed
precision ranking a YOLO output's damage with its box rows and score rows each on its own scale.

Plain numpy: fast.
"""

from __future__ import annotations

import numpy as np

from edgekit.fidelity.detection import Head
from edgekit.quantize.detect_decode import role_parts
from edgekit.quantize.search import judge, output_noise, say, trial

RNG = np.random.default_rng(37)


def _yolov8(classes: int = 3, anchors: int = 200) -> np.ndarray:
    boxes = RNG.uniform(0, 320, (4, 4, anchors))  # pixels
    scores = RNG.uniform(0, 0.3, (4, classes, anchors))
    return np.concatenate([boxes, scores], axis=1).astype(np.float32)


def test_a_group_that_moves_the_scores_outranks_one_that_moves_boxes_by_a_pixel() -> None:
    ref, head = _yolov8(), Head("yolov8", 3, ["output0"])
    boxes_moved = ref.copy()
    boxes_moved[:, :4] += RNG.normal(0, 1.0, boxes_moved[:, :4].shape).astype(np.float32)  # 1 px: harmless
    scores_moved = ref.copy()
    scores_moved[:, 4:] += RNG.normal(0, 0.05, scores_moved[:, 4:].shape).astype(np.float32)  # 0.05: crosses cuts
    # the raw mean squared error ranks the pixel noise first ...
    assert output_noise(boxes_moved, ref) > output_noise(scores_moved, ref)
    # ... each part on its own scale ranks the score noise first
    assert output_noise(scores_moved, ref, head) > output_noise(boxes_moved, ref, head)


def test_only_single_tensor_yolo_heads_are_split() -> None:
    assert role_parts(Head("yolov8", 80)) == [(1, slice(0, 4)), (1, slice(4, 84))]
    assert role_parts(Head("yolov5", 80)) == [(2, slice(0, 4)), (2, slice(4, 85))]
    assert role_parts(Head("ssd", 80, ["boxes", "scores"])) is None and role_parts(None) is None
    ref = _yolov8()
    assert output_noise(ref + 1, ref, Head("ssd", 3)) == output_noise(ref + 1, ref)


def test_the_search_judges_records_and_shows_the_score_drift() -> None:
    from edgekit.fidelity.decide import KindChoice

    ref = np.zeros((12, 7, 64), dtype=np.float32)  # 12 images, 4 separated boxes each, scores 0.5-0.9
    for i in range(12):
        for j in range(4):
            ref[i, :4, j] = 40 + 80 * j, 40 + 80 * (i % 3), 30, 30
            ref[i, 4 + j % 3, j] = 0.5 + 0.1 * j
    moved = ref.copy()
    moved[:, 4:] = np.where(ref[:, 4:] > 0, ref[:, 4:] + np.float32(0.05), 0)
    choice = KindChoice("detection", "a test head", head=Head("yolov8", 3, ["output0"]))
    judged = judge(ref, moved, choice=choice)
    assert judged.recall == 1.0 and abs(judged.drift - 0.05) < 1e-4 and not judged.passed
    assert any("class scores of the kept boxes moved" in f for f in judged.failures)
    assert trial("plain", judged, 0, 0.0, 0.0).score_change == 0.05
    lines: list[str] = []
    say(lines.append, "plain", judged, 0)
    assert "score drift 0.050" in lines[0]
    assert judge(ref, ref, choice=choice).passed


def test_a_layer_group_walks_back_through_a_silu_to_the_layer_that_feeds_it() -> None:
    from types import SimpleNamespace

    from onnx import helper

    from edgekit.quantize.search import through_silu

    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1"),
             helper.make_node("Sigmoid", ["a"], ["s"], name="sig"),
             helper.make_node("Mul", ["a", "s"], ["m"], name="silu"),  # YOLO's SiLU: x * sigmoid(x)
             helper.make_node("Conv", ["m", "w2"], ["b"], name="conv2"),
             helper.make_node("Mul", ["b", "k"], ["c"], name="scale")]  # a product that is no SiLU
    producer = {o: n for n in nodes for o in n.output}
    sig, x = through_silu(nodes[2], producer, lambda n: n.op_type, lambda n: list(n.input))
    assert sig.name == "sig" and x == "a" and producer[x].name == "conv1"
    assert through_silu(nodes[4], producer, lambda n: n.op_type, lambda n: list(n.input)) is None
    assert through_silu(nodes[3], producer, lambda n: n.op_type, lambda n: list(n.input)) is None
    # TFLite's form (LOGISTIC, MUL; tensors by index), the Sigmoid's input second
    ops = [SimpleNamespace(op="LOGISTIC", inputs=[0], outputs=[1]),
           SimpleNamespace(op="MUL", inputs=[1, 0], outputs=[2])]
    tproducer = {t: o for o in ops for t in o.outputs}
    assert through_silu(ops[1], tproducer, lambda o: o.op, lambda o: o.inputs) == (ops[0], 0)
