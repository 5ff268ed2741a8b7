"""The Edge TPU fixes of issue 29 on small float graphs: each rewrite is exact (the fixed float model gives the
original's outputs) and raises the ops the pre-flight predicts on the TPU once the model is int8.

- a channel shuffle as torchvision's ShuffleNetV2 reaches TFLite (NHWC -> NCHW transpose, reshape to 5-D, transpose,
  reshape back);
- a transformer's qkv split through 5-D (PP-OCRv4's recognizer);
- ConvNeXt-V2's global response norm (SQRT of a sum of squares, DIV by its channel mean), a channel of zeros included.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

SHUFFLE = "5-D RESHAPE/TRANSPOSE/SLICE -> SLICE or CONV_2D 1x1 selection, RESHAPE, TRANSPOSE in 4-D"


def _float_tflite(fn, shape: list[int]) -> bytes:
    concrete = tf.function(fn).get_concrete_function(tf.TensorSpec(shape, tf.float32))
    return bytes(tf.lite.TFLiteConverter.from_concrete_functions([concrete], None).convert())


def _run(blob: bytes, x: np.ndarray) -> np.ndarray:
    interp = tf.lite.Interpreter(model_content=blob)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"])


def _on_tpu(blob: bytes, xs: np.ndarray, path: Path) -> tuple[int, int]:
    """(ops predicted on the TPU, ops) of BLOB quantized to int8 on XS."""
    from edgekit.edgetpu.preflight import preflight
    from edgekit.tflite.cache import calibrated, full_integer

    cal = calibrated(blob, lambda: ([x[None]] for x in xs), "test", None)
    path.write_bytes(full_integer(tf, cal, tf.int8))
    report = preflight(path)
    return report.ops_on_tpu, report.ops_total


def _check(fn, shape: list[int], fix: str, tmp_path: Path, xs: np.ndarray) -> tuple[tuple[int, int], tuple[int, int]]:
    from edgekit.edgetpu.fixes import apply_fixes

    blob = _float_tflite(fn, shape)
    fixed, report = apply_fixes(blob)
    assert report.applied.get(fix), report.words()
    for x in xs[:4]:
        np.testing.assert_allclose(_run(fixed, x[None]), _run(blob, x[None]), rtol=1e-5, atol=1e-6)
    return _on_tpu(blob, xs, tmp_path / "before.tflite"), _on_tpu(fixed, xs, tmp_path / "after.tflite")


def test_channel_shuffle_becomes_a_selection_conv_and_maps(tmp_path: Path) -> None:
    w = np.random.default_rng(0).normal(size=(1, 1, 16, 16)).astype(np.float32)

    def shuffle(x):  # a 1x1 conv, then torchvision's channel_shuffle(x, 2) in NCHW, then back to NHWC
        y = tf.transpose(tf.nn.conv2d(x, w, 1, "VALID"), [0, 3, 1, 2])
        y = tf.reshape(tf.transpose(tf.reshape(y, [1, 2, 8, 6, 6]), [0, 2, 1, 3, 4]), [1, 16, 6, 6])
        return tf.nn.relu(tf.transpose(y, [0, 2, 3, 1]) + 1.0)

    xs = np.random.default_rng(1).normal(size=(16, 6, 6, 16)).astype(np.float32)
    (before, total), (after, total_after) = _check(shuffle, [1, 6, 6, 16], SHUFFLE, tmp_path, xs)
    assert after == total_after > before  # every op maps once the shuffle is 4-D


def test_qkv_split_through_5d_is_sliced_in_4d(tmp_path: Path) -> None:
    w = np.random.default_rng(5).normal(size=(1, 1, 6, 6)).astype(np.float32)

    def attention_inputs(x):  # (1, 1, T=10, 3*heads*d) -> q, k, v of (1, heads=4, T, d=6)
        qkv = tf.transpose(tf.reshape(x, [1, 10, 3, 4, 6]), [2, 0, 3, 1, 4])
        # each read by a 4-D op (PP-OCRv4: a BATCH_MATMUL), so the converter cannot move the 4-D reshape after it
        q, k, v = (tf.nn.conv2d(tf.reshape(qkv[i:i + 1], [1, 4, 10, 6]), w, 1, "VALID") for i in range(3))
        return q * k + v

    xs = np.random.default_rng(2).normal(size=(16, 1, 10, 72)).astype(np.float32)
    (before, _), (after, total) = _check(attention_inputs, [1, 1, 10, 72], SHUFFLE, tmp_path, xs)
    assert after == total > before


def test_grn_sqrt_and_div_become_rsqrt_and_map(tmp_path: Path) -> None:
    gamma = np.random.default_rng(3).uniform(-0.5, 0.5, (1, 1, 1, 16)).astype(np.float32)

    def grn(x):  # transformers' ConvNextV2GRN, channels last
        g = tf.sqrt(tf.reduce_sum(x * x, axis=[1, 2], keepdims=True))
        n = g / (tf.reduce_mean(g, axis=-1, keepdims=True) + 1e-6)
        return gamma * (x * n) + 0.1 + x

    xs = np.random.default_rng(4).normal(size=(16, 5, 5, 16)).astype(np.float32)
    xs[:, :, :, 3] = 0.0  # a dead channel: sqrt(0) must stay 0, not 0 * inf
    (before, _), (after, total) = _check(grn, [1, 5, 5, 16], "SQRT -> MUL(x, RSQRT(MAXIMUM(x, 1e-30)))", tmp_path,
                                         xs)
    assert after == total > before


def test_div_by_a_tensor_that_may_be_negative_is_left_alone() -> None:
    from edgekit.edgetpu.fixes import apply_fixes

    blob = _float_tflite(lambda x: x / (tf.reduce_mean(x, axis=-1, keepdims=True) + 1.0), [1, 4, 8])
    assert "DIV by a non-negative tensor -> MUL by RSQRT(b)^2" not in apply_fixes(blob)[1].applied


def test_mobilevits_unfold_and_fold_through_6d_become_4d_and_map(tmp_path: Path) -> None:
    """MobileViTv2's unfold of a map into 2 x 2 patches and its fold back, as onnx2tf writes them (NCHW, 6-D): the
    unfold becomes SPACE_TO_DEPTH and a 4-D transpose, the fold a 2 x 2 stride-2 TRANSPOSE_CONV selection (issue 41)."""
    w = np.random.default_rng(6).normal(size=(1, 1, 8, 8)).astype(np.float32)

    def unfold_fold(x):  # x: [1, 4, 4, 8] NHWC -> [1, 8, 2, 2, 2, 2] -> (B, C, P, N) -> 1x1 conv -> folded back
        y = tf.reshape(tf.transpose(x, [0, 3, 1, 2]), [1, 8, 2, 2, 2, 2])
        p = tf.reshape(tf.transpose(y, [0, 1, 3, 5, 2, 4]), [1, 8, 4, 4])
        p = tf.nn.conv2d(tf.transpose(p, [0, 2, 3, 1]), w, 1, "VALID") + 0.5  # a pointwise op on (P, N, C)
        z = tf.reshape(tf.transpose(p, [0, 3, 1, 2]), [1, 8, 2, 2, 2, 2])
        z = tf.reshape(tf.transpose(z, [0, 1, 4, 2, 5, 3]), [1, 8, 4, 4])
        return tf.nn.relu(tf.transpose(z, [0, 2, 3, 1]))

    xs = np.random.default_rng(7).normal(size=(16, 4, 4, 8)).astype(np.float32)
    (before, _), (after, total) = _check(unfold_fold, [1, 4, 4, 8], SHUFFLE, tmp_path, xs)
    assert after == total > before


def test_a_softmax_of_a_few_rows_becomes_1d_softmaxes_and_maps(tmp_path: Path) -> None:
    """MobileViTv2's softmax over the patches, one row per pixel of a patch ([1, 4, 1, N]): 1-D SOFTMAXes a row."""
    def scores(x):
        return tf.nn.softmax(tf.reshape(x, [1, 4, 1, 16]), axis=-1) * 2.0

    xs = np.random.default_rng(8).normal(size=(16, 4, 16, 1)).astype(np.float32)
    fix = "SOFTMAX of 2-16 rows -> SPLIT, 1-D SOFTMAX per row, CONCATENATION"
    (before, _), (after, total) = _check(scores, [1, 4, 16, 1], fix, tmp_path, xs)
    assert after == total > before


