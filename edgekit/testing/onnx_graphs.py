"""Small ONNX graphs built with onnx.helper for tests: milliseconds to build and run, no converter needed."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def tiny_onnx(path: Path, external: bool = False) -> Path:
    """A one-convolution ONNX model (1x1x8x8 in, 1x4x8x8 out) at PATH; EXTERNAL: weights in PATH.data beside it."""
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


__all__ = ["tiny_onnx"]
