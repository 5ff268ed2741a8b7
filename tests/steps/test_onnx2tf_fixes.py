"""edgekit.steps.onnx2tf_fixes: onnx2tf 1.28.8's layout choices where two candidates look alike to its checks."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from onnx2tf_models import converts_like_onnxruntime, convnext_tie, mobilevit_like  # noqa: E402

from edgekit.steps.onnx2tf_fixes import (  # noqa: E402
    as_converted_validation,
    channels_last,
    first_unused_perm,
    onnxsim_args,
    resize_at_opset_17,
)


def test_first_unused_perm_is_onnx2tfs_post_matmul_mapping() -> None:
    assert first_unused_perm((25, 8, 25, 1), (1, 8, 25, 25)) == [3, 1, 0, 2]
    assert first_unused_perm((1, 8, 25, 25), (1, 8, 25, 25)) == [0, 1, 2, 3]
    assert first_unused_perm((2, 3), (3, 4)) is None
    assert channels_last(4) == [0, 2, 3, 1] and channels_last(3) == [0, 2, 1]


def test_a_product_that_comes_out_transposed_is_judged_as_the_graph_will_use_it() -> None:
    # LeViT's attention scores (queries x keys, both 25): a candidate product laid out (keys, heads, queries, 1)
    # matches ONNX's (1, heads, queries, keys) under SOME transposition, so onnx2tf's own check passed it; the
    # converted graph transposes it by the first-unused mapping, which swaps queries and keys
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((1, 8, 25, 25)).astype(np.float32)
    candidate = np.ascontiguousarray(scores[0].transpose(2, 0, 1)[..., None])  # [k, h, q, 1]
    from onnx2tf.utils.common_functions import onnx_tf_tensor_validation

    theirs = onnx_tf_tensor_validation(output_pairs={("s", "s"): (scores, candidate)}, rtol=0.0, atol=0.0)
    assert theirs[("s", "s")][2] == 0.0  # onnx2tf's check: a perfect match (the bug)
    used = candidate.transpose(first_unused_perm(candidate.shape, scores.shape))
    assert np.abs(used - scores).max() > 1.0  # what the converted graph computes with it
    ours = as_converted_validation(output_pairs={("s", "s"): (scores, candidate)}, rtol=0.0, atol=0.0)
    assert ours[("s", "s")][1] == 0 and ours[("s", "s")][2] > 1.0
    exact = as_converted_validation(output_pairs={("s", "s"): (scores, scores.copy())}, rtol=0.0, atol=0.0)
    assert exact[("s", "s")][1] == 1 and exact[("s", "s")][2] == 0.0


def test_onnx2tfs_onnxsim_calls_skip_the_attention_fusion() -> None:
    assert onnxsim_args(["onnxsim", "a.onnx", "a.onnx"]) == ["onnxsim", "a.onnx", "a.onnx", "--skip-optimization",
                                                             "fuse_attention"]
    args = ["onnxsim", "a.onnx", "a.onnx", "--overwrite-input-shape", "x:1,3,16,16"]
    assert onnxsim_args(args)[:5] == args and onnxsim_args(onnxsim_args(args)) == onnxsim_args(args)
    assert onnxsim_args(["flatc", "-t"]) == ["flatc", "-t"] and onnxsim_args("onnxsim a b") == "onnxsim a b"


@pytest.mark.slow
def test_a_convnext_block_whose_dimensions_all_tie_converts_right(tmp_path: Path) -> None:
    # ConvNeXt-V2 atto at 160 x 160 (40 channels, 40 x 40): onnx2tf's fp32 TFLite agreed on 11% (cosine 0.60)
    x = np.random.default_rng(1).random((24, 3, 32, 32), dtype=np.float32)
    converts_like_onnxruntime(convnext_tie(tmp_path / "tie.onnx"), x, tmp_path)


@pytest.mark.slow
def test_mobilevits_unfolded_patches_and_attention_convert(tmp_path: Path) -> None:
    # MobileViT-S: no TFLite at all ("144 elements, but got shape (100,)", then "Attention OP is not yet implemented")
    x = np.random.default_rng(2).random((24, 3, 16, 16), dtype=np.float32)
    converts_like_onnxruntime(mobilevit_like(tmp_path / "mvit.onnx"), x, tmp_path)


@pytest.mark.slow
def test_onnx2tf_stops_once_its_savedmodel_is_written(tmp_path: Path) -> None:
    # its own float32 and float16 .tflite were a third of the step's time and 1.9 GiB of its peak (ConvNeXt-tiny)
    pytest.importorskip("onnx2tf")
    import tensorflow as tf

    from edgekit.steps.onnx_to_savedmodel import Onnx2TfRequest, convert_in_child

    src = convnext_tie(tmp_path / "tie.onnx")
    out = tmp_path / "sm"
    x = np.random.default_rng(1).random((4, 32, 32, 3), dtype=np.float32)
    convert_in_child(Onnx2TfRequest(src=str(src), out=str(out), batch=1, keep_nhwc=[], layout="NCHW"),
                     {"samples": x})
    assert (out / "saved_model.pb").is_file()
    assert not list(out.glob("*.tflite"))
    loaded = tf.saved_model.load(str(out)).signatures["serving_default"]
    assert list(loaded(tf.constant(x[:1])).values())[0].shape == (1, 4)
    # the converter is TensorFlow's own again afterwards
    assert tf.lite.TFLiteConverter.from_concrete_functions.__func__.__name__ == "from_concrete_functions"


def _resize(**attrs: object) -> object:
    from types import SimpleNamespace

    return SimpleNamespace(name="r", attrs=attrs)


def test_resizes_with_an_exact_tf_form_are_converted_as_at_opset_17() -> None:
    assert resize_at_opset_17(_resize(coordinate_transformation_mode="align_corners", mode="linear"))
    assert resize_at_opset_17(_resize(coordinate_transformation_mode="asymmetric", mode="linear"))
    assert resize_at_opset_17(_resize(coordinate_transformation_mode="asymmetric", mode="nearest",
                                      nearest_mode="floor"))
    # what tf.image.resize already does right, or what opset 17's branches would not do exactly, is left alone
    assert not resize_at_opset_17(_resize(coordinate_transformation_mode="half_pixel", mode="linear"))
    assert not resize_at_opset_17(_resize(mode="linear"))
    assert not resize_at_opset_17(_resize(coordinate_transformation_mode="align_corners", mode="nearest",
                                          nearest_mode="floor"))
    assert not resize_at_opset_17(_resize(coordinate_transformation_mode="asymmetric", mode="nearest"))
    assert not resize_at_opset_17(_resize(coordinate_transformation_mode="align_corners", mode="linear", antialias=1))
    assert not resize_at_opset_17(_resize(coordinate_transformation_mode="align_corners", mode="cubic"))


@pytest.mark.slow  # a PyTorch export and an ONNX -> TFLite conversion with validation: about 30 s
def test_mobilevitv2s_align_corners_resize_converts_exactly(tmp_path: Path) -> None:
    """Issue 41: MobileViTv2 resizes its odd map with align_corners=True; onnx2tf at opset 18 wrote RESIZE_BILINEAR
    with half-pixel centres (fp32 relative error 2% on the real model, 0.3% on this small one: 1.8e-7 fixed)."""
    pytest.importorskip("torch")
    from edgekit.conversion.pipeline import convert
    from edgekit.testing import mobile_blocks
    from edgekit.tflite.model import read_tflite

    mobile_blocks.export(mobile_blocks.mobilevitv2(), tmp_path / "mobilevitv2.pt2")
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(0).standard_normal((24, 3, 32, 32)).astype(np.float32))
    result = convert(tmp_path / "mobilevitv2.pt2", "tflite", "fp32", calib=str(tmp_path / "calib.npz"),
                     out=tmp_path / "out")
    assert not result.failed, [a.failure for a in result.failed]
    art = result.artifacts[0]
    resizes = [op.options for op in read_tflite(tmp_path / "out" / Path(art.path).name).ops
               if op.op == "RESIZE_BILINEAR"]
    assert len(resizes) == 2 and all(o["alignCorners"] and not o["halfPixelCenters"] for o in resizes), resizes
    assert art.fidelity is not None and art.fidelity.passed
    assert art.fidelity.relative_error is not None and art.fidelity.relative_error < 1e-5, art.fidelity
