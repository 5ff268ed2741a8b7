"""A real `edgekit serve` process on 127.0.0.1 (a free port), started once per module that asks for it.

`ServerProcess` (edgekit.testing.server, shared with bench/serve.py) starts the CLI exactly as a user
would and reads the port from its "serving ... on" line. The served
models come from the suite's one conversion of the bundled MNIST CNN (tests/conftest.py), so
these tests are slow by that fixture, and cost little beyond it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.testing.server import ServerProcess


def failing_onnx(path: Path) -> Path:
    """An ONNX model that declares a dynamic batch but reshapes to batch 1: any batch > 1 fails inside ORT."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1, 4])
    graph = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"])], "fails", [x], [y], [shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture
def broken_onnx(tmp_path: Path) -> Path:
    """failing_onnx in this test's folder: a real inference failure (a 500) the server cannot tell from a bug."""
    return failing_onnx(tmp_path / "broken.onnx")


@pytest.fixture(scope="module")
def served(bundled_conversion, tmp_path_factory: pytest.TempPathFactory):
    """One server for the module: the conversion folder (-> int8 TFLite), its fp32 ONNX, a model that fails."""
    folder = bundled_conversion.manifest_path.parent
    tmp = tmp_path_factory.mktemp("serve")
    labels = tmp / "labels.txt"
    labels.write_text("\n".join(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]))
    broken = failing_onnx(tmp / "broken.onnx")
    server = ServerProcess([str(folder), str(folder / "mnist_cnn.fp32.onnx"), str(broken), "--labels", str(labels),
                            "--max-body-mb", "1", "--max-image-mpix", "1", "--max-queue", "2", "--workers", "1",
                            "--max-batch", "4", "--batch-timeout-ms", "20"],
                           tmp / "server.log")
    server.folder = folder  # type: ignore[attr-defined]
    yield server
    code = server.stop()
    assert code == 0, server.text()
