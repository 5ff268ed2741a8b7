"""TFLite calibration by running the float model with LiteRT (edgekit.tflite.calibrate), held to the converter's
own calibrator: the same tensors ranged, the same ranges, except where the calibrator records an in-place op's
output on its input; and the models it does not cover go to the calibrator."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # the TFLite converter on tiny models: a few seconds each

SHAPE = (1, 8, 8, 4)
BRANCH_SCALE = 1e-3  # a ConvNeXt layer scale: the branch is a thousandth of the residual it is added to


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


def _convert(tf, fn: Any) -> bytes:
    return bytes(tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn).convert())


@pytest.fixture(scope="module")
def residual(tf) -> tuple[bytes, Callable[[np.ndarray], dict[str, np.ndarray]]]:
    """Two residual blocks, the first with a layer-scaled branch (ConvNeXt's): s = h + tanh(conv(h)) * scale,
    then out = conv(s) + s. The float model and a function giving each tensor's true values."""
    rng = np.random.default_rng(0)
    w1 = tf.constant(rng.standard_normal((3, 3, 4, 8)).astype(np.float32) * 0.5)
    w2 = tf.constant(rng.standard_normal((1, 1, 8, 8)).astype(np.float32) * 0.5)

    def tensors(x: Any) -> dict[str, Any]:
        h = tf.nn.relu(tf.nn.conv2d(x, w1, 1, "SAME"))
        pre = tf.nn.conv2d(h, w2, 1, "SAME")
        branch = tf.tanh(pre) * BRANCH_SCALE
        s = h + branch
        c = tf.nn.conv2d(s, w2, 1, "SAME")
        return {"input": x, "h": h, "pre": pre, "tanh": tf.tanh(pre), "branch": branch, "s": s, "c": c, "out": c + s}

    @tf.function(input_signature=[tf.TensorSpec(SHAPE, tf.float32)])
    def model(x):
        return tensors(x)["out"]

    return _convert(tf, model), lambda xs: {k: np.asarray(v) for k, v in tensors(xs[:, 0]).items()}


def _samples(n: int = 12, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, *SHAPE)).astype(np.float32)


def _dataset(xs: np.ndarray) -> Callable[[], Iterator[list[np.ndarray]]]:
    return lambda: ([x] for x in xs)


def _ranges(blob: bytes) -> dict[str, tuple[float, float]]:
    from edgekit.tflite.flatbuffer import FlatModel

    fm = FlatModel(blob)
    out = {}
    for t in fm.sg.tensors:
        q = t.quantization
        if q is not None and q.min is not None and len(q.min) == 1:
            out[t.name.decode() if isinstance(t.name, bytes) else t.name] = (float(q.min[0]), float(q.max[0]))
    return out


def _converters(blob: bytes, xs: np.ndarray) -> bytes:
    from edgekit.tflite.cache import calibrated

    return calibrated(blob, _dataset(xs), "k", None, engine="converter")


def test_each_tensor_its_true_range_where_the_calibrator_gives_a_branch_the_sums(tf, residual) -> None:
    from edgekit.tflite.calibrate import litert_calibrated

    blob, tensors = residual
    xs = _samples()
    ours = _ranges(litert_calibrated(blob, _dataset(xs)))
    theirs = _ranges(_converters(blob, xs))
    assert set(ours) == set(theirs) and len(ours) >= 6

    truth = {k: (float(v.min()), float(v.max())) for k, v in tensors(xs).items()}

    def which(r: tuple[float, float]) -> set[str]:
        span = max(abs(r[0]), abs(r[1]))
        return {k for k, (a, b) in truth.items() if abs(a - r[0]) <= 1e-4 * span and abs(b - r[1]) <= 1e-4 * span}

    named = {name: which(r) for name, r in ours.items()}
    assert all(named.values()), f"ranges that are no tensor's: {[n for n, w in named.items() if not w]}"
    assert any("branch" in w for w in named.values()), "the layer-scaled branch lost its own range"
    for name in ours:  # the same as the calibrator's, or its misrecord: the branch given the sum it is added to
        if not np.allclose(ours[name], theirs[name], rtol=1e-4, atol=1e-6):
            assert "branch" in named[name] and "s" in which(theirs[name]), name


