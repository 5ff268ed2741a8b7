"""Cross-layer equalization through an unfused ReLU (issue 37): MediaPipe's float graphs write CONV_2D, then a RELU
op of its own, then the next convolution (the selfie segmenter, the palm, face and pose detectors, the landmark
models). Such pairs were not seen, so `equalize` found no pair in the selfie segmenter and the search skipped it;
a ReLU passes a positive per-channel scale, so they are pairs like a fused ReLU's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


def _graph(path: Path, fused: bool = False) -> bytes:
    """input [1, 8, 8, 3] -> CONV_2D 3x3 (channel ranges 0.1 to 40) -> RELU -> CONV_2D 1x1 -> "y" [1, 8, 8, 4]."""
    from edgekit.testing.mediapipe_graphs import FloatGraph

    rng = np.random.default_rng(0)
    g = FloatGraph()
    x = g.tensor("input", [1, 8, 8, 3])
    same = {"padding": g.fb.Padding.SAME, "strideW": 1, "strideH": 1, "dilationWFactor": 1, "dilationHFactor": 1}
    spread = np.geomspace(0.1, 40, 8)[:, None, None, None]
    h = g.tensor("conv1", [1, 8, 8, 8])
    g.op("CONV_2D", [x, g.tensor("conv1/w", [8, 3, 3, 3], rng.normal(0, 0.5, (8, 3, 3, 3)) * spread),
                     g.tensor("conv1/b", [8], rng.normal(0, 0.1, 8) * spread.ravel())], [h],
         g.options("Conv2DOptionsT", **same, fusedActivationFunction=1 if fused else 0))
    r = h
    if not fused:
        r = g.tensor("relu", [1, 8, 8, 8])
        g.op("RELU", [h], [r])
    y = g.tensor("y", [1, 8, 8, 4])
    g.op("CONV_2D", [r, g.tensor("conv2/w", [4, 1, 1, 8], rng.normal(0, 0.5, (4, 1, 1, 8))),
                     g.tensor("conv2/b", [4], np.zeros(4))], [y], g.options("Conv2DOptionsT", **same))
    blob = g.blob([x], [y])
    path.write_bytes(blob)
    return blob


@pytest.mark.parametrize("fused", [False, True])
def test_a_relu_op_between_two_convolutions_is_a_pair_and_the_function_is_kept(tmp_path: Path, fused: bool) -> None:
    from edgekit.quantize.tflite.equalize import equalizable, equalize_tflite
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.tflite.flatbuffer import FlatModel

    blob = _graph(tmp_path / "float.tflite", fused)
    assert equalizable(blob) == 1
    eq, words = equalize_tflite(blob)
    assert "equalized 1 op pairs" in words
    (tmp_path / "eq.tflite").write_bytes(eq)
    x = np.random.default_rng(1).uniform(0, 1, (8, 8, 8, 3)).astype(np.float32)
    y0, y1 = run_tflite([tmp_path / "float.tflite", tmp_path / "eq.tflite"], x)
    assert y0 is not None and y1 is not None
    np.testing.assert_allclose(y1, y0, rtol=1e-4, atol=1e-4 * float(np.abs(y0).max()))
    w0, w1 = (_const(FlatModel(b), "conv1/w") for b in (blob, eq))
    ranges0, ranges1 = (np.abs(w).reshape(8, -1).max(axis=1) for w in (w0, w1))
    spread0, spread1 = ranges0.max() / ranges0.min(), ranges1.max() / ranges1.min()
    assert spread1 < spread0 / 10, (spread0, spread1)  # evened: about 400x -> 28x here


def _const(fm: object, name: str) -> np.ndarray:
    k = next(k for k in range(len(fm.sg.tensors)) if fm.tensor_name(k) == name)  # type: ignore[attr-defined]
    w = fm.const(k)  # type: ignore[attr-defined]
    assert w is not None
    return w


def test_a_relu_read_twice_is_not_a_pair(tmp_path: Path) -> None:
    from edgekit.quantize.tflite.equalize import equalizable
    from edgekit.tflite.flatbuffer import FlatModel

    fm = FlatModel(_graph(tmp_path / "float.tflite"))
    relu = int(fm.sg.operators[1].outputs[0])
    fm.sg.outputs = [*list(fm.sg.outputs), relu]  # the ReLU's output is read by the user too: no pair
    assert equalizable(fm.to_bytes()) == 0
