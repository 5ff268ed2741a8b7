"""The TFLite search decides the kind of the output it judges with the model's other outputs beside it, as validation
does: MTCNN P-Net's 4-channel box map beside its 2-channel face probabilities is a regression, not a per-pixel class
map (judged as one, every P-Net candidate 'kept' 44% of its pixels and auto searched to the end, issue 29)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # TensorFlow: a two-output model converted to a float .tflite


def _two_heads(path: Path) -> Path:
    import tensorflow as tf

    rng = np.random.default_rng(0)
    w = tf.constant(rng.standard_normal((3, 3, 3, 6)).astype(np.float32) * 0.3)

    class Net(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec((1, 16, 16, 3), tf.float32)])
        def __call__(self, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            h = tf.nn.conv2d(x, w, 1, "SAME")
            # p(face), box deltas: the converter writes the box map first, as it did P-Net's
            return tf.nn.softmax(h[..., 4:], axis=-1), h[..., :4]

    net = Net()
    conv = tf.lite.TFLiteConverter.from_concrete_functions([net.__call__.get_concrete_function()], net)
    path.write_bytes(conv.convert())
    return path


def test_a_box_map_beside_a_probability_map_is_judged_as_a_regression(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    from edgekit.quantize.onnx.search import KindSource
    from edgekit.quantize.tflite.heads import detection
    from edgekit.quantize.tflite.recipes import TfliteJob
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.tflite.model import read_tflite

    path = _two_heads(tmp_path / "m.tflite")
    x = np.random.default_rng(1).random((8, 16, 16, 3)).astype(np.float32)
    fm = read_tflite(path)
    job = TfliteJob(tf, Path(), "serving_default", x, 1, "int8", tmp_path, lambda _m: None,
                    kinds=KindSource(layout="NHWC"), float_tflite=path.read_bytes())
    y = run_tflite([path], x)[0]
    assert y is not None
    first = fm.tensors[fm.outputs[0]].name
    channels = y.shape[-1]
    choice, decode = detection(fm, path, y, job)
    assert decode is None
    assert channels == 4, (first, y.shape)  # the box map first: judged alone, it looked like a 4-class pixel map
    assert choice.kind == "regression", choice


def test_the_search_runs_and_judges_every_output_of_a_model_of_several(tmp_path: Path) -> None:
    """A model of several outputs and no detector (a landmark model's points, presence, handedness): the search
    judged its first output alone; now it runs every one and judges each by its kind, by name."""
    tf = pytest.importorskip("tensorflow")
    from edgekit.quantize.onnx.search import KindSource
    from edgekit.quantize.search import Judged
    from edgekit.quantize.tflite.recipes import TfliteJob
    from edgekit.quantize.tflite.search import TfliteCandidates

    path = _two_heads(tmp_path / "m.tflite")
    x = np.random.default_rng(1).random((64, 16, 16, 3)).astype(np.float32)
    lines: list[str] = []
    job = TfliteJob(tf, Path(), "serving_default", x, 1, "int8", tmp_path, lines.append,
                    kinds=KindSource(layout="NHWC"), float_tflite=path.read_bytes())
    fmt = TfliteCandidates(job, searching=True)
    judging = fmt.judging()
    assert isinstance(judging.y_ref, dict) and len(judging.y_ref) == 2
    assert isinstance(judging.choice, dict) and set(judging.choice) == set(judging.y_ref)
    assert any("judges each of the 2 outputs by its kind" in line for line in lines), lines
    built = fmt.build("plain")
    assert built is not None and isinstance(built.outputs, dict) and set(built.outputs) == set(judging.y_ref)
    from edgekit.quantize.search import judge

    judged = judge(judging.y_ref, built.outputs, "int8", choice=judging.choice, layout=judging.layout)
    assert isinstance(judged, Judged) and judged.samples == len(next(iter(judging.y_ref.values())))