def test_the_int8_model_keeps_the_branchs_own_step(tf, residual) -> None:
    from edgekit.runtimes.litert_io import interpreter_class
    from edgekit.tflite.cache import calibrated, full_integer

    blob, _ = residual
    xs = _samples()
    q = full_integer(tf, calibrated(blob, _dataset(xs), "k", None), tf.int8)
    it = interpreter_class()(model_content=q)
    it.allocate_tensors()
    d = it.get_input_details()[0]
    assert d["dtype"] == np.int8
    it.set_tensor(d["index"], np.zeros(d["shape"], np.int8))
    it.invoke()
    # the branch keeps its own int8 step (its range over 255), not the residual sum's (about 11 over 255)
    scales = {t["name"]: t["quantization"][0] for t in it.get_tensor_details()}
    branch = [v for n, v in scales.items() if n.split(";")[-1] == "mul"]
    assert branch and branch[0] <= 2.1 * BRANCH_SCALE / 255


def test_two_inputs_fed_by_signature_key(tf, tmp_path: Path) -> None:
    from edgekit.quantize.tflite.recipes import TfliteJob, calibrated
    from edgekit.tflite.cache import calibrated as cache_calibrated
    from edgekit.tflite.cache import float_model

    class Two(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec((1, 4), tf.float32, name="a"),
                                      tf.TensorSpec((1, 4), tf.float32, name="b")])
        def __call__(self, a, b):
            return {"y": tf.nn.relu(a * 2.0 - b)}

    m = Two()
    tf.saved_model.save(m, str(tmp_path / "two"), signatures={"serving_default": m.__call__})
    rng = np.random.default_rng(3)
    feeds = {"a": rng.uniform(-1, 1, (10, 4)).astype(np.float32), "b": rng.uniform(5, 9, (10, 4)).astype(np.float32)}
    job = TfliteJob(tf, tmp_path / "two", "serving_default", feeds["a"], 1, "int8", tmp_path, lambda _m: None,
                    feeds=feeds)
    fb = float_model(tf, tmp_path / "two", "serving_default", None)
    ours = _ranges(calibrated(job, fb))
    theirs = _ranges(cache_calibrated(fb, job.representative, job.data_key(), None, engine="converter"))
    assert set(ours) == set(theirs)
    for name in ours:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-5, atol=1e-6, err_msg=name)
    by_range = sorted(ours.values())
    assert (pytest.approx(feeds["a"].min()), pytest.approx(feeds["a"].max())) in by_range
    assert (pytest.approx(feeds["b"].min()), pytest.approx(feeds["b"].max())) in by_range


def test_control_flow_goes_to_the_calibrator(tf, monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.tflite import calibrate as tflite_calibrate
    from edgekit.tflite.cache import calibrated

    @tf.function(input_signature=[tf.TensorSpec((1, 4), tf.float32)])
    def model(x):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)

    blob = _convert(tf, model)
    calls = []
    monkeypatch.setattr(tflite_calibrate, "_measure", lambda *a: calls.append(a))
    xs = np.random.default_rng(0).standard_normal((6, 1, 4)).astype(np.float32)
    assert tflite_calibrate.litert_calibrated(blob, _dataset(xs)) is None
    assert _ranges(calibrated(blob, _dataset(xs), "k", None)) == _ranges(_converters(blob, xs))
    assert calls == []  # LiteRT was never asked


