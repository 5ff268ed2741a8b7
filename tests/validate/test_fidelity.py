"""Task-aware fidelity and output matching, on arrays: no model, no runtime (issue 15)."""

from __future__ import annotations

import numpy as np
import pytest

from edgekit.core.artifact import Artifact, Fidelity
from edgekit.core.errors import UsageError
from edgekit.fidelity.kinds import kind_of, parse_output_kinds, thresholds
from edgekit.fidelity.matching import match_outputs, normalized
from edgekit.fidelity.metrics import judge, mean_iou
from edgekit.validation.artifact import Reference, compare

RNG = np.random.default_rng(0)


def test_kind_from_shape() -> None:
    assert kind_of([1, 10]) == "classes"
    assert kind_of([-1, 3, 64, 64]) == "dense" and kind_of([1, 64, 64, 3], "NHWC") == "dense"
    assert kind_of([1, 1, 64, 64]) == "regression"  # a single-channel map
    assert kind_of([1, 40, 97]) == "sequence"
    assert kind_of([1, 4]) == "classes" and kind_of([1, 1]) == "regression" and kind_of([1, 100, 1]) == "regression"
    # classes keep the precisions table's thresholds; others have their own row
    assert thresholds("classes", "int8")["top1_agreement"] == 0.97
    assert "pixel_agreement" in thresholds("dense", "int8") and "cosine" not in thresholds("dense", "int8")


def test_output_kind_option_is_checked() -> None:
    assert parse_output_kinds(["boxes=regression", "seg=dense,steps=sequence"]) == {
        "boxes": "regression", "seg": "dense", "steps": "sequence"}
    with pytest.raises(UsageError, match="did you mean 'dense'"):
        parse_output_kinds(["seg=dens"])
    with pytest.raises(UsageError, match="name=kind"):
        parse_output_kinds(["regression"])


def test_dense_output_is_judged_per_pixel_with_miou() -> None:
    ref = RNG.standard_normal((4, 3, 8, 8)).astype(np.float32)
    masks = ref.argmax(1)
    flipped = ref.copy()
    flipped[:, :, :2, :] = -flipped[:, :, :2, :]  # the top quarter of every map gets other classes
    f = judge(ref, flipped, kind="dense", precision="int8", masks=masks)
    assert f.pixel_agreement is not None and f.pixel_agreement < 0.95 and not f.passed
    assert f.reference_miou == 1.0 and f.miou is not None and f.miou < 0.9
    assert any("per-pixel argmax agreement" in x for x in f.failures)
    noisy = ref + RNG.standard_normal(ref.shape).astype(np.float32) * 0.01
    ok = judge(ref, noisy, kind="dense", precision="int8", masks=masks)
    assert ok.passed and ok.pixel_agreement > 0.95 and ok.top1_agreement is None
    assert mean_iou(np.array([0, 1, 1]), np.array([0, 1, -1]), 2) == 1.0  # -1: ignored


def test_sequence_output_is_judged_per_step() -> None:
    ref = RNG.standard_normal((4, 20, 6)).astype(np.float32)
    bad = ref.copy()
    bad[:, :5] = bad[:, :5, ::-1]  # a quarter of the steps read other symbols
    f = judge(ref, bad, kind="sequence", precision="int8")
    assert f.step_agreement is not None and f.step_agreement < 0.9 and not f.passed
    assert "per-step argmax agreement" in f.failures[0]
    assert judge(ref, ref, kind="sequence", precision="fp32").step_agreement == 1.0


def test_regression_catches_a_wrong_scale_that_cosine_misses() -> None:
    ref = RNG.random((4, 1, 8, 8)).astype(np.float32)
    f = judge(ref, ref * 2, kind="regression", precision="fp16")
    assert f.cosine > 0.9999 and f.relative_error == pytest.approx(1.0) and not f.passed
    assert "relative error" in f.failures[0]


def test_nan_and_shape_always_fail() -> None:
    ref = RNG.random((2, 5)).astype(np.float32)
    assert not judge(ref, np.full_like(ref, np.nan), kind="classes", precision="fp32").passed
    f = judge(ref, ref[:, :4], kind="classes", precision="fp32")
    assert not f.passed and "differs" in f.failures[0]


def test_matching_by_name_signature_shape_and_values() -> None:
    src = {"scores": RNG.random((3, 2, 4, 4)), "boxes": RNG.random((3, 4, 4, 4)) + 5,
           "marks": RNG.random((3, 4, 4, 4)) - 5}
    # the TFLite converter's names and order, and onnx2tf's positional signature keys
    art = {"PartitionedCall:2": src["marks"], "PartitionedCall:0": src["scores"], "PartitionedCall:1": src["boxes"]}
    sig = {"PartitionedCall:0": "output_0", "PartitionedCall:1": "output_1", "PartitionedCall:2": "output_2"}
    got = {m.source: (m.artifact, m.by) for m in match_outputs(src, art, sig)}
    assert got == {"scores": ("PartitionedCall:0", "signature"), "boxes": ("PartitionedCall:1", "signature"),
                   "marks": ("PartitionedCall:2", "signature")}
    # names lost altogether: the lone shape by shape, the twins by their values
    got = {m.source: (m.artifact, m.by) for m in match_outputs(src, art)}
    assert got == {"scores": ("PartitionedCall:0", "shape"), "boxes": ("PartitionedCall:1", "values"),
                   "marks": ("PartitionedCall:2", "values")}
    # names kept (an ONNX artifact); a TFLite input name normalises to the source's
    assert all(m.by == "name" for m in match_outputs(src, dict(src)))
    assert normalized("serving_default_image:0") == normalized("image")
    # a positional key whose shape disagrees is not trusted; an output with no partner is reported as such
    lone = match_outputs({"a": np.zeros((1, 3))}, {"t": np.zeros((1, 2))}, {"t": "output_0"})
    assert lone[0].artifact is None


def test_compare_records_every_output_and_the_worst() -> None:
    src = {"scores": RNG.standard_normal((8, 2, 4, 4)), "boxes": RNG.random((8, 4, 4, 4)) + 1,
           "boxes2": RNG.random((8, 4, 4, 4)) * 9}
    ref = Reference(x=np.zeros((8, 3, 8, 8), np.float32), y_ref=src["scores"], labels=None, layout="NCHW",
                    inputs_name="t", outputs=src, kinds={"boxes": "regression", "boxes2": "regression"})
    # the same-shape heads swapped, under names that say which is which: compared by name, both pass
    art = {"scores": src["scores"], "boxes": src["boxes"], "boxes2": src["boxes2"]}
    f = compare(ref, dict(reversed(list(art.items()))), "fp32")
    assert f.passed and [o.name for o in f.outputs] == ["scores", "boxes", "boxes2"]
    assert [o.kind for o in f.outputs] == ["dense", "regression", "regression"]
    # one head wrong: the artifact fails, on that output, named
    bad = {**art, "boxes2": src["boxes2"] * 0.5}
    f = compare(ref, bad, "fp32")
    assert not f.passed and f.output == "boxes2" and f.failures[0].startswith("output 'boxes2':")
    # the record round-trips through the manifest
    a = Artifact(path="m.onnx", format="onnx", precision="fp32", inputs=[], outputs=[], size_bytes=1, sha256="",
                 fidelity=f)
    back = Artifact.from_dict(a.to_dict()).fidelity
    assert back is not None and back.outputs[2].fidelity is not None and back.outputs[2].fidelity.passed is False
    assert Fidelity.from_dict({"samples": 1, "top1_agreement": None, "cosine": 1.0, "max_abs_error": 0}).outputs == []