def test_a_softmax_of_many_rows_is_left_alone_and_the_preflight_says_why(tmp_path: Path) -> None:
    from edgekit.edgetpu.fixes import apply_fixes
    from edgekit.edgetpu.fixes_attention import MAX_ROWS

    blob = _float_tflite(lambda x: tf.nn.softmax(x, axis=-1) * 2.0, [1, 4, 8, 16])  # 32 rows
    assert not apply_fixes(blob)[1].applied
    xs = np.random.default_rng(9).normal(size=(8, 4, 8, 16)).astype(np.float32)
    _on_tpu(blob, xs, tmp_path / "many.tflite")
    from edgekit.edgetpu.preflight import preflight

    first = preflight(tmp_path / "many.tflite").first_unsupported
    assert first is not None and first.op == "SOFTMAX" and first.tried
    assert f"at most {MAX_ROWS} rows" in first.tried and "this one has 32 rows of 16" in first.tried


def test_efficientvits_column_of_ones_becomes_pad_and_add_and_maps(tmp_path: Path) -> None:
    """EfficientViT's `F.pad(v, (0, 1), value=1.0)` (a PADV2, not in Coral's table) as PAD with zeros and ADD."""
    w = np.random.default_rng(10).normal(size=(1, 1, 9, 4)).astype(np.float32)

    def ones_column(x):
        v = tf.pad(tf.nn.relu(x), [[0, 0], [0, 0], [0, 0], [0, 1]], constant_values=1.0)
        return tf.nn.conv2d(v, w, 1, "VALID")

    xs = np.random.default_rng(11).normal(size=(16, 4, 4, 8)).astype(np.float32)
    fix = "PADV2 with a finite value on one axis -> PAD, ADD"
    (before, _), (after, total) = _check(ones_column, [1, 4, 4, 8], fix, tmp_path, xs)
    assert after == total > before