def test_a_litert_failure_falls_back_to_the_calibrator_and_says_so(tf, residual,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.core import isolate
    from edgekit.core.errors import RuntimeFailure
    from edgekit.tflite.cache import calibrated

    def crashed(*_a: Any, **_k: Any) -> Any:
        raise RuntimeFailure("LiteRT crashed (SIGSEGV) while running the float model for calibration.")

    monkeypatch.setattr(isolate, "run_isolated", crashed)
    monkeypatch.delenv("EDGEKIT_NO_ISOLATION", raising=False)
    blob, _ = residual
    xs = _samples()
    said: list[str] = []
    got = calibrated(blob, _dataset(xs), "k", None, said.append)
    assert _ranges(got) == _ranges(_converters(blob, xs))
    assert len(said) == 1 and "SIGSEGV" in said[0] and "TensorFlow's calibrator" in said[0]


def test_nan_is_skipped_and_a_tensor_of_nan_alone_has_no_range() -> None:
    from edgekit.tflite.calibrate import _range

    assert _range(np.array([1.0, np.nan, -2.0], np.float32)) == (-2.0, 1.0)
    lo, hi = _range(np.array([np.nan, np.nan], np.float32))
    assert np.isnan(lo) and np.isnan(hi)
    lo, hi = _range(np.zeros((0,), np.float32))  # no values: the caller records nothing
    assert np.isnan(lo) and np.isnan(hi)
    assert _range(np.array([-np.inf, 2.0], np.float32)) == (-np.inf, 2.0)  # an infinity is kept, as TF keeps it


def test_an_infinite_activation_keeps_its_infinite_range(tf) -> None:
    """log(relu(x)) is -inf wherever x <= 0: the calibrator records that range (and edgekit's int8 range check
    then names the tensor: an absurd step); it is not mistaken for a tensor that had no values."""
    from edgekit.tflite.calibrate import litert_calibrated

    @tf.function(input_signature=[tf.TensorSpec((1, 8), tf.float32)])
    def model(x):
        return tf.math.log(tf.nn.relu(x)) * 0.5

    blob = _convert(tf, model)
    xs = np.random.default_rng(0).standard_normal((4, 1, 8)).astype(np.float32)
    ours, theirs = _ranges(litert_calibrated(blob, _dataset(xs))), _ranges(_converters(blob, xs))
    assert set(ours) == set(theirs)
    infinite = [n for n, (lo, _) in ours.items() if lo == -np.inf]
    # the calibrator's builtin MUL clamps to its float range: -FLT_MAX where XNNPACK keeps -inf
    assert infinite and all(theirs[n][0] <= np.finfo(np.float32).min for n in infinite)
    assert all(np.isclose(theirs[n][1], ours[n][1], rtol=1e-5) for n in ours)


def test_samples_go_to_the_child_in_chunks_with_the_same_ranges(tf, residual,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.tflite import calibrate as tflite_calibrate

    blob, _ = residual
    xs = _samples()
    whole = _ranges(tflite_calibrate.litert_calibrated(blob, _dataset(xs)))
    real, sizes = tflite_calibrate._measure, []

    def measure(probe: bytes, feeds: dict[int, np.ndarray], watched: list[int]) -> Any:
        sizes.append(len(next(iter(feeds.values()))))
        return real(probe, feeds, watched)

    monkeypatch.setattr(tflite_calibrate, "CHUNK_BYTES", 5 * xs[0].nbytes)  # memory bounded by the chunk
    monkeypatch.setattr(tflite_calibrate, "_measure", measure)
    assert _ranges(tflite_calibrate.litert_calibrated(blob, _dataset(xs))) == whole
    assert sizes == [5, 5, 2]


def test_samples_whose_shape_changes_go_to_the_calibrator(tf, residual) -> None:
    from edgekit.tflite.calibrate import litert_calibrated

    blob, _ = residual
    xs = _samples()
    mixed = [xs[0], xs[1][:, :4]]
    assert litert_calibrated(blob, lambda: ([x] for x in mixed)) is None


def test_a_fallback_is_in_the_recipes_record(tf, residual, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.core import isolate
    from edgekit.core.errors import RuntimeFailure
    from edgekit.quantize.tflite.recipes import TfliteJob, calibrated

    def crashed(*_a: Any, **_k: Any) -> Any:
        raise RuntimeFailure("LiteRT crashed (SIGABRT) while running the float model for calibration.")

    monkeypatch.setattr(isolate, "run_isolated", crashed)
    monkeypatch.delenv("EDGEKIT_NO_ISOLATION", raising=False)
    blob, _ = residual
    logged: list[str] = []
    job = TfliteJob(tf, tmp_path, "serving_default", _samples()[:, 0], 1, "int8", tmp_path, logged.append)
    # the recipes' calibration cuts a range only a tanh reads where it saturates (ranges.cut_saturated_inputs)
    from edgekit.quantize.tflite.ranges import cut_saturated_inputs

    assert _ranges(calibrated(job, blob)) == _ranges(cut_saturated_inputs(_converters(blob, _samples()))[0])
    fallback = [n for n in job.notes if "SIGABRT" in n]
    assert len(fallback) == 1 and "TensorFlow's calibrator" in fallback[0]
    assert logged == job.notes


def test_an_lstm_goes_to_the_calibrator(tf) -> None:
    """Keras 3's LSTM reaches TFLite as a WHILE loop (several subgraphs), a fused LSTM where the converter fuses
    one (the calibrator adds its intermediate tensors and ranges them in its own kernel): neither is repeated
    here."""
    import keras

    from edgekit.tflite.calibrate import litert_calibrated, ranged_tensors
    from edgekit.tflite.flatbuffer import FlatModel

    model = keras.Sequential([keras.Input((5, 3), batch_size=1), keras.layers.LSTM(4)])
    blob = bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    fm = FlatModel(blob)
    ops = {fm.name(k) for k in range(len(fm.sg.operators))}
    assert "WHILE" in ops or "UNIDIRECTIONAL_SEQUENCE_LSTM" in ops
    assert ranged_tensors(fm) is None
    xs = np.random.default_rng(0).standard_normal((3, 1, 5, 3)).astype(np.float32)
    assert litert_calibrated(blob, _dataset(xs)) is None
