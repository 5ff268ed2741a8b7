"""Every step, with its vendor call raising an exception with an EMPTY message, gives a clean EdgekitError.

The third-party ONNX that crashed the error path (`str(exc).splitlines()[0]` -> IndexError, a
traceback, exit 1) is the reason: each step names itself and exits as a conversion failure. A bug
in edgekit's own code called back by a vendor is an InternalError (exit 1), not "fix your model".
Vendor functions are monkeypatched, so nothing here converts for real (a SavedModel is saved once).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from edgekit.conversion.options import ConvertOptions
from edgekit.core.errors import EXIT_CONVERSION, EXIT_INTERNAL, ConversionError, EdgekitError, InternalError
from edgekit.sources.base import Source
from edgekit.steps import get_step
from edgekit.steps.base import Intermediate, StepContext, StepParams


class _Empty(RuntimeError):
    """A vendor exception with no message at all."""


def _raise_empty(*_a: Any, **_k: Any) -> None:
    raise _Empty()


def _source(shape: list[int], layout: str, model: Any = None, path: Path | None = None) -> Source:
    return Source(path=path or Path("model"), kind="test", family="test", layout=layout, input_name="x",
                  input_shape=shape, input_dtype="float32", predict=lambda x: x, model=model, output_names=["y"])


def _ctx(work: Path, source: Any, samples: np.ndarray | None = None) -> StepContext:
    work.mkdir(parents=True, exist_ok=True)
    calib = samples if samples is not None else np.zeros([4, *source.input_shape[1:]], np.float32)
    return StepContext(work=work, stem="m", source=source, options=ConvertOptions(out_dir=work / "out"),
                       calibration=lambda: calib, log=lambda _m: None)


def _run(name: str, inp: Intermediate, ctx: StepContext, precision: str = "fp32") -> EdgekitError:
    step = get_step(name)(StepParams(precision=precision))
    with pytest.raises(EdgekitError) as info:
        step.run(inp, ctx)
    return info.value


def _clean(err: EdgekitError, step: str) -> None:
    assert isinstance(err, ConversionError), err
    assert err.exit_code == EXIT_CONVERSION and err.step == step
    assert step in err.message and err.message.rstrip().endswith("_Empty"), err.message


@pytest.fixture(scope="module")
def tiny_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path_factory.mktemp("onnx") / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    return path


@pytest.fixture(scope="module")
def tiny_savedmodel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tf = pytest.importorskip("tensorflow")

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, 4, 4, 3], tf.float32, name="x")])
        def serve(self, x: Any) -> Any:
            return {"y": tf.nn.relu(x)}

    m = M()
    path = tmp_path_factory.mktemp("sm") / "m_savedmodel"
    tf.saved_model.save(m, str(path), signatures={"serving_default": m.serve.get_concrete_function()})
    return path


def test_torch_to_onnx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.onnx, "export", _raise_empty)
    model = torch.nn.Linear(3, 2).eval()
    src = _source([1, 3], "NC", model)
    err = _run("torch_to_onnx", Intermediate(kind="torch", obj=model, layout="NC"), _ctx(tmp_path, src))
    _clean(err, "torch_to_onnx")


@pytest.fixture
def quantize_int8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_onnx: Path) -> Any:
    """Run onnx_quantize int8 on the tiny model with onnxruntime's quantize_static replaced by the given one."""
    pytest.importorskip("onnxruntime")
    from onnxruntime import quantization
    from onnxruntime.quantization import shape_inference

    def run(quantize_static: Any) -> EdgekitError:
        monkeypatch.setattr(shape_inference, "quant_pre_process", lambda src, dst, **_k: shutil.copy(src, dst))
        monkeypatch.setattr(quantization, "quantize_static", quantize_static)
        local = tmp_path / "m.onnx"
        shutil.copy(tiny_onnx, local)
        src = _source([1, 3, 4, 4], "NCHW", path=local)
        return _run("onnx_quantize", Intermediate(kind="onnx", path=local, layout="NCHW"), _ctx(tmp_path, src),
                    "int8")

    return run


def test_onnx_quantize(quantize_int8: Any) -> None:
    _clean(quantize_int8(_raise_empty), "onnx_quantize")


def test_onnx_quantize_bug_in_edgekit_is_internal(quantize_int8: Any) -> None:
    """onnxruntime calls edgekit's calibration reader back; a TypeError there is edgekit's bug, exit 1."""

    def quantize_static(_src: str, _dst: str, reader: Any, **_k: Any) -> None:
        reader.samples = None  # as if edgekit had handed the reader no samples
        reader.get_next()

    err = quantize_int8(quantize_static)
    assert isinstance(err, InternalError) and err.exit_code == EXIT_INTERNAL
    assert "edgekit/quantize/onnx/calibrate.py:" in err.message and "bug in edgekit" in err.message  # the reader's home


