"""Issue 16, fast part: messages that name the real cause, layout read from an ONNX graph, scratch files, log lines.

No conversion runs here: ONNX graphs are built with onnx.helper, .tflite files with the flatbuffer
builder of tests/edgetpu (milliseconds each), and LiteRT's own messages are the ones it printed here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from edgekit.cli import main
from edgekit.core.border import vendor_cause
from edgekit.core.errors import UsageError
from edgekit.core.scratch import absolute, scratch_cwd
from edgekit.core.vendorlog import is_vendor_log, strip_vendor_log
from edgekit.runtimes import litert_errors
from edgekit.sources.onnx_layout import check_layout, graph_layout, input_layout
from edgekit.steps.onnx_to_savedmodel import _hint

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "edgetpu"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtimes"))

# What LiteRT (ai-edge-litert 2.3) raised here, verbatim
XNNPACK_TEXT = ("unsupported scale value (0.000000) in channel 0 for INT8 tensor 0 in XNNPACK delegateunsupported "
                "datatype (INT8) of tensor 0 in XNNPACK delegatefailed to create XNNPACK Value for tensor 0Node "
                "number 1 (TfLiteXNNPackDelegate) failed to prepare.")
CUSTOM_TEXT = ("Encountered unresolved custom op: Landmarks2TransformMatrix.\nSee instructions: "
               "https://www.tensorflow.org/lite/guide/ops_custom Node number 1 (Landmarks2TransformMatrix) failed "
               "to prepare.")
# What tf_keras raised inside onnx2tf for a tf2onnx NHWC model read as NCHW (issue 16's second report)
KERAS_WRAPPED = (
    'Exception encountered when calling layer "tf.nn.convolution" (type TFOpLambda).\n\n'
    "Depth of input (160) is not a multiple of input depth of filter (3) for '{{node tf.nn.convolution/convolution}}"
    " = Conv2D[T=DT_FLOAT, data_format=\"NHWC\", dilations=[1, 1, 1, 1]](Placeholder, filter)' with input shapes: "
    "[1,4,161,160], [3,3,3,8].\n\nCall arguments received by layer \"tf.nn.convolution\" (type TFOpLambda):\n"
    "  \u2022 input=tf.Tensor(shape=(1, 4, 161, 160), dtype=float32)\n"
)


def _conv_graph(shape: list[int], nhwc_transpose: bool, channels: int = 3):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [8, channels, 3, 3], np.zeros(8 * channels * 9).tolist())
    nodes, conv_in = [], "x"
    if nhwc_transpose:
        nodes.append(helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]))
        conv_in = "xt"
    nodes.append(helper.make_node("Conv", [conv_in, "w"], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    return onnx.helper.make_model(graph)


def test_the_layout_of_an_onnx_input_is_read_from_its_graph() -> None:
    # tf2onnx's pattern: an NHWC input transposed to NCHW before the first Conv
    assert graph_layout(_conv_graph([1, 160, 160, 3], True), "x", [1, 160, 160, 3]) == "NHWC"
    # no transpose, but the first Conv's weight has 16 input channels: the last axis holds them
    assert graph_layout(_conv_graph([1, 32, 32, 16], False, 16), "x", [1, 32, 32, 16]) == "NHWC"
    assert graph_layout(_conv_graph([1, 16, 32, 32], False, 16), "x", [1, 16, 32, 32]) == "NCHW"
    # 16 channels is no "image channel count": the shape rule alone would have said NCHW for both
    model = _conv_graph([1, 16, 16, 16], False, 16)
    assert graph_layout(model, "x", [1, 16, 16, 16]) is None
    assert input_layout(model, "x", [1, 16, 16, 16]) == "NCHW"
    assert input_layout(model, "x", [1, 16, 16, 16], "nhwc") == "NHWC"  # --layout wins


def test_a_mistyped_layout_is_bad_input() -> None:
    assert check_layout(None) is None and check_layout("nchw") == "NCHW"
    with pytest.raises(UsageError, match="NCHW .* or NHWC"):
        check_layout("CHW")


def test_a_tensorflow_error_wrapped_by_keras_is_named_by_its_own_line() -> None:
    cause = vendor_cause(ValueError(KERAS_WRAPPED))
    assert cause == ("Depth of input (160) is not a multiple of input depth of filter (3) with input shapes: "
                     "[1,4,161,160], [3,3,3,8].")


def test_the_onnx2tf_hint_follows_the_cause_not_the_step() -> None:
    hint = _hint(ValueError(KERAS_WRAPPED), "NCHW")
    assert "--layout NHWC" in hint and "EDGEKIT_DEBUG" not in hint
    assert "replace it" in _hint(SystemExit(1), "NCHW")  # an unsupported op: onnx2tf exits
    assert "--layout" not in _hint(ValueError("Dimensions must be equal"), "NCHW")


def test_litert_causes_get_their_own_hints() -> None:
    assert "custom-op resolver" in litert_errors.hint_for(CUSTOM_TEXT)
    assert "XNNPACK" in litert_errors.hint_for(XNNPACK_TEXT)
    assert litert_errors.hint_for("Model provided has model identifier 'ABCD', should be 'TFL3'") == \
        litert_errors.HINT_MALFORMED
    for text in (CUSTOM_TEXT, XNNPACK_TEXT, "something else"):
        assert "re-run" not in litert_errors.hint_for(text) and "convert`" not in litert_errors.hint_for(text)


def test_an_xnnpack_refusal_names_the_tensor_and_the_op(tmp_path: Path) -> None:
    bad_tflite = pytest.importorskip("bad_tflite")
    path = bad_tflite.xnnpack_refuses_builtin_aborts(tmp_path / "abort.tflite")
    msg = litert_errors.explain(path, XNNPACK_TEXT)
    assert msg == ("XNNPACK refused the model (failed to prepare): unsupported scale value (0.000000) in channel 0 "
                   "for INT8 tensor 0 'input', input of op 0 ADD")


@pytest.fixture(scope="module")
def tflites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("ai_edge_litert")
    import bad_tflite
    from tflite_builder import conv_chain

    d = tmp_path_factory.mktemp("tflites")
    return {"custom": conv_chain(d / "landmarks.tflite", middle="Landmarks2TransformMatrix"),
            "abort": bad_tflite.xnnpack_refuses_builtin_aborts(d / "abort.tflite"),
            "int8": conv_chain(d / "int8.tflite")}


def test_profile_names_a_custom_op_and_does_not_blame_the_file(tflites: dict[str, Path],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # issue 16: "Encountered unresolved custom op ... hint: Check that the file is a complete .tflite (re-run convert)"
    assert main(["profile", str(tflites["custom"]), "--runs", "2", "--warmup", "1"]) == 6
    err = capsys.readouterr().err
    assert "custom op(s) Landmarks2TransformMatrix, which LiteRT does not ship" in err
    assert "custom-op resolver" in err and "complete .tflite" not in err and "re-run" not in err


def test_profile_of_a_model_xnnpack_refuses_and_the_builtin_kernels_abort_says_both(
        tflites: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # issue 8/16: the ResNet-18 int8 case was reported as "crashed ... Check that the file is a complete .tflite"
    assert main(["profile", str(tflites["abort"]), "--runs", "2", "--warmup", "1"]) == 6
    err = " ".join(capsys.readouterr().err.split())
    assert "crashed (SIGABRT)" in err
    assert "XNNPACK refused the model (failed to prepare): unsupported scale value" in err
    assert "input of op 0 ADD" in err and "complete .tflite" not in err


def test_inspect_lists_custom_ops_with_what_runs_them(tflites: dict[str, Path],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tflites["custom"])]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "custom ops: Landmarks2TransformMatrix." in out and "custom-op resolver" in out


def test_a_tflite_source_is_read_with_its_precision(tflites: dict[str, Path]) -> None:
    from edgekit.sources.detect import detect
    from edgekit.sources.tflite import precision_of
    from edgekit.tflite.model import read_tflite

    assert detect(tflites["int8"]) == "tflite"
    assert precision_of(read_tflite(tflites["int8"])) == "int8"


def test_a_tflite_with_custom_ops_is_refused_as_a_source_naming_them(tflites: dict[str, Path]) -> None:
    from edgekit.core.errors import UnsupportedModel
    from edgekit.sources.base import LoadOptions
    from edgekit.sources.tflite import load

    with pytest.raises(UnsupportedModel, match="custom op.*Landmarks2TransformMatrix") as info:
        load(tflites["custom"], LoadOptions())
    assert "re-run" not in (info.value.hint or "")


def test_a_tflite_source_goes_only_where_it_can_be_taken_as_it_is() -> None:
    from edgekit.conversion.plan import target_steps
    from edgekit.targets import get_target

    assert target_steps("tflite", get_target("edgetpu")) == ([], ["tflite_adopt"])
    with pytest.raises(UsageError, match="cannot be converted to onnx"):
        target_steps("tflite", get_target("onnx"))
    assert target_steps("onnx", get_target("onnx")) == ([], ["onnx_quantize"])  # unchanged for other sources


def test_scratch_files_of_a_vendor_call_stay_out_of_the_working_folder(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    target = absolute("result.txt")
    with scratch_cwd() as scratch:
        Path("sym_shape_infer_temp.onnx").write_bytes(b"x" * 10)  # what onnxruntime does, by a relative name
        Path(target).write_text("kept")
    assert not scratch.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.txt"]
    assert os.getcwd() == str(tmp_path)


@pytest.mark.parametrize("line", [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795437397.848824    7359 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will "
    "not be used.",
    "E0000 00:00:1795438232.174488   22469 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error",
    "INFO: Created TensorFlow Lite XNNPACK delegate for CPU.",
    "WARNING:tensorflow:Compiled the loaded model, but the compiled metrics have yet to be built.",
    "2026-11-23 12:00:00.123456: I tensorflow/core/util/port.cc:113] oneDNN custom operations are on.",
])
def test_vendor_log_lines_are_recognised(line: str) -> None:
    assert is_vendor_log(line)


def test_edgekit_lines_and_real_errors_are_not_vendor_log() -> None:
    for line in ("> [1/2] onnx_to_savedmodel ...", "error: m.h5 could not be read", "hint: pass --layout NHWC",
                 "F0000 00:00:1795438232.174488   22469 check.cc:1] Check failed: x"):
        assert not is_vendor_log(line)
    assert strip_vendor_log("a\nINFO: Created TensorFlow Lite XNNPACK delegate for CPU.\nb") == "a\nb"


def test_the_onnx2tf_failure_is_told_by_tensorflows_line_not_onnx2tfs_advice() -> None:
    # issue 16: "ONNX -> TensorFlow conversion failed ...: \x1b[31mERROR:\x1b[0m Also, for models that include
    # NonMaxSuppression in the post-processing, try the -onwdt option." for a tf2onnx NHWC model read as NCHW
    from edgekit.steps.onnx_to_savedmodel import _unsupported_op

    log = ("\x1b[32mINFO:\x1b[0m onnx_op_type: Conv onnx_op_name: functional_1/conv2d_1/convolution\n"
           "\x1b[31mERROR:\x1b[0m Also, for models that include NonMaxSuppression in the post-processing, try the "
           "-onwdt option.\n")
    msg = _unsupported_op(log, ValueError(KERAS_WRAPPED))
    assert msg == ("at ONNX node functional_1/conv2d_1/convolution (Conv): Depth of input (160) is not a multiple "
                   "of input depth of filter (3) with input shapes: [1,4,161,160], [3,3,3,8].")


def test_onnx_quantizer_scratch_file_does_not_land_in_the_working_folder(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 16: a failed int8 conversion left a 10.9 MB sym_shape_infer_temp.onnx in the user's folder
    shape_inference = pytest.importorskip("onnxruntime.quantization.shape_inference")
    from edgekit.steps.onnx_quantize import _pre_process

    calls: list[bool] = []

    def quant_pre_process(src: str, dst: str, skip_symbolic_shape: bool = False) -> None:
        calls.append(skip_symbolic_shape)
        if not skip_symbolic_shape:  # what onnxruntime does when symbolic inference is incomplete
            Path("sym_shape_infer_temp.onnx").write_bytes(b"\0" * 1024)
            raise Exception("Incomplete symbolic shape inference")
        Path(dst).write_bytes(Path(src).read_bytes())

    monkeypatch.setattr(shape_inference, "quant_pre_process", quant_pre_process)
    work = tmp_path / "user-folder"
    work.mkdir()
    monkeypatch.chdir(work)
    (tmp_path / "m.onnx").write_bytes(b"model")
    _pre_process(Path("../m.onnx"), Path("../m.pre.onnx"), lambda _m: None)  # relative paths still resolve
    assert calls == [False, True]
    assert list(work.iterdir()) == [] and (tmp_path / "m.pre.onnx").read_bytes() == b"model"
