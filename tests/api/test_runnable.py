"""An artifact loaded and called on numpy arrays: names, quantized I/O, layouts, static batches, wrong input.

The tiny CNN's files (no manifest: the files' own names and layout) and the bundled model's conversion
(a manifest: the source's names and NCHW layout for an NHWC TFLite file); both are session fixtures the
runtime and pipeline tests build anyway.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import edgekit
from edgekit.api.result import Conversion
from edgekit.core.errors import UsageError
from edgekit.testing import tiny_cnn


def _model(tiny_models: dict[str, Any], key: str) -> Path:
    if key not in tiny_models["models"]:
        pytest.skip(f"{key} not built here: {tiny_models['skipped']}")
    return Path(tiny_models["models"][key])


def test_a_float_onnx_file_by_its_own_names_any_batch(tiny_models: dict[str, Any]) -> None:
    x = tiny_cnn.sample_inputs(9)
    with edgekit.load(_model(tiny_models, "onnx")) as m:
        assert [t.name for t in m.inputs] == ["input"] and [t.name for t in m.outputs] == ["logits"]
        assert m.inputs[0].shape == (-1, 1, 28, 28) and not m.inputs[0].quantized
        want = tiny_cnn.forward(x)
        np.testing.assert_allclose(m(x)["logits"], want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(m(input=x.astype(np.float64))["logits"], want, rtol=1e-4, atol=1e-4)
        assert "LoadedModel tiny.onnx on onnxruntime/cpu" in repr(m)


def test_an_int8_tflite_takes_floats_and_gives_floats(tiny_models: dict[str, Any]) -> None:
    x = tiny_cnn.sample_inputs(7)
    with edgekit.load(_model(tiny_models, "tflite-int8")) as m:
        (t,) = m.inputs
        assert t.quantized and t.dtype == "int8" and t.shape[1:] == (28, 28, 1)  # no manifest: the file's own NHWC
        out = m(x.transpose(0, 2, 3, 1))
        (y,) = out.values()
        assert y.dtype == np.float32 and y.shape == (7, 10)
        assert (y.argmax(1) == tiny_cnn.forward(x).argmax(1)).mean() >= 6 / 7
        raw = np.zeros((1, 28, 28, 1), np.int8)  # the raw integer dtype is taken as it is
        assert next(iter(m(raw).values())).shape == (1, 10)
        bad = x[:1].transpose(0, 2, 3, 1).copy()
        bad[0, 0, 0, 0] = np.nan  # no quantized value: refused, not cast to whatever int NaN becomes
        with pytest.raises(UsageError, match="NaN or infinite"):
            m(bad)
        with pytest.raises(UsageError, match="takes float .quantized to int8. or int8, got uint8"):
            m(np.zeros((1, 28, 28, 1), np.uint8))


@pytest.mark.parametrize(("args", "kwargs", "message"), [
    ((np.zeros((2, 1, 28)),), {}, r"takes shape \[-1, 1, 28, 28\]"),
    ((np.zeros((2, 3, 28, 28)),), {}, r"got \[2, 3, 28, 28\]"),
    ((), {}, "Missing input"),
    ((), {"image": np.zeros((1, 1, 28, 28))}, "no input 'image'"),
    ((np.zeros((1, 1, 28, 28)), np.zeros(1)), {}, "2 inputs given; the model takes 1"),
    ((np.zeros((1, 1, 28, 28)),), {"input": np.zeros((1, 1, 28, 28))}, "given twice"),
    ((np.zeros((0, 1, 28, 28)),), {}, "no sample"),
    ((np.zeros((1, 1, 28, 28), np.int64),), {}, "takes float32, got int64"),  # no silent cast but float's
])
def test_wrong_inputs_are_usage_errors(tiny_models: dict[str, Any], args: tuple, kwargs: dict, message: str) -> None:
    with edgekit.load(_model(tiny_models, "onnx")) as m, pytest.raises(UsageError, match=message):
        m(*args, **kwargs)


def test_a_closed_model_says_so(tiny_models: dict[str, Any]) -> None:
    m = edgekit.load(_model(tiny_models, "onnx"))
    m.close()
    with pytest.raises(UsageError, match="was closed"):
        m(tiny_cnn.sample_inputs(1))
    with pytest.raises(UsageError, match="layout"):
        edgekit.load(_model(tiny_models, "onnx"), layout="nchw")  # type: ignore[arg-type]


def test_with_its_manifest_an_artifact_answers_to_the_sources_names_and_layout(bundled_conversion) -> None:
    """The int8 TFLite of a PyTorch source: NCHW in, the source's names, as its fp32 ONNX twin is called."""
    from edgekit.data.calibration import mnist_split

    run = Conversion.of(bundled_conversion)
    x = (mnist_split()[2][:16].astype(np.float32) / 255.0)[:, None]  # NCHW, as the torch model takes it
    with run["onnx", "fp32"].load() as ref, run["tflite", "int8"].load() as int8:
        src_in, (src_out,) = run.source.input.name, run.source.outputs
        assert [t.name for t in int8.inputs] == [src_in] and [t.name for t in int8.outputs] == [src_out]
        assert int8.inputs[0].shape == (1, 1, 28, 28) and int8.inputs[0].layout == "NCHW"  # the file is NHWC, batch 1
        assert int8.inputs[0].own_name != src_in  # the converter's tensor name, accepted too
        want = ref(x)[src_out].argmax(1)
        got = int8(**{src_in: x})[src_out]  # 16 samples through a batch-1 model: in chunks
        assert got.shape == (16, 10) and got.dtype == np.float32 and (got.argmax(1) == want).mean() >= 0.9
        np.testing.assert_array_equal(int8(**{int8.inputs[0].own_name: x})[src_out], got)
    with run["tflite", "int8"].load(layout="artifact") as own:
        assert own.inputs[0].shape == (1, 28, 28, 1)
        np.testing.assert_array_equal(own(x.transpose(0, 2, 3, 1))[src_out], got)
    with edgekit.load(run["tflite", "int8"].file) as by_path:  # the manifest beside the file is read
        assert [t.name for t in by_path.inputs] == [src_in]
