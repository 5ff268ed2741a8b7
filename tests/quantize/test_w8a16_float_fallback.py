"""The TFLite w8a16 artifact of a graph holding ops the 16x8 quantizer has no kernel for (issue 37): HARD_SWISH is
rewritten into builtins it quantizes (x * relu6(x + 3) / 6), PRELU stays float between a DEQUANTIZE and a QUANTIZE,
and the record names it. Before, "Quantization to 16x8-bit not yet supported for op: 'HARD_SWISH'" (MediaPipe's
selfie segmenter) or 'PRELU' (its palm detector) failed the whole artifact."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # TensorFlow's 16x8 calibrator on a small graph: seconds


def _graph(path: Path) -> bytes:
    """input [1, 8, 8, 3] -> CONV_2D 3x3 -> PRELU (per channel) -> HARD_SWISH -> CONV_2D 1x1 -> "y" [1, 8, 8, 4]."""
    from edgekit.testing.mediapipe_graphs import prelu_graph

    blob = prelu_graph(np.random.default_rng(0).uniform(0.05, 0.5, 8), hard_swish=True)
    path.write_bytes(blob)
    return blob


def test_hard_swish_is_rewritten_and_prelu_stays_float(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    from edgekit.quantize.tflite.recipes import TfliteJob
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.quantize.tflite.w8a16 import float_ops, quantize_w8a16
    from edgekit.tflite.model import read_tflite

    float_blob = _graph(tmp_path / "fp32.tflite")
    rng = np.random.default_rng(1)
    (tmp_path / "w").mkdir()
    job = TfliteJob(tf, Path(), "serving_default", rng.uniform(-1, 1, (32, 8, 8, 3)).astype(np.float32), 1,
                    "float32", tmp_path / "w", lambda _m: None, cache=tmp_path / "cache", float_tflite=float_blob)
    blob, choice = quantize_w8a16(job, "plain")
    assert any("HARD_SWISH -> ADD+RELU6, MUL, MUL x 1" in n for n in choice.notes), choice.notes
    assert any("kept float, with no 16x8 kernel" in n and "PRELU x 1" in n for n in choice.notes), choice.notes
    assert choice.config["float_ops"] == {"PRELU": 1} == float_ops(blob)

    (tmp_path / "w8a16.tflite").write_bytes(blob)
    model = read_tflite(tmp_path / "w8a16.tflite")
    ops = [op.op for op in model.ops]
    assert "HARD_SWISH" not in ops and "PRELU" in ops
    by_op = {op.op: model.tensors[op.outputs[0]].dtype for op in model.ops}
    assert by_op["CONV_2D"] == "int16" and by_op["PRELU"] == "float32"  # the convolutions stay 16-bit
    x = rng.uniform(-1, 1, (16, 8, 8, 3)).astype(np.float32)
    y0, y1 = run_tflite([tmp_path / "fp32.tflite", tmp_path / "w8a16.tflite"], x)
    assert y0 is not None and y1 is not None
    cosine = float((y0 * y1).sum() / np.sqrt((y0 * y0).sum() * (y1 * y1).sum()))
    assert cosine > 0.999, cosine  # int8 weights, 16-bit activations
