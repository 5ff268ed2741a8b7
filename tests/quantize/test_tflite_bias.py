"""TFLite bias correction (edgekit.quantize.tflite.bias): the predicted int8 weight grid is the converter's, the
float model changes by the shift and nothing else, and the int8 model's mean error shrinks."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tf_models import SHAPE, images  # noqa: E402

slow = pytest.mark.slow  # TensorFlow: a SavedModel built and converted in the test
STEP = 1 / 127  # the int8 step of a weight channel whose largest |w| is 1


def bias_shift(path: Path, seed: int = 0) -> Path:
    """x -> depthwise 5x5 (x2 channels, bias) -> tanh -> conv 3x3 stride 2 (bias) -> tanh -> mean -> dense (no bias)
    -> tanh -> dense (bias), SAME padding (the stride-2 conv's on one side only). Each depthwise channel has one
    weight of about |1| and 24 of 0.45 of its int8 step, all of one sign: int8 rounds them all to 0, a shift of
    about -10.8 steps times the input's mean (about 0.5, less at the borders) that every sample shares (the bias
    problem: few weights per channel, a non-zero-mean input)."""
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    dw = np.empty((5, 5, 3, 2), np.float32)  # HW, in, multiplier
    for c in range(3):
        for m in range(2):
            sign = 1.0 if (c + m) % 2 == 0 else -1.0
            dw[:, :, c, m] = sign * 0.45 * STEP
            dw[2, 2, c, m] = sign * rng.uniform(0.9, 1.0)
    w = {"dw": dw, "b0": (rng.standard_normal(6) * 0.1).astype(np.float32),
         "w1": (rng.standard_normal((3, 3, 6, 8)) * 0.3).astype(np.float32),
         "b1": (rng.standard_normal(8) * 0.1).astype(np.float32),
         "wn": (rng.standard_normal((8, 12)) * 0.5).astype(np.float32),
         "wh": (rng.standard_normal((12, 10)) * 0.5).astype(np.float32),
         "bh": (rng.standard_normal(10) * 0.1).astype(np.float32)}
    t = {k: tf.constant(v) for k, v in w.items()}

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec(SHAPE, tf.float32, name="x")])
        def __call__(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
            h = tf.tanh(tf.nn.depthwise_conv2d(x, t["dw"], [1, 1, 1, 1], "SAME") + t["b0"])
            h = tf.reduce_mean(tf.tanh(tf.nn.conv2d(h, t["w1"], 2, "SAME") + t["b1"]), axis=[1, 2])
            return {"y": tf.matmul(tf.tanh(tf.matmul(h, t["wn"])), t["wh"]) + t["bh"]}

    m = Model()
    tf.saved_model.save(m, str(path), signatures={"serving_default": m.__call__})
    return path


def test_auto_tries_the_onnx_order_of_the_recipes_tflite_has() -> None:
    from edgekit.quantize.onnx.search import AUTO_ORDER as ONNX_ORDER
    from edgekit.quantize.tflite.recipes import AUTO_ORDER, TFLITE_RECIPES

    assert {"bias", "equalize+bias"} <= set(AUTO_ORDER)
    assert tuple(r for r in ONNX_ORDER if r in TFLITE_RECIPES) == AUTO_ORDER


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")  # as test_tflite.py: tiny float-compatible models


@pytest.fixture(scope="module")
def xs() -> np.ndarray:
    return images(64)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, tf, xs: np.ndarray):
    """The job (a cache shared by every test), its float model, and plain's calibrated and int8 models."""
    from edgekit.quantize.tflite.recipes import TfliteJob, calibrated, float_model, quantized

    root = tmp_path_factory.mktemp("bias")
    saved = bias_shift(root / "saved")

    def job(name: str):
        (root / name).mkdir()
        return TfliteJob(tf, saved, "serving_default", xs, 1, "int8", root / name, lambda _m: None,
                         cache=root / "cache")

    j = job("w")
    return job, float_model(j), quantized(j, calibrated(j))


def _layers(blob: bytes) -> list[tuple[str, object]]:
    from edgekit.quantize.tflite.bias import LAYERS
    from edgekit.tflite.flatbuffer import FlatModel

    f = FlatModel(blob)
    return [(f.name(k), op) for k, op in enumerate(f.sg.operators) if f.name(k) in LAYERS]


