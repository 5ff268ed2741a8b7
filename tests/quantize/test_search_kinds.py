"""The search judges non-classifier candidates as their users read them (issue 29): sequences ranked by the steps
they keep, probability maps cut where --mask-threshold says."""

from __future__ import annotations

import numpy as np


def test_sequence_candidates_are_ranked_by_the_steps_they_keep_not_by_cosine() -> None:
    from edgekit.quantize.search import best, judge

    rng = np.random.default_rng(0)
    y_ref = rng.standard_normal((40, 20, 12)).astype(np.float32)
    # a: small noise everywhere but one large swap per sample (high cosine, a few steps lost)
    a = y_ref + 0.05 * rng.standard_normal(y_ref.shape).astype(np.float32)
    b = y_ref.copy()  # b: the same argmax on every step, lower cosine (scaled noise on the losing scores)
    top = y_ref.argmax(-1)
    noise = 0.6 * np.abs(rng.standard_normal(y_ref.shape)).astype(np.float32)
    np.put_along_axis(noise, top[..., None], 0.0, axis=-1)
    b = b - noise
    flips = rng.choice(20, (40, 4))
    for i in range(40):
        for t in flips[i]:
            a[i, t] = y_ref[i, t] - 3 * (np.arange(12) == top[i, t])  # its top step no longer the largest
    ja, jb = judge(y_ref, a), judge(y_ref, b)
    assert ja.top1 is None and jb.agreement == 1.0 and ja.agreement is not None and ja.agreement < 0.95
    assert ja.cosine > jb.cosine  # what ranked them before: a would have been kept
    assert best([(ja, 0, "a"), (jb, 0, "b")]) == 1
    assert jb.score()[0] == 1.0


def test_a_probability_map_is_judged_at_the_threshold_its_user_cuts_it() -> None:
    """Text-like bands at 0.35-0.45 in the float map that the candidate pushes to 0.25-0.29: cut at 0.5 (the mask
    kind's default) both masks are empty and agree; cut at 0.3, as a text detector's user does, the text is lost."""
    from edgekit.fidelity.decide import KindChoice
    from edgekit.quantize.search import judge

    rng = np.random.default_rng(1)
    y_ref = np.full((30, 1, 32, 32), 0.02, np.float32)
    for i in range(30):
        r = int(rng.integers(2, 24))
        y_ref[i, 0, r:r + 5, 3:29] = rng.uniform(0.35, 0.45)
    y = np.where(y_ref > 0.3, y_ref - 0.12, y_ref).astype(np.float32)
    choice = KindChoice("mask", "a probability map")
    at_default, at_user = judge(y_ref, y, choice=choice), judge(y_ref, y, choice=choice, mask_threshold=0.3)
    assert at_default.passed and at_default.agreement == 1.0
    assert not at_user.passed and at_user.agreement is not None and at_user.agreement < 0.95


def test_the_threshold_asked_for_an_output_reaches_the_search_under_a_converter_s_name() -> None:
    from edgekit.quantize.onnx.search import KindSource

    assert KindSource(mask_thresholds={"maps": 0.3}).mask_threshold("maps") == 0.3
    assert KindSource(mask_thresholds={"*": 0.4}).mask_threshold("Identity:0", outputs=2) == 0.4
    assert KindSource(mask_thresholds={"maps": 0.3}).mask_threshold("StatefulPartitionedCall:0") == 0.3  # one output
    assert KindSource(mask_thresholds={"maps": 0.3}).mask_threshold("other", outputs=2) is None
    assert KindSource().mask_threshold("maps") is None


def test_an_output_named_by_mask_threshold_is_a_mask_in_the_search_as_in_validation() -> None:
    """Validation judges an output --mask-threshold names as a mask (unless --output-kind says otherwise); the
    search's KindSource read only --output-kind, so a map a little outside [0, 1] was searched as a regression."""
    from edgekit.fidelity.decide import decide_kinds
    from edgekit.quantize.onnx.search import KindSource

    y = np.random.default_rng(2).uniform(-0.05, 1.05, (4, 1, 16, 16)).astype(np.float32)
    src = KindSource(mask_thresholds={"maps": 0.3})
    assert src.asked == {"maps": "mask"}
    assert decide_kinds({"maps": y}, src.layout, src.asked)["maps"].kind == "mask"
    assert decide_kinds({"maps": y}, "NCHW", KindSource().asked)["maps"].kind != "mask"
    assert KindSource(asked={"maps": "regression"}, mask_thresholds={"maps": 0.3}).asked == {"maps": "regression"}
    assert KindSource(mask_thresholds={"*": 0.3}).asked is None


def test_a_channels_last_class_map_is_judged_along_its_channels() -> None:
    """A .tflite's (N, H, W, C) face map (MTCNN P-Net): the same per-pixel argmax, values moved alike on both channels
    by row. Read as NCHW, its 'channels' were the rows, and every candidate kept 44% of its pixels."""
    from edgekit.fidelity.decide import KindChoice
    from edgekit.quantize.search import judge

    rng = np.random.default_rng(2)
    y_ref = rng.random((16, 27, 27, 2)).astype(np.float32)
    y = y_ref + rng.random((1, 27, 1, 1)).astype(np.float32) * 3  # per row, the same on both channels
    choice = KindChoice("dense", "a per-pixel class map")
    nhwc, nchw = judge(y_ref, y, choice=choice, layout="NHWC"), judge(y_ref, y, choice=choice)
    assert nhwc.passed and nhwc.agreement == 1.0
    assert nchw.agreement is not None and nchw.agreement < 0.9
