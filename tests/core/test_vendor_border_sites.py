"""The last vendor calls put behind edgekit.core.border: ONNX inspection, the TFLite reader, profile's timed
loop and the Edge TPU compiler's timeout message.

Each one is fed a vendor exception with an empty message (the case that once crashed the error path
itself) and must give a clean edgekit error; a programming error raised in edgekit's own code must
come out as InternalError (a bug), never as the user's bad input.
"""

from __future__ import annotations

import functools
import stat
from pathlib import Path
from typing import Any

import pytest

from edgekit.cli import main
from edgekit.core.errors import (
    EXIT_RUNTIME,
    EXIT_USAGE,
    ConversionError,
    InternalError,
    RuntimeFailure,
    UnsupportedModel,
)


def _vendor_fails(exc: BaseException) -> Any:
    """A stand-in for a vendor function that raises EXC (raised here, outside edgekit: the vendor's failure)."""

    def fail(*_a: Any, **_k: Any) -> Any:
        raise exc

    return fail


@pytest.fixture()
def tiny_onnx(tmp_path: Path) -> Path:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "tiny.onnx"
    onnx.save(model, str(path))
    return path


# --- edgekit/inspect/onnx.py -----------------------------------------------------------------------
def test_inspect_onnx_parse_failure_with_an_empty_message(tiny_onnx: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    import onnx

    from edgekit.inspect.onnx import describe

    monkeypatch.setattr(onnx, "load", _vendor_fails(RuntimeError()))
    with pytest.raises(UnsupportedModel, match=r"could not be parsed as an ONNX model: RuntimeError") as exc:
        describe(tiny_onnx)
    assert "copied completely" in (exc.value.hint or "")
    rc = main(["inspect", str(tiny_onnx)])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE and "could not be parsed as an ONNX model" in err and "Traceback" not in err


def test_inspect_onnx_garbage_is_unsupported(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from edgekit.inspect.onnx import describe

    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07" + bytes(range(200)))
    with pytest.raises(UnsupportedModel, match="could not be parsed as an ONNX model"):
        describe(bad)


def test_inspect_onnx_shape_inference_stays_best_effort(tiny_onnx: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import onnx

    from edgekit.inspect.onnx import describe

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", _vendor_fails(ValueError()))
    report = describe(tiny_onnx)  # the vendor's failure is swallowed: the graph is still described
    assert [op.op for op in report.ops] == ["Relu"]


def test_inspect_onnx_shape_inference_bug_is_a_bug(tiny_onnx: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import onnx

    from edgekit.inspect.onnx import describe

    # a builtin raising TypeError has no frame of its own: the innermost frame is edgekit's, as for a bug there
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", functools.partial(int, "1", base=10, x=1))
    with pytest.raises(InternalError, match="bug in edgekit"):
        describe(tiny_onnx)


# --- edgekit/tflite/model.py -----------------------------------------------------------------------
def test_tflite_parse_failure_with_an_empty_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ai_edge_litert")
    from ai_edge_litert.tools import flatbuffer_utils

    from edgekit.tflite.model import read_tflite

    path = tmp_path / "m.tflite"
    path.write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(64))
    monkeypatch.setattr(flatbuffer_utils, "read_model_from_bytearray", _vendor_fails(IndexError()))
    with pytest.raises(UnsupportedModel, match="could not be parsed as a TFLite model") as exc:
        read_tflite(path)
    assert "truncated or corrupt" in exc.value.message and "IndexError" in exc.value.message
    assert "copied completely" in (exc.value.hint or "")


# --- edgekit/measure/profile.py: the timed loop ------------------------------------------------------------
def _bind_failing(monkeypatch: pytest.MonkeyPatch, make_call: Any) -> None:
    from edgekit.runtimes.onnxruntime import OnnxRuntime

    monkeypatch.setattr(OnnxRuntime, "bind", lambda self, inputs: make_call())


def test_profile_vendor_error_while_timing_with_an_empty_message(tiny_onnx: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnxruntime")
    from edgekit.measure.profile import profile_artifact
    from edgekit.measure.settings import MeasureSettings

    _bind_failing(monkeypatch, lambda: _vendor_fails(RuntimeError("")))
    with pytest.raises(RuntimeFailure, match="onnxruntime failed while timing: RuntimeError"):
        profile_artifact(tiny_onnx, settings=MeasureSettings(runs=3, min_seconds=0, warmup=1))
    rc = main(["profile", str(tiny_onnx), "--runs", "3", "--min-seconds", "0", "--warmup", "1"])
    err = capsys.readouterr().err
    assert rc == EXIT_RUNTIME and "failed while timing" in err and "Traceback" not in err


def test_profile_bug_while_timing_is_a_bug(tiny_onnx: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("onnxruntime")
    from edgekit.measure.profile import profile_artifact
    from edgekit.measure.settings import MeasureSettings

    _bind_failing(monkeypatch, lambda: functools.partial(int, "1", base=10, x=1))  # TypeError in edgekit's loop
    with pytest.raises(InternalError, match="bug in edgekit"):
        profile_artifact(tiny_onnx, settings=MeasureSettings(runs=3, min_seconds=0, warmup=1))


# --- edgekit/edgetpu/compiler.py: the timeout's "last words" ----------------------------------------
@pytest.fixture()
def fake_compiler(tmp_path: Path) -> Path:
    exe = tmp_path / "edgetpu_compiler"
    exe.write_text("#!/bin/sh\necho 'Edge TPU Compiler version 16.0.384591198'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


@pytest.mark.parametrize(("said", "words"), [
    ("", None), ("  \n \n", None),
    ("Compiling ...\n\x1b[31mStill searching for a delegate\x1b[0m\n\n", "Still searching for a delegate"),
])
def test_compiler_timeout_message(tmp_path: Path, fake_compiler: Path, monkeypatch: pytest.MonkeyPatch,
                                  said: str, words: str | None) -> None:
    import edgekit.edgetpu.compiler as compiler

    model = tmp_path / "m.tflite"
    model.write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(64))
    monkeypatch.setattr(compiler, "_run", _vendor_fails(TimeoutError(said)))
    with pytest.raises(ConversionError, match="did not finish within 5 s") as exc:
        compiler.compile_model(model, tmp_path / "out", compiler=fake_compiler, timeout=5)
    message = exc.value.message
    if words is None:
        assert "last words" not in message
    else:
        assert message.endswith(f"Its last words: {words}") and "\x1b" not in message
