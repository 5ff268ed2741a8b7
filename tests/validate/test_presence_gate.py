"""Landmarks are judged where the model's presence score says they are there (issue 37).

MediaPipe's pipelines drop a hand or face crop whose presence is under 0.5, so its landmarks are never used. Judged on
every crop, a hand model's int8 missed on the crops without a hand (6.1 px there, 0.65% of the side on the 79 of 90
held-out crops that held one). A face mesh has one score, its presence; a hand has two (presence, handedness), so
which one is presence is said with `--output-kind NAME=presence`.
"""

from __future__ import annotations

import numpy as np
import pytest

from edgekit.core.artifact import Fidelity
from edgekit.core.errors import UsageError
from edgekit.fidelity.decide import decide_kinds
from edgekit.fidelity.kinds import check_kind, parse_asked
from edgekit.validation.artifact import Reference, compare

RNG = np.random.default_rng(11)


def _face(n: int) -> dict[str, np.ndarray]:
    centre = RNG.uniform(70, 120, (n, 1, 2))
    xy = np.clip(centre + RNG.normal(0, 30, (n, 468, 2)), 0, 191)
    pts = np.concatenate([xy, RNG.normal(-8, 4, (n, 468, 1))], axis=-1)
    logit = np.where(np.arange(n) % 4 == 0, -6.0, 5.0)[:, None, None, None]  # a quarter hold no face
    return {"conv2d_21": pts.reshape(n, 1, 1, 1404).astype(np.float32), "conv2d_31": logit.astype(np.float32)}


def _hand(n: int) -> dict[str, np.ndarray]:
    xy = np.clip(RNG.uniform(60, 160, (n, 1, 2)) + RNG.normal(0, 35, (n, 21, 2)), 0, 223)
    pts = np.concatenate([xy, RNG.normal(-10, 5, (n, 21, 1))], axis=-1)
    return {"Identity": pts.reshape(n, 63).astype(np.float32),
            "Identity_1": np.where(np.arange(n) % 4 == 0, 0.01, 0.98)[:, None].astype(np.float32),
            "Identity_2": RNG.uniform(0, 1, (n, 1)).astype(np.float32)}


def test_a_face_meshs_one_score_is_its_presence_and_a_hands_two_are_not_guessed() -> None:
    face = decide_kinds(_face(8), "NHWC", input_size=(192, 192))
    assert face["conv2d_31"].gates and "read as its presence" in face["conv2d_31"].reason
    hand = decide_kinds(_hand(8), "NHWC", input_size=(224, 224))
    assert not any(c.gates for c in hand.values())
    asked = decide_kinds(_hand(8), "NHWC", {"Identity_1": "score:presence"}, input_size=(224, 224))
    assert asked["Identity_1"].gates and asked["Identity_1"].kind == "score" and not asked["Identity_2"].gates
    assert check_kind("presence") == "score:presence" and parse_asked("presence") == ("score", "presence")
    with pytest.raises(UsageError, match="takes only ':presence'"):
        parse_asked("score:visibility")


def _reference(outputs: dict[str, np.ndarray], side: int, asked: dict[str, str] | None = None) -> Reference:
    first = next(iter(outputs.values()))  # the images' size says the landmarks are pixels of a SIDE x SIDE crop
    return Reference(x=np.zeros((len(first), side, side, 3), np.float32), y_ref=first, labels=None, layout="NHWC",
                     inputs_name="held-out", outputs=outputs, kinds=dict(asked or {}))


def _moved(outputs: dict[str, np.ndarray], name: str, absent: np.ndarray, far: float) -> dict[str, np.ndarray]:
    """OUTPUTS with NAME's points moved 0.3 px on every sample, and FAR px more where ABSENT."""
    out = {k: v.copy() for k, v in outputs.items()}
    p = out[name].reshape(len(absent), -1, 3)
    p[..., 0] += 0.3 + far * absent[:, None]
    out[name] = p.reshape(outputs[name].shape)
    return out


def test_landmarks_are_judged_where_the_source_says_they_are_present() -> None:
    outs = _hand(16)
    absent = outs["Identity_1"][:, 0] < 0.5
    art = _moved(outs, "Identity", absent, 40.0)  # int8 points wander only where there is no hand
    ungated = compare(_reference(outs, 224), art, "int8")
    lm = next(o.fidelity for o in ungated.outputs if o.name == "Identity")
    assert not lm.passed  # judged on every crop: the empty crops' 40 px decide
    gated = compare(_reference(outs, 224, {"Identity_1": "score:presence"}), art, "int8")
    lm = next(o.fidelity for o in gated.outputs if o.name == "Identity")
    assert lm.passed and lm.samples == 12 and lm.landmark_error_px == pytest.approx(0.3, rel=1e-3)
    assert any("judged on the 12 of 16 samples where the source's presence 'Identity_1' is at least 0.5" in note
               for note in lm.notes)


def _landmarks(top: Fidelity) -> Fidelity:
    return next(o.fidelity for o in top.outputs if o.name == "conv2d_21" and o.fidelity is not None)


def test_a_face_mesh_is_gated_by_its_presence_logit_and_judged_whole_where_none_is_present() -> None:
    outs = _face(8)
    absent = outs["conv2d_31"].reshape(-1) < 0
    lm = _landmarks(compare(_reference(outs, 192), _moved(outs, "conv2d_21", absent, 30.0), "int8"))
    assert lm.passed and lm.samples == 6
    outs["conv2d_31"][:] = -6.0  # no face anywhere: judged on all, and said so
    lm = _landmarks(compare(_reference(outs, 192), _moved(outs, "conv2d_21", absent, 30.0), "int8"))
    assert not lm.passed and lm.samples == 8 and any("under 0.5 on every sample" in n for n in lm.notes)