def test_a_mean_over_a_whole_sample_with_49_channels_is_taken_over_a_view_and_maps(tmp_path: Path) -> None:
    """MobileViTv2's GroupNorm(1) over [C, P, N] with N = 49 (the last axis; Coral's Mean reduces along z only with a
    multiple of 4 channels): the same values seen as [1, 1, E / c, c], c a multiple of 4."""
    def group_norm(x):
        centred = x - tf.reduce_mean(x, axis=[1, 2, 3], keepdims=True)
        var = tf.reduce_mean(centred * centred, axis=[1, 2, 3], keepdims=True)
        return centred * tf.math.rsqrt(var + 1e-5)

    xs = np.random.default_rng(12).normal(size=(16, 8, 4, 49)).astype(np.float32)
    fix = "MEAN over a whole sample -> MEAN of a [1, 1, E/c, c] view, c a multiple of 4"
    (before, _), (after, total) = _check(group_norm, [1, 8, 4, 49], fix, tmp_path, xs)
    assert after == total > before


def test_a_padv2_with_minus_infinity_is_not_added_as_a_value() -> None:
    """A padded max (-FLT_MAX, as onnx2tf pads a MaxPool) must not become PAD + ADD(-FLT_MAX): the ADD's int8 range
    would hold the infinity the PADV2 fixes exist to keep out."""
    from edgekit.edgetpu.fixes import apply_fixes

    def padded_max(x):
        v = tf.pad(x, [[0, 0], [0, 0], [0, 0], [0, 1]], constant_values=-3.4028235e38)
        return tf.reduce_max(v, axis=-1, keepdims=True)

    blob = _float_tflite(padded_max, [1, 4, 4, 8])
    assert "PADV2 with a finite value on one axis -> PAD, ADD" not in apply_fixes(blob)[1].applied
