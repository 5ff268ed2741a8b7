"""The graph clean-up before onnx2tf (edgekit/steps/onnx_tf_prep.py), on tiny graphs with the zoo's patterns."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from onnx2tf_models import paddle_like  # noqa: E402

onnx = pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def paddle_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return paddle_like(tmp_path_factory.mktemp("paddle") / "cls.onnx")


def _pinned(path: Path):  # what edgekit's ONNX source hands onnx2tf after --input-shape 1,3,16,16
    from edgekit.sources.onnx_pin import pin

    model, _ = pin(onnx.load(str(path)), {"x": [1, 3, 16, 16]}, 13)
    return model


def test_a_negative_batch_becomes_a_free_dim_everywhere(paddle_onnx: Path) -> None:
    from edgekit.steps.onnx_tf_prep import free_negative_dims

    model = _pinned(paddle_onnx)
    values = [*model.graph.input, *model.graph.output, *model.graph.value_info]
    negative = [v.name for v in values if any(d.dim_value < 0 for d in v.type.tensor_type.shape.dim)]
    assert "x" in negative and len(negative) > 5  # shape inference carried Paddle's -1 into value_info
    changes = free_negative_dims(model)
    assert len(changes) == 1 and "negative dim" in changes[0]
    assert not any(d.dim_value < 0 for v in values for d in v.type.tensor_type.shape.dim)
    assert [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == ["batch", 3, 16, 16]
    onnx.checker.check_model(model, full_check=True)


def test_node_names_become_tf_scopes_and_tensor_names_stay(paddle_onnx: Path) -> None:
    from edgekit.steps.onnx_tf_prep import prepare, tf_safe_node_names

    model = _pinned(paddle_onnx)
    tensors = [(list(n.input), list(n.output)) for n in model.graph.node]
    changes = tf_safe_node_names(model)
    assert len(changes) == 1 and "'Conv@0' -> 'Conv_0'" in changes[0]
    assert all("@" not in n.name for n in model.graph.node)
    assert [(list(n.input), list(n.output)) for n in model.graph.node] == tensors
    assert [o.name for o in model.graph.output] == ["prob"]
    assert len(prepare(model)) == 3  # negative dims, the batch, the layer scale: the names are done
    muls = {n.output[0]: list(n.input) for n in model.graph.node if n.op_type == "Mul"}
    assert muls["scaled@out"] == ["gelu@out", "gamma"]  # the constant second (onnx2tf#698)
    assert prepare(model) == []  # a clean graph goes to onnx2tf unchanged


@pytest.mark.slow
def test_a_paddle_style_onnx_converts_to_tflite(paddle_onnx: Path, tmp_path: Path) -> None:
    # PP-OCR's orientation classifier (issue 15): "at ONNX node Add@0: Dimension -1 must be >= 0", then
    # "'Softmax@0' is not a valid scope name"; ConvNeXt's norm and BiT's computed weight at the depthwise Conv@1
    pytest.importorskip("onnx2tf")
    from edgekit.pipeline import convert

    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(1).random((24, 3, 16, 16), dtype=np.float32))
    run = convert(paddle_onnx, "tflite", "fp32", calib=str(calib), calib_size=8, val_size=16,
                  input_shape=[1, 3, 16, 16], out=tmp_path / "out")
    (art,) = run.artifacts
    assert art.status != "failed", art.failure
    assert art.fidelity is not None and art.fidelity.passed
