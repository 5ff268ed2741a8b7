"""A model LiteRT loads but cannot run names the op LiteRT names, with the hint that fits its check.

Real case (issue 8's zoo): PoolFormer's int8 TFLite stopped at validation with "tflite/kernels/div.cc:262
data[i] != zero_point was not true. Node number 47 (DIV) failed to invoke", and the hint listed the input shapes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.core.errors import RuntimeFailure
from edgekit.runtimes.litert_errors import HINT_INT8_DIV, invoke_failure

REAL = ("LiteRT failed to run the model: tflite/kernels/div.cc:262 data[i] != zero_point was not true.Node number 47 "
        "(DIV) failed to invoke.")


def test_the_op_and_the_div_hint_come_from_litert_words() -> None:
    assert invoke_failure(REAL) == ("DIV (op 47)", HINT_INT8_DIV)
    op, hint = invoke_failure("some check was not true.Node number 3 (MEAN) failed to invoke.")
    assert op == "MEAN (op 3)" and hint and "op 3" in hint
    assert invoke_failure("no node named here") == (None, None)


@pytest.mark.slow  # one TFLite int8 conversion of a two-op model
def test_an_int8_div_by_its_zero_point_fails_naming_the_op(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    pytest.importorskip("ai_edge_litert")
    from edgekit.runtimes.litert import LiteRT

    class Divide(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, 8], tf.float32)])
        def __call__(self, x: tf.Tensor) -> tf.Tensor:
            return x[:, :4] / x[:, 4:]

    conv = tf.lite.TFLiteConverter.from_concrete_functions([Divide().__call__.get_concrete_function()])
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    rng = np.random.default_rng(0)
    conv.representative_dataset = lambda: ([rng.uniform(-1, 1, (1, 8)).astype(np.float32)] for _ in range(20))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = conv.inference_output_type = tf.int8
    path = tmp_path / "div.tflite"
    path.write_bytes(conv.convert())
    rt = LiteRT()
    rt.load(path, "cpu", kernels="builtin")
    from ai_edge_litert.interpreter import Interpreter

    _, zero = Interpreter(model_path=str(path)).get_input_details()[0]["quantization"]
    x = np.full((1, 8), zero, np.int8)  # every divisor a real 0
    with pytest.raises(RuntimeFailure) as err:
        rt.run({rt.inputs[0].name: x})
    assert err.value.op and err.value.op.startswith("DIV (op ")
    index = err.value.op.split("op ")[1].rstrip(")")
    # the hint names this DIV and its divisor (a slice of the input), and no norm layer, which the model has none of
    assert err.value.hint and err.value.hint.startswith(f"Op {index} DIV (") and "LayerNorm" not in err.value.hint
