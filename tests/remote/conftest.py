"""The remote tests' device: a real sshd on 127.0.0.1 (tests/remote/sshd.py) and this machine's edgekit behind it.

The "device" runs the edgekit installation the tests run in (`sys.executable -m edgekit.cli`, passed as
--remote-python): a second venv would only add minutes of installing the same wheels. Its artifact cache
is a temp folder (--remote-cache), so nothing outside the test's folders is written.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.remote import sshd


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sshd.Sshd]:
    why = sshd.why_not()
    if why:
        pytest.skip(why)
    s = sshd.start(tmp_path_factory.mktemp("sshd"), aliases=("edgekit-test-device", "edgekit-test-device-2"))
    yield s
    s.stop()


@pytest.fixture()
def remote_args(server: sshd.Sshd, tmp_path: Path) -> list[str]:
    """The options that reach the test device and run its edgekit, with a cache of this test's own."""
    return ["--ssh-config", str(server.config), "--remote-python", sys.executable,
            "--remote-cache", str(tmp_path / "device-cache")]


def tiny_onnx(path: Path, external: bool = False) -> Path:
    """A one-convolution ONNX model (milliseconds to build and run); EXTERNAL: weights in PATH.data beside it."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 1, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    if external:
        onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                  location=path.name + ".data", size_threshold=0)
    else:
        onnx.save(model, str(path))
    return path
