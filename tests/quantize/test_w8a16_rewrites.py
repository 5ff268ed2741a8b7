"""The TFLite w8a16 artifact of a graph holding an op its 16x8 quantizer refuses (RELU_0_TO_1, PaddleOCR's hard
sigmoid as onnx2tf writes it): the op is rewritten into builtins the quantizer takes, the record says so, and the
artifact runs with int16 activations and agrees with the float model (issue 40: "Quantization to 16x8-bit not yet
supported for op: 'RELU_0_TO_1'" stopped the OCR recognizer's w8a16)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow


def test_relu_0_to_1_is_rewritten_and_the_w8a16_artifact_holds(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    from tf_models import relu_0_to_1

    from edgekit.quantize.tflite.recipes import TfliteJob
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.quantize.tflite.w8a16 import quantize_w8a16
    from edgekit.tflite.model import read_tflite

    float_blob = relu_0_to_1(tf, tmp_path)
    rng = np.random.default_rng(0)
    xs = rng.uniform(-3, 3, (32, 8, 8, 4)).astype(np.float32)
    (tmp_path / "w").mkdir()
    job = TfliteJob(tf, Path(), "serving_default", xs, 1, "float32", tmp_path / "w", lambda _m: None,
                    cache=tmp_path / "cache", float_tflite=float_blob)
    blob, choice = quantize_w8a16(job, "plain")
    assert any("RELU_0_TO_1 -> MUL+RELU6, MUL x 1" in n for n in choice.notes), choice.notes

    paths = [tmp_path / "fp32.tflite", tmp_path / "w8a16.tflite"]
    paths[0].write_bytes(float_blob)
    paths[1].write_bytes(blob)
    model = read_tflite(paths[1])
    assert "RELU_0_TO_1" not in [op.op for op in model.ops]
    assert "int16" in {t.dtype for t in model.tensors if not t.const}  # 16-bit activations, not a float fallback
    x = rng.uniform(-3, 3, (16, 8, 8, 4)).astype(np.float32)
    y0, y1 = run_tflite(paths, x)
    assert y0 is not None and y1 is not None
    assert 0.0 < y0.mean() < 1.0 and y0.min() == 0.0 and y0.max() == 1.0  # both ends of the clip are reached
    assert float(np.abs(y1 - y0).max()) < 1e-3  # int16's step over [0, 1]-ish ranges: about 3e-5
