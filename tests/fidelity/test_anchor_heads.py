"""Raw-anchor detector heads (edgekit.fidelity.anchors): MediaPipe's anchors, the decode, recognition, and judgement.

Synthetic: palms encoded into (N, 2016, 18) regressors against the palm preset's anchors, as BlazePalm writes them,
then perturbed. Plain numpy: fast.
"""

from __future__ import annotations

import numpy as np
import pytest

from edgekit.core.errors import UsageError
from edgekit.fidelity.anchors import (
    PRESETS,
    SsdAnchorOptions,
    anchors_from_file,
    options_from_file,
    preset_anchors,
    ssd_anchors,
)
from edgekit.fidelity.decide import decide_kinds
from edgekit.fidelity.detection import Detections, Head, compare_detections, decode
from edgekit.fidelity.metrics import judge_detection

RNG = np.random.default_rng(3)
SIDE = 192  # the palm detector's input


def test_presets_have_mediapipes_anchor_counts() -> None:
    assert {n: p.count for n, p in PRESETS.items()} == {"face": 896, "face-full": 2304, "palm": 2016, "pose": 2254}
    assert preset_anchors("face")[0].tolist() == [0.5 / 16, 0.5 / 16, 1.0, 1.0]  # fixed-size, first cell of 16x16
    # the example in ssd_anchors_calculator.cc: SSD MobileNet's 1917 anchors, 3 reduced boxes in the lowest layer
    o = SsdAnchorOptions(num_layers=6, min_scale=0.2, max_scale=0.95, input_size_height=300, input_size_width=300,
                         strides=(16, 32, 64, 128, 256, 512), aspect_ratios=(1.0, 2.0, 0.5, 3.0, 0.3333),
                         reduce_boxes_in_lowest_layer=True)
    a = ssd_anchors(o)
    assert a.shape == (1917, 4)
    np.testing.assert_allclose(a[1], [0.5 / 19, 0.5 / 19, 0.2 * np.sqrt(2), 0.2 / np.sqrt(2)], rtol=1e-6)
    np.testing.assert_allclose(a[-1], [0.5, 0.5, np.sqrt(0.95), np.sqrt(0.95)], rtol=1e-6)  # interpolated scale


def _encode(images: int = 8, per: int = 3) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """(regressors (N, 2016, 18), score logits (N, 2016, 1), true boxes and keypoints per image in [0, 1]): each palm
    at the anchor nearest its centre and at that cell's second anchor with a lower score, which NMS drops."""
    anchors = preset_anchors("palm")
    reg = RNG.normal(0, 2, (images, len(anchors), 18))
    logit = np.full((images, len(anchors), 1), -8.0)
    boxes, kps = [], []
    for i in range(images):
        cells = RNG.choice(9, per, replace=False)
        cx = (cells % 3) / 3 + RNG.uniform(0.12, 0.21, per)
        cy = (cells // 3) / 3 + RNG.uniform(0.12, 0.21, per)
        w, h = RNG.uniform(0.12, 0.2, per), RNG.uniform(0.12, 0.2, per)
        kp = np.stack([cx[:, None] + RNG.uniform(-0.05, 0.05, (per, 7)),
                       cy[:, None] + RNG.uniform(-0.05, 0.05, (per, 7))], -1)
        for j in range(per):
            nearest = int(np.argmin((anchors[:, 0] - cx[j]) ** 2 + (anchors[:, 1] - cy[j]) ** 2))
            for a, score in ((nearest, 4.0), (nearest + 1, 2.0)):  # two anchors per cell: the same place
                ax, ay = anchors[a, :2]
                reg[i, a, :4] = [(cx[j] - ax) * SIDE, (cy[j] - ay) * SIDE, w[j] * SIDE, h[j] * SIDE]
                reg[i, a, 4:] = ((kp[j] - [ax, ay]) * SIDE).ravel()
                logit[i, a, 0] = score
        boxes.append(np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1))
        kps.append(kp)
    return reg.astype(np.float32), logit.astype(np.float32), boxes, kps


def _palm_head() -> Head:
    reg, logit, _, _ = _encode(images=1)
    return decide_kinds({"Identity": reg, "Identity_1": logit}, "NHWC", input_size=(SIDE, SIDE))["Identity"].head


def test_regressors_decode_to_the_palms_and_keypoints_they_encode() -> None:
    reg, logit, boxes, kps = _encode()
    got = decode([reg, logit], _palm_head())
    truth = [Detections(b, np.ones(len(b)), np.zeros(len(b), np.int64), k) for b, k in zip(boxes, kps, strict=True)]
    cmp = compare_detections(truth, got, pixels=(SIDE, SIDE))
    assert [len(d) for d in got] == [3] * 8  # the second anchor of each palm went to NMS
    assert cmp.recall == cmp.precision == 1.0 and cmp.mean_iou == pytest.approx(1.0, abs=1e-5)
    assert cmp.keypoint_error == pytest.approx(0.0, abs=1e-3)


