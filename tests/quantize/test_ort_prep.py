"""A bias shared by two Conv nodes, and a Reshape output named the way onnxruntime names its copy of that bias:
onnxruntime 1.32's quantizer stops ("shared mode is not supported for weight", microsoft/onnxruntime#24705, the
BiT and PoolFormer zoo rows); edgekit copies shared biases per node first (edgekit.quantize.onnx.prep)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx_models import save_checked


def shared_bias_model(path: Path, collide: str = "b0") -> Path:
    """x -> Conv(w1, b) -> Relu -> Reshape -> COLLIDE -> Reshape -> Conv(w2, b) -> y: bias `b` read by both convs.

    onnxruntime names the second conv's copy of `b` "b0" (one past the largest numeric suffix among the
    initializers named b...), which is already the first Reshape's output: the GroupNorm chain of a torch
    export (val_53 -> val_539) in small.
    """
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((4, 4, 3, 3)).astype(np.float32) * 0.3
    b = (rng.standard_normal(4) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b"], ["h1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
             helper.make_node("Reshape", ["a1", "flat"], [collide], name="flatten"),
             helper.make_node("Reshape", [collide, "back"], ["a1r"], name="unflatten"),
             helper.make_node("Conv", ["a1r", "w2", "b"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    inits = [numpy_helper.from_array(v, n) for n, v in (("w1", w1), ("w2", w2), ("b", b),
             ("flat", np.array([1, 4, 64], np.int64)), ("back", np.array([1, 4, 8, 8], np.int64)))]
    return save_checked(path, "shared_bias", nodes, inits, [1, 3, 8, 8], [1, 4, 8, 8])


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_bias_model(tmp_path_factory.mktemp("shared") / "shared.onnx")


def _images(n: int) -> np.ndarray:
    return np.random.default_rng(1).random((n, 3, 8, 8)).astype(np.float32)


def _quantize(src: Path, dst: Path) -> None:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    from edgekit.quantize.onnx.ort import Reader

    quantize_static(str(src), str(dst), Reader("x", _images(16), 1), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    from edgekit.quantize.onnx.graph import run_batches, session

    return run_batches(session(str(path)), x)[0]


def test_the_model_stops_onnxruntimes_quantizer(shared: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="shared mode is not supported for weight"):
        _quantize(shared, tmp_path / "q.onnx")


def test_each_node_gets_its_own_bias_and_the_model_quantizes(shared: Path, tmp_path: Path) -> None:
    import onnx
    from onnx import numpy_helper

    from edgekit.quantize.onnx.prep import tensor_names, unshare_biases

    model = onnx.load(str(shared))
    before = tensor_names(model)
    assert unshare_biases(model) == ["b"]
    conv1, conv2 = (n for n in model.graph.node if n.op_type == "Conv")
    assert conv1.input[2] == "b" and conv2.input[2] not in before
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    np.testing.assert_array_equal(inits[conv2.input[2]], inits["b"])
    assert unshare_biases(model) == []  # nothing shared any more
    fixed = tmp_path / "fixed.onnx"
    onnx.save(model, str(fixed))
    x = _images(8)
    np.testing.assert_array_equal(_run(fixed, x), _run(shared, x))  # the same function
    _quantize(fixed, tmp_path / "q.onnx")
    y, q = _run(fixed, x).ravel(), _run(tmp_path / "q.onnx", x).ravel()
    assert float(y @ q / np.linalg.norm(y) / np.linalg.norm(q)) > 0.99


@pytest.mark.slow
def test_convert_publishes_the_int8_artifact(shared: Path, tmp_path: Path) -> None:
    from edgekit.conversion.pipeline import convert
    from edgekit.core.artifact import Manifest

    calib = tmp_path / "calib.npy"
    np.save(calib, _images(64))
    result = convert(shared, "onnx", "fp32,int8", calib=str(calib), out=tmp_path / "out")
    manifest = Manifest.from_dict(json.loads(result.manifest_path.read_text()))
    int8 = next(a for a in manifest.artifacts if a.precision == "int8")
    assert int8.status != "failed" and (tmp_path / "out" / Path(int8.path).name).is_file()
    assert int8.fidelity is not None and int8.fidelity.cosine > 0.99
    assert any("microsoft/onnxruntime#24705" in n for n in int8.extra["int8_recipe"]["notes"])