def _int8_weights(blob: bytes) -> list[tuple[str, np.ndarray, np.ndarray, int]]:
    """Each layer op's int8 weights in the quantized model: (op, int8 values, scales, quantized axis)."""
    from edgekit.tflite.flatbuffer import FlatModel

    f = FlatModel(blob)
    out = []
    for kind, op in _layers(blob):
        t = f.sg.tensors[int(op.inputs[1])]
        q = np.frombuffer(bytes(np.asarray(f.model.buffers[t.buffer].data, np.uint8)), np.int8).reshape(t.shape)
        out.append((kind, q, np.asarray(t.quantization.scale), int(t.quantization.quantizedDimension)))
    return out


@slow
def test_the_predicted_weight_grid_is_the_converters(made) -> None:
    from edgekit.quantize.tflite.bias import WEIGHT_AXIS, int8_weights
    from edgekit.tflite.flatbuffer import FlatModel

    _, fb, qb = made
    f = FlatModel(fb)
    floats = [f.const(int(op.inputs[1])) for _, op in _layers(fb)]
    ints = _int8_weights(qb)
    assert [k for k, *_ in ints] == ["DEPTHWISE_CONV_2D", "CONV_2D", "FULLY_CONNECTED", "FULLY_CONNECTED"]
    for w, (kind, q, scale, axis) in zip(floats, ints, strict=True):
        assert axis == WEIGHT_AXIS[kind] and scale.size == w.shape[axis], kind  # per channel, dense layers too
        q_predicted, s_predicted = int8_weights(w, axis)
        np.testing.assert_allclose(scale, s_predicted.ravel(), rtol=1e-7, err_msg=kind)
        np.testing.assert_array_equal(q, q_predicted, err_msg=kind)
    q0, dw = ints[0][1], floats[0]  # the designed problem: every small depthwise weight became 0
    assert (q0[0, 2, 2] != 0).all() and (q0[0, 0] == 0).all() and np.abs(dw[0, 0]).min() > 0