def test_a_palm_detector_is_recognised_and_judged_by_boxes_and_keypoints() -> None:
    reg, logit, _, _ = _encode()
    outs = {"Identity": reg, "Identity_1": logit}
    got = decide_kinds(outs, "NHWC", input_size=(SIDE, SIDE))
    head = got["Identity"].head
    assert got["Identity"].kind == got["Identity_1"].kind == "detection" and got["Identity_1"].head is head
    assert head.format == "anchors" and head.keypoints == 7 and head.anchors["preset"] == "palm"
    assert head.confidence == 0.5 and head.nms_iou == 0.3 and "'palm'" in got["Identity"].reason
    assert Head.from_dict(head.to_dict()) == head  # the manifest's record decodes the same way
    # keypoints moved 2 px on the 192 px input: 1.04% of the side, inside int8's 2%, outside fp32's 0.1%
    moved = reg.copy()
    moved[..., 4::2] += 2.0  # raw x is in input pixels for fixed-size anchors (x_scale = 192)
    f = judge_detection([reg, logit], [moved, logit], head, precision="int8")
    assert f.detection_recall == f.detection_precision == 1.0 and f.detections == 24 and f.passed
    assert f.keypoint_error_px == pytest.approx(2.0, rel=1e-4) and f.keypoint_error_share == pytest.approx(2 / SIDE)
    f = judge_detection([reg, logit], [moved, logit], head, precision="fp32")
    assert not f.passed and f.failures == ["keypoints of matched boxes moved 2 px on average: 1.04% of the input's "
                                           "side > 0.10%"]
    # two palms lost (their logits under the cut): 22 of 24 kept, under int8's 95%
    lost = logit.copy()
    lost[lost > 0] = np.where(np.arange(int((lost > 0).sum())) < 4, -8.0, lost[lost > 0])
    f = judge_detection([reg, logit], [reg, lost], head, precision="int8")
    assert f.detection_recall == pytest.approx(22 / 24) and not f.passed


def test_shapes_that_fit_no_preset_stay_a_regression_with_the_way_out() -> None:
    reg, logit, _, _ = _encode(images=2)
    # the palm's anchors on an input of another size are not the palm's: not guessed
    got = decide_kinds({"Identity": reg, "Identity_1": logit}, "NHWC", input_size=(128, 128))
    assert got["Identity"].kind == "regression" and "anchors:FILE" in got["Identity"].reason
    odd = {"r": RNG.normal(size=(2, 1000, 18)), "s": RNG.normal(size=(2, 1000, 1))}
    got = decide_kinds(odd, "NHWC", input_size=(SIDE, SIDE))
    assert got["r"].kind == "regression" and "keypoint regressors" in got["r"].reason  # never a "sequence"
    # BlazeFace's 896 anchors and 6 keypoints
    face = {"regressors": RNG.normal(size=(2, 896, 16)), "classificators": RNG.normal(size=(2, 896, 1))}
    got = decide_kinds(face, "NHWC", input_size=(128, 128))
    assert got["regressors"].head.anchors["preset"] == "face" and got["classificators"].kind == "detection"


def test_anchors_asked_for_by_preset_or_file(tmp_path) -> None:
    reg, logit, _, _ = _encode(images=2)
    outs = {"Identity": reg, "Identity_1": logit}
    got = decide_kinds(outs, "NHWC", {"Identity_1": "detection:anchors:palm"}, input_size=None)
    assert got["Identity_1"].head is got["Identity"].head and got["Identity"].head.outputs == ["Identity", "Identity_1"]
    assert "judged with 'Identity_1'" in got["Identity"].reason
    with pytest.raises(UsageError, match="are 896, and the output has 2016"):
        decide_kinds(outs, "NHWC", {"Identity": "detection:anchors:face"})
    # the same anchors from a .npy and a .csv file (x_center, y_center, w, h per row) decode the same boxes
    np.save(tmp_path / "palm.npy", preset_anchors("palm"))
    np.savetxt(tmp_path / "palm.csv", preset_anchors("palm"), delimiter=",")
    want = decode([reg, logit], _palm_head())
    for name in ("palm.npy", "palm.csv"):
        head = decide_kinds(outs, "NHWC", {"Identity": f"detection:anchors:{tmp_path / name}"},
                            input_size=(SIDE, SIDE))["Identity"].head
        assert head.anchors["file"].endswith(name) and len(head.anchors["sha256"]) == 64
        got_boxes = decode([reg, logit], head)
        assert all(np.allclose(a.boxes, b.boxes) for a, b in zip(want, got_boxes, strict=True))
    # SsdAnchorsCalculatorOptions pasted from the graph's .pbtxt
    (tmp_path / "palm.pbtxt").write_text("num_layers: 4\nmin_scale: 0.1484375\nmax_scale: 0.75\n"
                                         "input_size_width: 192\ninput_size_height: 192\nanchor_offset_x: 0.5\n"
                                         "anchor_offset_y: 0.5\nstrides: 8\nstrides: 16\nstrides: 16\nstrides: 16\n"
                                         "aspect_ratios: 1.0\nfixed_anchor_size: true\n")
    np.testing.assert_array_equal(ssd_anchors(options_from_file(tmp_path / "palm.pbtxt")), preset_anchors("palm"))


def test_anchor_files_are_untrusted_input(tmp_path) -> None:
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.save(tmp_path / "three.npy", np.zeros((10, 3)))
    np.save(tmp_path / "nan.npy", np.full((10, 4), np.nan))
    (tmp_path / "text.csv").write_text("0.5, 0.5, one, 1\n")
    for name, words in (("obj.npy", "could not be read"), ("three.npy", r"holds \[10, 3\]"),
                        ("nan.npy", "not anchors"), ("text.csv", "could not be read"), ("none.npy", "does not exist")):
        with pytest.raises(UsageError, match=words):
            anchors_from_file(tmp_path / name)
    (tmp_path / "typo.pbtxt").write_text("num_layer: 4\n")
    with pytest.raises(UsageError, match="did you mean 'num_layers'"):
        options_from_file(tmp_path / "typo.pbtxt")
    # a manifest's head record naming no preset it knows is no head (serve reads manifests as hostile input)
    with pytest.raises(ValueError):
        Head.from_dict({"format": "anchors", "classes": 1, "anchors": {"preset": "nope", "input_size": [1, 1],
                                                                        "scale": [1, 1, 1, 1]}})
