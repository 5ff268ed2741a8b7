"""The int8 ops XNNPACK leaves to LiteRT's builtin kernels are rewritten for a CPU target (edgekit.quantize.tflite.
xnnpack): an int8 PRELU split MediaPipe's palm detector into 32 XNNPACK partitions and made it 3x slower than its
float file. The rewrite is exact in float, and the int8 model runs as one XNNPACK partition."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.testing.mediapipe_graphs import prelu_graph

tf = pytest.importorskip("tensorflow")

SLOPES = np.array([-4.6, -0.5, 0.0, 0.1, 0.25, 1.0, 3.0, 12.2], np.float32)  # MediaPipe's run from -4.6 to 12.2


def _graph() -> bytes:
    return prelu_graph(SLOPES)


def _x(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (n, 8, 8, 3)).astype(np.float32)


def _partitions(path: Path) -> int:
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path), num_threads=1)  # LiteRT's default: the XNNPACK delegate
    it.allocate_tensors()
    return sum(1 for op in it._get_ops_details() if op["op_name"] == "DELEGATE")


def test_prelu_is_rewritten_exactly_in_float(tmp_path: Path) -> None:
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.quantize.tflite.xnnpack import PRELU_WORDS, xnnpack_rewrites
    from edgekit.tflite.model import read_tflite

    blob = _graph()
    fixed, applied = xnnpack_rewrites(blob)
    assert applied == {PRELU_WORDS: 1}
    (tmp_path / "a.tflite").write_bytes(blob)
    (tmp_path / "b.tflite").write_bytes(fixed)
    assert "PRELU" not in [op.op for op in read_tflite(tmp_path / "b.tflite").ops]
    y0, y1 = run_tflite([tmp_path / "a.tflite", tmp_path / "b.tflite"], _x(16, 1))
    assert y0 is not None and y1 is not None
    np.testing.assert_allclose(y1, y0, rtol=1e-5, atol=1e-5)
    assert xnnpack_rewrites(fixed)[1] == {}  # nothing left to rewrite


@pytest.mark.slow  # TensorFlow's calibrator and quantizer, twice
def test_the_cpu_int8_model_runs_as_one_xnnpack_partition_and_the_edge_tpu_one_keeps_prelu(tmp_path: Path) -> None:
    from edgekit.quantize.tflite.recipes import TfliteJob
    from edgekit.quantize.tflite.search import quantize_tflite
    from edgekit.tflite.model import read_tflite

    blob = _graph()
    made = {}
    for name, integer_only in (("cpu", False), ("tpu", True)):
        (tmp_path / name).mkdir()
        job = TfliteJob(tf, Path(), "serving_default", _x(32, 2), 1, "int8", tmp_path / name, lambda _m: None,
                        cache=tmp_path / name / "cache", float_tflite=blob)
        q, choice = quantize_tflite(job, "plain", float_free=integer_only)
        (tmp_path / f"{name}.tflite").write_bytes(q)
        made[name] = choice
    assert made["cpu"].config["xnnpack_rewrites"] == {"PRELU -> MUL(-1)+RELU, 1x1 DEPTHWISE_CONV_2D(1 - a), ADD": 1}
    assert any("XNNPACK" in n for n in made["cpu"].notes)
    assert made["tpu"].config["xnnpack_rewrites"] == {}
    assert "PRELU" not in [op.op for op in read_tflite(tmp_path / "cpu.tflite").ops]
    assert "PRELU" in [op.op for op in read_tflite(tmp_path / "tpu.tflite").ops]
    assert _partitions(tmp_path / "cpu.tflite") == 1  # the whole int8 model in XNNPACK
    assert _partitions(tmp_path / "tpu.tflite") == 2  # the int8 PRELU between two partitions, on LiteRT's kernels
