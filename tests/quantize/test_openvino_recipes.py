"""The OpenVINO target's int8 by NNCF (edgekit.quantize.openvino): recipes, auto's order, accuracy control's
max_drop from the int8 thresholds, what the record says; and the planner's check of --int8-recipe across targets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.core.errors import UsageError

ov = pytest.importorskip("openvino")
pytest.importorskip("nncf")


def _cnn(tmp_path: Path, attention: bool = False):
    """A small float model (conv, relu, pool, dense; optionally a softmax feeding a matmul) as an OpenVINO model."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.normal(0, 0.1, 8).astype(np.float32), "b"),
             numpy_helper.from_array(rng.normal(0, 0.3, (8, 10)).astype(np.float32), "fc")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("MatMul", ["f", "fc"], ["y0"])]
    if attention:
        inits.append(numpy_helper.from_array(rng.normal(0, 0.3, (10, 10)).astype(np.float32), "v"))
        nodes += [helper.make_node("Softmax", ["y0"], ["s"], axis=-1), helper.make_node("MatMul", ["s", "v"], ["y"])]
    else:
        nodes.append(helper.make_node("Identity", ["y0"], ["y"]))
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    path = tmp_path / ("att.onnx" if attention else "cnn.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    from edgekit.quantize.openvino import read_onnx

    return read_onnx(path)


def _job(model, n: int = 64):
    from edgekit.quantize.openvino import OvJob

    x = np.random.default_rng(1).random((n, 3, 16, 16), dtype=np.float32)
    logs: list[str] = []
    return OvJob(model=model, feeds={"x": x}, log=logs.append, notes=[]), logs


def test_attention_is_found_and_turns_on_the_transformer_model_type(tmp_path: Path) -> None:
    from edgekit.quantize.openvino import config_of, has_attention

    cnn, att = _cnn(tmp_path), _cnn(tmp_path, attention=True)
    assert not has_attention(cnn) and has_attention(att)
    job, _ = _job(att)
    config = config_of("plain", job, 100)
    assert config["model_type"] == "transformer" and config["smooth_quant"] is True
    assert config["preset"] == "performance" and config["fast_bias_correction"] is True and config["subset_size"] == 100
    job, _ = _job(cnn)
    assert config_of("bias", job, 10)["fast_bias_correction"] is False
    assert config_of("mixed-preset", job, 10)["preset"] == "mixed"


def test_auto_judges_on_held_out_samples_and_a_foreign_recipe_is_noted(tmp_path: Path) -> None:
    from edgekit.quantize.openvino import AUTO_ORDER, quantize_ir

    job, logs = _job(_cnn(tmp_path))
    model, choice = quantize_ir(job, "equalize")  # an ONNX recipe: noted, auto's order used
    assert choice.requested == "auto"
    assert any("'equalize' is not one of OpenVINO's" in n for n in choice.notes)
    assert "32 held-out calibration samples" in choice.judged_on
    tried = [t.recipe for t in choice.trials]
    assert tried == list(AUTO_ORDER[:len(tried)])  # in auto's order, stopping at the first that meets the thresholds
    assert all(not t.passed for t in choice.trials[:-1])
    if choice.met:
        assert choice.chosen == tried[-1] and choice.trials[-1].passed
    if choice.chosen != "accuracy-control":
        assert choice.config["subset_size"] == 64  # rebuilt on every calibration sample
    assert any("int8 recipe plain" in line for line in logs)
    assert "FakeQuantize" in {op.get_type_name() for op in model.get_ordered_ops()}


def test_a_named_recipe_is_built_on_every_sample_and_left_to_validation(tmp_path: Path) -> None:
    from edgekit.quantize.openvino import quantize_ir
    from edgekit.quantize.search import NOT_JUDGED

    job, _ = _job(_cnn(tmp_path), n=20)
    _, choice = quantize_ir(job, "bias")
    assert choice.chosen == "bias" and choice.met is None and choice.judged_on == NOT_JUDGED
    assert choice.config["fast_bias_correction"] is False and choice.config["subset_size"] == 20


def test_accuracy_control_keeps_the_drop_within_the_int8_threshold(tmp_path: Path) -> None:
    from edgekit.core.precisions import PRECISIONS
    from edgekit.quantize.openvino import quantize_ir

    job, _ = _job(_cnn(tmp_path))
    model, choice = quantize_ir(job, "accuracy-control")
    need = PRECISIONS["int8"].thresholds["top1_agreement"]
    assert choice.chosen == "accuracy-control" and choice.config["max_drop"] == pytest.approx(1 - need)
    assert choice.config["measure"] == "top1_agreement" and choice.config["drop_type"] == "absolute"
    assert "accuracy control keeps the model it judged" in choice.judged_on
    assert choice.config["float_layers"] == len(choice.float_nodes)


def test_the_float_model_has_every_layer_in_float(tmp_path: Path) -> None:
    from edgekit.quantize.openvino import float_layers

    assert len(float_layers(_cnn(tmp_path))) == 2  # the convolution and the dense layer


def test_int8_recipe_names_are_checked_across_the_targets_asked_for() -> None:
    from edgekit.conversion.options import ConvertOptions
    from edgekit.conversion.plan import check_request

    def request(targets: str, recipe: str) -> None:
        check_request(ConvertOptions(targets=targets.split(","), precisions=["int8"], calib="mnist",
                                     int8_recipe=recipe))

    request("openvino,onnx", "accuracy-control")  # OpenVINO's; ONNX notes it and uses auto's order
    request("openvino,tflite", "equalize")  # the TFLite target's; OpenVINO notes it
    with pytest.raises(UsageError, match="Unknown int8 recipe 'equalize'"):
        request("openvino", "equalize")  # no target asked for has it
    with pytest.raises(UsageError, match="did you mean 'accuracy-control'"):
        request("openvino", "acuracy-control")
    with pytest.raises(UsageError, match="Unknown int8 recipe 'mixed-preset'"):
        request("onnx", "mixed-preset")  # only OpenVINO has it, and it was not asked for
    with pytest.raises(UsageError, match="Target openvino has no dynamic precision"):
        check_request(ConvertOptions(targets=["openvino"], precisions=["dynamic"]))
