"""One float conversion and one calibration per run serve every TFLite artifact (edgekit.tflite.cache).

The int8 and the Edge TPU's uint8-I/O models used to be calibrated separately by the converter's one-shot
path; they now come from one calibration, quantized twice. These tests hold that to the converter's own
output, bit for bit, on a tiny SavedModel (whose ranges LiteRT measures as the converter's calibrator does:
edgekit.tflite.calibrate; tests/tflite/test_tflite_calibrate.py covers where they differ).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # the TFLite converter on a tiny SavedModel: a few seconds

sys.path.insert(0, str(Path(__file__).parents[1] / "quantize"))
from tf_models import build, images  # noqa: E402


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory, tf) -> Path:
    return build(tmp_path_factory.mktemp("tf") / "plain", "plain")


@pytest.fixture(scope="module")
def xs() -> np.ndarray:
    return images(40)


def _converter_int8(tf, saved: Path, calib: np.ndarray, io) -> bytes:
    """The TFLite converter's one-shot full-integer path, as edgekit used it before the split."""
    conv = tf.lite.TFLiteConverter.from_saved_model(str(saved), signature_keys=["serving_default"])
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([calib[i:i + 1]] for i in range(len(calib)))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = conv.inference_output_type = io
    return bytes(conv.convert())


def _raw_outputs(blob: bytes, x: np.ndarray) -> np.ndarray:
    """The model's raw (quantized) outputs on X, its inputs quantized with its own scale."""
    from edgekit.runtimes.litert_io import interpreter_class

    interp = interpreter_class()(model_content=blob)
    interp.allocate_tensors()
    i, o = interp.get_input_details()[0], interp.get_output_details()[0]
    scale, zero = i["quantization"]
    info = np.iinfo(i["dtype"])
    outs = []
    for k in range(len(x)):
        q = np.clip(np.round(x[k:k + 1] / scale + zero), info.min, info.max)
        interp.set_tensor(i["index"], q.astype(i["dtype"]))
        interp.invoke()
        outs.append(interp.get_tensor(o["index"]).copy())
    return np.concatenate(outs)


def test_int8_and_uint8_io_from_one_calibration_equal_the_converters_own(tf, saved: Path, xs: np.ndarray,
                                                                         tmp_path: Path) -> None:
    from edgekit.tflite.cache import calibrated, float_model, full_integer, samples_digest

    calib, held = xs[:30], xs[30:]
    folder = tmp_path / "cache"
    fb = float_model(tf, saved, "serving_default", folder)
    cal = calibrated(fb, lambda: ([calib[i:i + 1]] for i in range(len(calib))), samples_digest([calib], 1), folder)
    for io in (tf.int8, tf.uint8):
        ours, theirs = full_integer(tf, cal, io), _converter_int8(tf, saved, calib, io)
        assert _raw_outputs(ours, held).dtype == np.dtype(io.as_numpy_dtype)
        np.testing.assert_array_equal(_raw_outputs(ours, held), _raw_outputs(theirs, held))


def test_a_run_converts_and_calibrates_once_for_int8_and_uint8_io(tf, saved: Path, xs: np.ndarray, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorflow.lite.python.optimize import calibrator

    from edgekit.quantize.tflite.recipes import TfliteJob, float_model, plain
    from edgekit.tflite import calibrate as tflite_calibrate

    counts = {"calibrate": 0, "convert": 0}
    real_calibrate, real_converter = calibrator.Calibrator.calibrate, tf.lite.TFLiteConverter.from_saved_model
    real_measure = tflite_calibrate.litert_calibrated

    def calibrate(self, gen):  # the converter's calibrator, where LiteRT's measurement hands the model over
        counts["calibrate"] += 1
        return real_calibrate(self, gen)

    def measure(*args, **kwargs):
        got = real_measure(*args, **kwargs)
        counts["calibrate"] += got is not None
        return got

    def converter(*args, **kwargs):
        counts["convert"] += 1
        return real_converter(*args, **kwargs)

    monkeypatch.setattr(calibrator.Calibrator, "calibrate", calibrate)
    monkeypatch.setattr(tflite_calibrate, "litert_calibrated", measure)
    monkeypatch.setattr(tf.lite.TFLiteConverter, "from_saved_model", converter)
    cache = tmp_path / "cache"

    def job(io: str, samples: np.ndarray = xs) -> TfliteJob:
        (tmp_path / io).mkdir(exist_ok=True)
        return TfliteJob(tf, saved, "serving_default", samples, 1, io, tmp_path / io, lambda _m: None, cache=cache)

    float_model(job("int8"))  # the fp32 artifact
    models = {io: plain(job(io)) for io in ("int8", "uint8")}
    assert counts == {"calibrate": 1, "convert": 1}
    assert _raw_outputs(models["int8"], xs[:4]).dtype == np.int8
    assert _raw_outputs(models["uint8"], xs[:4]).dtype == np.uint8
    plain(job("int8", xs[:20]))  # other calibration samples: calibrated again, never mistaken for the first
    assert counts == {"calibrate": 2, "convert": 1}