def test_onnx_quantize_type_error_inside_onnxruntime_is_a_conversion_failure(quantize_int8: Any) -> None:
    """The ConvNeXt case: onnxruntime's quantizer itself raising TypeError is a conversion failure, exit 4."""
    namespace: dict[str, Any] = {"__name__": "onnxruntime.quantization.fake_calibrate"}
    exec(compile("def quantize_static(*a, **k):\n    return len(None)\n", "calibrate.py", "exec"), namespace)
    err = quantize_int8(namespace["quantize_static"])
    assert isinstance(err, ConversionError) and err.exit_code == EXIT_CONVERSION
    assert "internal error of that library (TypeError: object of type 'NoneType' has no len()" in err.message


@pytest.mark.parametrize("raised", [_Empty(), SystemExit(1)])
def test_onnx_to_savedmodel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_onnx: Path,
                            raised: BaseException) -> None:
    onnx2tf = pytest.importorskip("onnx2tf")

    def convert(**_k: Any) -> None:
        raise raised

    monkeypatch.setattr(onnx2tf, "convert", convert)
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")  # onnx2tf runs in this process, where the patch is
    src = _source([1, 3, 4, 4], "NCHW", path=tiny_onnx)
    err = _run("onnx_to_savedmodel", Intermediate(kind="onnx", path=tiny_onnx, layout="NCHW"), _ctx(tmp_path, src))
    assert isinstance(err, ConversionError) and err.step == "onnx_to_savedmodel", err
    if isinstance(raised, _Empty):
        _clean(err, "onnx_to_savedmodel")
    else:
        assert "onnx2tf cannot convert" in (err.hint or "")


def test_tflite_convert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_savedmodel: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    converter = SimpleNamespace(convert=_raise_empty)
    monkeypatch.setattr(tf.lite.TFLiteConverter, "from_saved_model", lambda *_a, **_k: converter)
    src = _source([1, 4, 4, 3], "NHWC", path=tiny_savedmodel)
    inp = Intermediate(kind="savedmodel", path=tiny_savedmodel, layout="NHWC", signature="serving_default")
    _clean(_run("tflite_convert", inp, _ctx(tmp_path, src)), "tflite_convert")


def test_keras_to_savedmodel(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")

    class Model:  # a model whose export fails inside "Keras" (not edgekit) with no message
        def export(self, *_a: Any, **_k: Any) -> None:
            raise _Empty()

    src = _source([1, 4, 4, 3], "NHWC", Model())
    err = _run("keras_to_savedmodel", Intermediate(kind="keras", obj=src.model, layout="NHWC"), _ctx(tmp_path, src))
    _clean(err, "keras_to_savedmodel")
    assert not (tmp_path / "m_savedmodel").exists()


def test_keras_to_onnx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tf2onnx = pytest.importorskip("tf2onnx")
    pytest.importorskip("keras")
    monkeypatch.setattr(tf2onnx.convert, "from_function", _raise_empty)
    src = _source([1, 4, 4, 3], "NHWC", model=lambda x, training=False: x)
    err = _run("keras_to_onnx", Intermediate(kind="keras", obj=src.model, layout="NHWC"), _ctx(tmp_path, src))
    _clean(err, "keras_to_onnx")


def test_savedmodel_to_onnx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_savedmodel: Path) -> None:
    tf2onnx = pytest.importorskip("tf2onnx")
    monkeypatch.setattr(tf2onnx.convert, "from_function", _raise_empty)
    src = _source([1, 4, 4, 3], "NHWC", path=tiny_savedmodel)
    inp = Intermediate(kind="savedmodel", path=tiny_savedmodel, layout="NHWC", signature="serving_default")
    _clean(_run("savedmodel_to_onnx", inp, _ctx(tmp_path, src)), "savedmodel_to_onnx")


def test_edgetpu_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.edgetpu as edgetpu
    from edgekit.edgetpu.records import PreflightReport

    mapped = PreflightReport(predicted=True, compiled=False, ops_total=1, ops_on_tpu=1, summary="all ops map")
    monkeypatch.setattr(edgetpu, "preflight", lambda *_a, **_k: mapped)
    monkeypatch.setattr(edgetpu, "compile_model", _raise_empty)
    model = tmp_path / "m.int8.tflite"
    model.write_bytes(b"TFL3")
    src = _source([1, 4, 4, 3], "NHWC", path=model)
    inp = Intermediate(kind="tflite", path=model, layout="NHWC", precision="int8")
    _clean(_run("edgetpu_compile", inp, _ctx(tmp_path, src), "int8"), "edgetpu_compile")
