"""The TFLite `bias-shift` recipe (edgekit.quantize.tflite.bias_shift): each layer's bias moved by its output-mean
shift measured in the int8 model, in rounds: the shift left shrinks round by round, only biases change, and the int8
model's mean output error shrinks against plain's."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_tflite_bias import bias_shift  # noqa: E402  (the depthwise model whose int8 weights shift its mean)
from tf_models import images  # noqa: E402

pytestmark = pytest.mark.slow  # TensorFlow: a SavedModel built, converted, calibrated and quantized four times


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")


def test_the_shift_left_shrinks_only_biases_change_and_the_int8_mean_error_drops(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    from edgekit.quantize.tflite.bias_shift import channel_means, correct_shifts
    from edgekit.quantize.tflite.recipes import TfliteJob, calibrated, float_model, quantized
    from edgekit.tflite.flatbuffer import FlatModel

    xs, held = images(64), images(64, seed=7)
    saved = bias_shift(tmp_path / "saved")
    job = TfliteJob(tf, saved, "serving_default", xs, 1, "float32", tmp_path, lambda _m: None, cache=tmp_path / "c")
    fb = float_model(job)
    fixed, done = correct_shifts(job, fb, rounds=2)
    assert len(done.largest) == 3 and done.largest[-1] < done.largest[0] / 3, done.largest
    assert len(done.corrected) == 3 and "bias-shift" in done.words()  # the dense layer without a bias is skipped
    a, b = FlatModel(fb), FlatModel(fixed)
    changed = {a.tensor_name(t) for t in range(len(a.sg.tensors)) if a.const(t) is not None
               and not np.array_equal(a.const(t), b.const(t))}
    layer_biases = {a.tensor_name(int(op.inputs[2])) for op in a.sg.operators if len(op.inputs) > 2
                    and op.inputs[2] >= 0}
    assert changed and changed <= layer_biases

    out = [a.tensor_name(int(t)) for t in a.sg.outputs]
    batches = [[held[i:i + 1]] for i in range(len(held))]
    ref = channel_means(fb, out, batches)[out[0]]
    plain = channel_means(quantized(job, calibrated(job)), out, batches)[out[0]]
    shifted = channel_means(quantized(job, calibrated(job, fixed)), out, batches)[out[0]]
    assert np.abs(shifted - ref).mean() < 0.5 * np.abs(plain - ref).mean()  # on samples it never saw
