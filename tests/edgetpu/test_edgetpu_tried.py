"""The pre-flight says, at the op where mapping stops, what edgekit's graph fixes try for such an op and why this one
is left (issue 41): an attention's product of two computed tensors, a product with a constant operand, an op a fix
always rewrites (the model was made without the fixes). Small int8 flatbuffers, no TensorFlow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tflite_builder import Graph

from edgekit.edgetpu.preflight import preflight


def _matmul(path: Path, constant: bool) -> Path:
    """x -> RELU -> BATCH_MATMUL(relu, relu or a constant) -> y, int8."""
    g = Graph()
    x, r, y = g.tensor("x", [1, 4, 8]), g.tensor("q", [1, 4, 8]), g.tensor("y", [1, 4, 4])
    k = g.tensor("w", [1, 8, 4], data=np.ones((1, 8, 4))) if constant else g.tensor("k", [1, 8, 4])
    g.op("RELU", [x], [r])
    if not constant:
        g.op("RESHAPE", [r], [k])
    g.op("BATCH_MATMUL", [r, k], [y])
    return g.write(path, [x], [y])


def test_a_product_of_two_computed_tensors_is_said_to_have_no_tpu_form(tmp_path: Path) -> None:
    pf = preflight(_matmul(tmp_path / "qk.tflite", constant=False))
    first = pf.first_unsupported
    assert first is not None and first.op == "BATCH_MATMUL" and first.tried
    assert "Both operands are computed tensors" in first.tried and first.tried in pf.summary
    assert first.to_dict()["tried"] == first.tried


def test_a_product_with_a_constant_operand_is_said_to_have_one(tmp_path: Path) -> None:
    first = preflight(_matmul(tmp_path / "fc.tflite", constant=True)).first_unsupported
    assert first is not None and first.tried and "constant operand" in first.tried
    assert "Both operands" not in first.tried


def test_an_op_the_fixes_always_rewrite_says_the_model_was_made_without_them(tmp_path: Path) -> None:
    g = Graph()
    x, y = g.tensor("x", [1, 4, 8]), g.tensor("y", [1, 4, 8])
    g.op("GELU", [x], [y])
    first = preflight(g.write(tmp_path / "gelu.tflite", [x], [y])).first_unsupported
    assert first is not None and first.tried and "made without them" in first.tried


def test_an_op_no_fix_is_made_for_says_nothing_tried(tmp_path: Path) -> None:
    g = Graph()
    x, y = g.tensor("x", [1, 4, 8]), g.tensor("y", [1, 4, 8])
    g.op("LEAKY_RELU", [x], [y])
    first = preflight(g.write(tmp_path / "leaky.tflite", [x], [y])).first_unsupported
    assert first is not None and first.op == "LEAKY_RELU" and first.tried is None
