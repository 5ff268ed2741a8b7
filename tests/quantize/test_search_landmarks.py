"""The int8 recipe search judges a landmark regressor as validation does: points in input pixels, the input's size
known to the decision (so 63 coordinates are landmarks, not 63 classes), candidates ranked by less pixel error."""

from __future__ import annotations

import numpy as np

from edgekit.fidelity.decide import decide_kinds
from edgekit.quantize.search import judge


def _hand(n: int = 64, side: int = 224, seed: int = 0) -> np.ndarray:
    """N hands of 21 (x, y, z) points inside a SIDE x SIDE input, as MediaPipe's hand landmarks come out."""
    rng = np.random.default_rng(seed)
    centre = rng.uniform(0.3 * side, 0.7 * side, (n, 1, 2))
    xy = centre + rng.normal(0, 0.12 * side, (n, 21, 2))
    z = rng.normal(0, 5, (n, 21, 1))
    return np.concatenate([xy, z], axis=2).reshape(n, 63).astype(np.float32)


def test_a_candidate_is_judged_and_ranked_by_its_landmarks_pixel_error() -> None:
    y_ref = _hand()
    choice = decide_kinds({"Identity": y_ref}, "NHWC", input_size=(224, 224))["Identity"]
    assert choice.kind == "landmarks"
    assert decide_kinds({"Identity": y_ref}, "NHWC")["Identity"].kind != "landmarks"  # the size is what tells
    rng = np.random.default_rng(1)
    close = judge(y_ref, y_ref + rng.normal(0, 0.5, y_ref.shape).astype(np.float32), "int8", choice=choice,
                  layout="NHWC")
    far = judge(y_ref, y_ref + rng.normal(0, 8.0, y_ref.shape).astype(np.float32), "int8", choice=choice,
                layout="NHWC")
    assert close.passed and not far.passed  # 1% of 224 px on average is the int8 bar
    assert close.agreement is not None and far.agreement is not None and close.score() > far.score()


def test_the_progress_line_reads_the_landmarks_in_pixels() -> None:
    """The line a candidate prints says what its user reads (pixels and a share of the side), not 'agreement 98.8%'
    (one minus the share), which read like a kept fraction."""
    from edgekit.quantize.search import say

    y_ref = _hand()
    choice = decide_kinds({"Identity": y_ref}, "NHWC", input_size=(224, 224))["Identity"]
    moved = y_ref.copy()
    moved[:, 0::3] += 3.0  # every point 3 px to the right, z and y unmoved
    judged = judge(y_ref, moved, "int8", choice=choice, layout="NHWC")
    assert judged.landmark_px is not None and abs(judged.landmark_px - 3.0) < 1e-3
    lines: list[str] = []
    say(lines.append, "plain", judged, 0)
    assert "landmarks moved 3.00 px (1.34% of the side)" in lines[0] and "agreement" not in lines[0]


def _hand_model_outputs(n: int = 64) -> dict[str, np.ndarray]:
    """A hand model's points (N, 63) and its presence (N, 1), a probability: the last quarter holds no hand."""
    presence = np.where(np.arange(n) < 3 * n // 4, 0.97, 0.02).astype(np.float32)[:, None]
    return {"Identity": _hand(n), "Identity_1": presence}


def test_several_outputs_are_judged_each_by_its_kind_and_the_points_where_the_hand_is() -> None:
    """The TFLite search judged a landmark model's first output alone; now every output by its own kind, as
    validation judges them: the points only where the model's presence passes (a pipeline drops the others)."""
    y_ref = _hand_model_outputs()
    choices = decide_kinds(y_ref, "NHWC", {"Identity_1": "score:presence"}, input_size=(224, 224))
    assert choices["Identity"].kind == "landmarks" and choices["Identity_1"].kind == "score"
    rng = np.random.default_rng(2)
    absent = np.arange(64) >= 48
    y = {k: v.copy() for k, v in y_ref.items()}
    y["Identity"] += rng.normal(0, 0.5, y["Identity"].shape).astype(np.float32)
    y["Identity"][absent] += 40.0  # far off, but only where no hand is: never used
    judged = judge(y_ref, y, "int8", choice=choices, layout="NHWC")
    assert judged.passed, judged.failures
    assert judged.landmark_px is not None and judged.landmark_px < 1.0  # ranked by the points where the hand is

    flipped = {k: v.copy() for k, v in y.items()}
    flipped["Identity_1"][:8] = 0.1  # the presence of 8 hands lost: the second output fails the candidate
    lost = judge(y_ref, flipped, "int8", choice=choices, layout="NHWC")
    assert not lost.passed and any("Identity_1" in f for f in lost.failures), lost.failures
