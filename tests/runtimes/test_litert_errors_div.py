"""An int8 DIV that met a divisor at its zero point (`div.cc:262 data[i] != zero_point`): the hint names that DIV and
the ops that write its divisor, read from the file, and names a norm layer only where the divisor is one's (issue 41:
the hint said "GroupNorm, LayerNorm" for EfficientViT's attention normalizer, which has no norm).

Each premise is checked on a small flatbuffer of the structure it names (written directly, read only, never run).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "edgetpu"))
from tflite_builder import Graph  # noqa: E402

from edgekit.runtimes.litert_errors import HINT_INT8_DIV, div_hint, invoke_failure  # noqa: E402

NORMS = ("GroupNorm", "LayerNorm", "normalization")


def _text(index: int) -> str:
    return (f"LiteRT failed to run the model: tflite/kernels/div.cc:262 data[i] != zero_point was not true.Node number "
            f"{index} (DIV) failed to invoke.")


def _layer_norm(path: Path) -> Path:
    """x / sqrt(mean(x * x) + eps), as a LayerNorm over channels reaches TFLite: MUL, MEAN, ADD, SQRT, DIV (op 4)."""
    g = Graph()
    x = g.tensor("x", [1, 4, 8])
    sq, var, held, std, y = (g.tensor(n, s) for n, s in (("sq", [1, 4, 8]), ("var", [1, 4, 1]),
                                                          ("var_eps", [1, 4, 1]), ("std", [1, 4, 1]),
                                                          ("normed", [1, 4, 8])))
    axis = g.tensor("axis", [1], "int32", data=np.array([2]), scale=None)
    eps = g.tensor("eps", [1], data=np.array([1]))
    g.op("MUL", [x, x], [sq])
    g.op("MEAN", [sq, axis], [var], keepDims=True)
    g.op("ADD", [var, eps], [held])
    g.op("SQRT", [held], [std])
    g.op("DIV", [x, std], [y])
    return g.write(path, [x], [y])


def _attention_normalizer(path: Path) -> Path:
    """EfficientViT's ReLU linear attention: out[..., :-1] / (out[..., -1:] + eps), out a BATCH_MATMUL of ReLUs:
    RELU, BATCH_MATMUL, SLICE, SLICE, ADD, DIV (op 5)."""
    g = Graph()
    x = g.tensor("x", [1, 4, 9])
    r, out, num, den, held, y = (g.tensor(n, s) for n, s in (("q_relu", [1, 4, 9]), ("qkv", [1, 4, 9]),
                                                             ("num", [1, 4, 8]), ("den", [1, 4, 1]),
                                                             ("den_eps", [1, 4, 1]), ("attn_out", [1, 4, 8])))
    begin0 = g.tensor("b0", [3], "int32", data=np.array([0, 0, 0]), scale=None)
    size0 = g.tensor("s0", [3], "int32", data=np.array([1, 4, 8]), scale=None)
    begin1 = g.tensor("b1", [3], "int32", data=np.array([0, 0, 8]), scale=None)
    size1 = g.tensor("s1", [3], "int32", data=np.array([1, 4, 1]), scale=None)
    eps = g.tensor("eps", [1], data=np.array([1]))
    g.op("RELU", [x], [r])
    g.op("BATCH_MATMUL", [r, r], [out])
    g.op("SLICE", [out, begin0, size0], [num])
    g.op("SLICE", [out, begin1, size1], [den])
    g.op("ADD", [den, eps], [held])
    g.op("DIV", [num, held], [y])
    return g.write(path, [x], [y])


def test_a_norms_divisor_is_named_as_a_norm(tmp_path: Path) -> None:
    hint = div_hint(_layer_norm(tmp_path / "ln.tflite"), 4)
    assert "Op 4 DIV ('normed')" in hint and "'std' is written by op 3 SQRT <- op 2 ADD <- op 1 MEAN" in hint
    assert "LayerNorm" in hint and "mean or sum of squares" in hint


def test_an_attention_normalizer_is_named_as_what_it_is_and_no_norm_is_blamed(tmp_path: Path) -> None:
    path = _attention_normalizer(tmp_path / "attn.tflite")
    op, hint = invoke_failure(_text(5), path)
    assert op == "DIV (op 5)"
    assert hint is not None and "Op 5 DIV ('attn_out')" in hint
    assert "'den_eps' is written by op 4 ADD <- op 3 SLICE <- op 1 BATCH_MATMUL <- op 0 RELU" in hint
    assert not any(n in hint for n in NORMS), hint


def test_a_square_root_of_no_squares_is_no_norm(tmp_path: Path) -> None:
    g = Graph()
    x = g.tensor("x", [1, 8])
    r, s, y = g.tensor("relu", [1, 8]), g.tensor("root", [1, 8]), g.tensor("y", [1, 8])
    g.op("RELU", [x], [r])
    g.op("SQRT", [r], [s])
    g.op("DIV", [x, s], [y])
    hint = div_hint(g.write(tmp_path / "sqrt.tflite", [x], [y]), 2)
    assert "op 1 SQRT <- op 0 RELU" in hint and not any(n in hint for n in NORMS)


def test_without_the_file_or_a_div_the_hint_claims_no_cause(tmp_path: Path) -> None:
    assert invoke_failure(_text(4)) == ("DIV (op 4)", HINT_INT8_DIV)
    assert div_hint(_layer_norm(tmp_path / "ln.tflite"), 3) == HINT_INT8_DIV  # op 3 is the SQRT
    assert div_hint(tmp_path / "missing.tflite", 4) == HINT_INT8_DIV
    assert not any(n in HINT_INT8_DIV for n in NORMS)