def _run_all(blob: bytes, xs: np.ndarray, tensors: list[int]) -> list[np.ndarray]:
    """TENSORS of the float model BLOB on each sample of XS, stacked."""
    from edgekit.runtimes.litert_io import interpreter_class

    cls = interpreter_class()
    plain = sys.modules[cls.__module__].OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = cls(model_content=blob, experimental_op_resolver_type=plain, experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    d = it.get_input_details()[0]
    out: list[list[np.ndarray]] = [[] for _ in tensors]
    for x in xs:
        it.set_tensor(d["index"], x[None])
        it.invoke()
        for i, t in enumerate(tensors):
            out[i].append(it.get_tensor(t).astype(np.float64))
    return [np.concatenate(o) for o in out]


@slow
def test_correction_moves_only_the_biases_by_the_shift_the_int8_weights_make(made, xs: np.ndarray) -> None:
    from edgekit.quantize.tflite.bias import correct_biases
    from edgekit.tflite.flatbuffer import FlatModel

    job, fb, qb = made
    cb, done = correct_biases(fb, job("c").representative())
    assert len(done.corrected) == 3 and len(done.no_bias) == 1 and done.other_skipped == 0  # the dense with no bias
    assert "3 layers" in done.words() and "1 without a bias tensor skipped" in done.words()
    f0, f1 = FlatModel(fb), FlatModel(cb)
    layers0, layers1 = _layers(fb), _layers(cb)
    biases = {int(op.inputs[2]) for _, op in layers1 if op.inputs[2] >= 0}
    for k in range(len(f0.sg.tensors)):  # every constant but the biases as it was
        if f0.const(k) is not None and k not in biases:
            np.testing.assert_array_equal(f0.const(k), f1.const(k))
    corrected = [j for j, (_, op) in enumerate(layers0) if op.inputs[2] >= 0]
    assert len(corrected) == 3
    for j, shift in zip(corrected, done.shifts, strict=True):
        b0, b1 = f0.const(int(layers0[j][1].inputs[2])), f1.const(int(layers1[j][1].inputs[2]))
        np.testing.assert_allclose(b1 - b0, -np.array(shift), atol=1e-6)
    # the first layer reads the model's input: its output moves by exactly -shift, on every sample and position
    first = int(layers0[0][1].outputs[0])
    (a,), (b,) = _run_all(fb, xs, [first]), _run_all(cb, xs, [first])
    np.testing.assert_allclose(b - a, np.broadcast_to(-np.array(done.shifts[0]), a.shape), atol=1e-5)
    # each corrected layer's shift measured without edgekit's formula: the converter's own int8 weights put in
    # their place in the float model, the mean change of the layer's output over the samples and positions (exact:
    # zero padding and the stride are in the per-tap means; a channel's mean alone is 18% off here)
    ints = _int8_weights(qb)
    for j, shift in zip(corrected, done.shifts, strict=True):
        (kind, op), (_, q, scale, axis) = layers0[j], ints[j]
        shape = [1] * q.ndim
        shape[axis] = -1
        swapped = FlatModel(fb)
        swapped.set_weight(int(op.inputs[1]), q.astype(np.float32) * scale.reshape(shape))
        out = int(op.outputs[0])
        (y0,), (y1,) = _run_all(fb, xs, [out]), _run_all(swapped.to_bytes(), xs, [out])
        measured = (y1 - y0).reshape(-1, len(shift)).mean(axis=0)
        np.testing.assert_allclose(shift, measured, atol=1e-3 * np.abs(measured).max() + 1e-7, err_msg=kind)
        if j == 0:  # the designed shift: 24 x 0.45 steps x the input's mean (about 0.5), of one sign a channel
            assert np.abs(measured).min() > 24 * 0.45 * STEP * 0.3


def _mean_error(y0: np.ndarray, y: np.ndarray) -> float:
    """The int8 model's error averaged over the samples (what bias correction removes), over the outputs."""
    return float(np.abs((y.astype(np.float64) - y0).mean(axis=0)).mean())


@slow
def test_bias_recipes_shrink_the_int8_mean_error_and_are_recorded(made, tmp_path: Path) -> None:
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.quantize.tflite.search import quantize_tflite

    job, fb, _ = made
    held = images(64, seed=7)
    paths = [tmp_path / "float.tflite"]
    paths[0].write_bytes(fb)
    choices = {}
    for name in ("plain", "bias", "equalize+bias"):
        blob, choices[name] = quantize_tflite(job(f"r-{name}"), name, float_free=True)
        paths.append(tmp_path / f"{name}.tflite")
        paths[-1].write_bytes(blob)
    y0, *ys = run_tflite(paths, held)
    err = dict(zip(choices, (_mean_error(y0, y) for y in ys), strict=True))
    assert err["bias"] < 0.5 * err["plain"], err
    assert err["equalize+bias"] < 0.5 * err["plain"], err
    for name, choice in choices.items():  # the manifest's extra.int8_recipe
        d = choice.to_dict()["config"]
        assert d["recipe"] == name and d["bias_correct"] == (name != "plain")
        assert d["equalize"] == (name == "equalize+bias")
        if name != "plain":
            assert len(d["bias_corrected_layers"]) == 3 and len(d["bias_skipped_layers"]) == 1
            assert any(n.startswith("bias correction: 3 layers") for n in choice.notes)


@slow
def test_a_bias_whose_buffer_another_tensor_holds_gets_a_copy_of_its_own(made) -> None:
    """The converter may share one constant's buffer between tensors (identical zero biases): correcting it in place
    would move the other tensor too."""
    from edgekit.quantize.tflite.bias import correct_biases
    from edgekit.tflite.flatbuffer import FlatModel

    job, fb, _ = made
    f = FlatModel(fb)
    t = int(_layers(fb)[0][1].inputs[2])
    bias = f.const(t)
    twin = f.add_const("twin", bias)
    f.sg.tensors[twin].buffer = f.sg.tensors[t].buffer
    shared = f.to_bytes()
    cb, done = correct_biases(shared, job("s").representative())
    _, alone = correct_biases(fb, job("a").representative())
    g = FlatModel(cb)
    t1 = int(_layers(cb)[0][1].inputs[2])
    assert t1 != t and done.corrected == alone.corrected
    np.testing.assert_array_equal(g.const(twin), bias)  # the other tensor keeps its values
    np.testing.assert_allclose(g.const(t1), bias - np.array(done.shifts[0]), atol=1e-6)
    np.testing.assert_allclose(np.array(done.shifts[0]), np.array(alone.shifts[0]), rtol=1e-6)
