"""Float ops last (edgekit.edgetpu.order): the same function, with every int8 op before the first float one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.edgetpu import preflight
from tests.edgetpu.tflite_builder import Graph

pytest.importorskip("tensorflow")  # FlatModel edits through TensorFlow's schema


def _two_heads(path: Path) -> Path:
    """A detector-like tail: level 1's head dequantized and decoded in float BEFORE level 2's int8 head runs."""
    g = Graph()
    x = g.tensor("input", [1, 4, 4, 8], scale=0.05)
    a = g.tensor("head1", [1, 4, 4, 8], scale=0.1)
    g.op("ADD", [x, x], [a])
    fa = g.tensor("head1_float", [1, 4, 4, 8], "float32", scale=None)
    g.op("DEQUANTIZE", [a], [fa])
    y1 = g.tensor("scores", [1, 4, 4, 8], "float32", scale=None)
    g.op("LOGISTIC", [fa], [y1])
    b = g.tensor("head2", [1, 4, 4, 8], scale=0.2)
    g.op("ADD", [a, a], [b])
    y2 = g.tensor("boxes", [1, 4, 4, 8], "float32", scale=None)
    g.op("DEQUANTIZE", [b], [y2])
    return g.write(path, [x], [y1, y2])


def _run(path: Path, x: np.ndarray) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def test_float_ops_move_after_every_int8_op_and_the_outputs_stay_the_same(tmp_path: Path) -> None:
    from edgekit.edgetpu.order import float_ops_last

    src = _two_heads(tmp_path / "two.tflite")
    before = preflight(src)
    assert before.first_unsupported.index == 1 and before.ops_on_tpu == 1  # mapping stops at level 1's DEQUANTIZE
    blob, moved = float_ops_last(src.read_bytes())
    assert moved == 3
    out = tmp_path / "ordered.tflite"
    out.write_bytes(blob)
    after = preflight(out)
    assert [e.op for e in after.ops] == ["ADD", "ADD", "DEQUANTIZE", "LOGISTIC", "DEQUANTIZE"]
    assert after.ops_on_tpu == 2 and after.first_unsupported.index == 2  # both int8 ops on the TPU now
    x = np.random.default_rng(0).integers(-20, 20, (1, 4, 4, 8)).astype(np.int8)
    for want, got in zip(_run(src, x), _run(out, x), strict=True):
        np.testing.assert_array_equal(want, got)
    assert float_ops_last(blob) == (blob, 0)  # already in order: unchanged
