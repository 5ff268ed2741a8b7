"""An ONNX int8 model whose input values all sit half-way between two int8 steps keeps that input float.

Why: pixels normalised around 127.5 (MTCNN's (x - 127.5) / 128, the [-1, 1] of x / 127.5 - 1) take 256 values one
step apart with zero between two of them; the int8 grid must hold zero, so its QuantizeLinear rounds every pixel by
half a step. On MTCNN's P-Net that input rounding alone cost 5 points of proposal IoU in float (docs/results/int8.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx_models import conv_chain, images

pytest.importorskip("onnxruntime")


def _centred_pixels(n: int, seed: int) -> np.ndarray:
    """N smooth 8-bit images as MTCNN normalises them, (k - 127.5) / 128, with 0 and 255 present."""
    k = np.round(images(n, seed) * 255)
    k[0, 0, 0, 0], k[0, 0, 0, 1] = 0, 255
    return ((k - 127.5) / 128).astype(np.float32)


def _quantized(tmp_path: Path, x: np.ndarray, tag: str) -> tuple[Path, list[str]]:
    from edgekit.quantize.onnx.ort import quantize
    from edgekit.quantize.onnx.recipes import OnnxRecipeConfig, QuantData

    src = conv_chain(tmp_path / f"chain-{tag}.onnx")
    dst = tmp_path / f"chain-{tag}.int8.onnx"
    work = tmp_path / tag
    work.mkdir()
    data = QuantData("x", x, 1, work)
    quantize(src, dst, data, OnnxRecipeConfig())
    return dst, data.notes


def _error(path: Path, src: Path, x: np.ndarray) -> float:
    """The relative RMS error of the first layer's float output (before its own QuantizeLinear; the quantizer folds
    the ReLU into it, hence the max) against the float model's: what the input's rounding reaches first, beside the
    int8 weights' share."""
    import onnx
    import onnxruntime as ort

    def run(p: Path) -> np.ndarray:
        m = onnx.load(str(p))
        m.graph.output.append(onnx.helper.make_tensor_value_info("a1", onnx.TensorProto.FLOAT, None))
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return np.maximum(np.concatenate([s.run(["a1"], {"x": x[i:i + 1]})[0] for i in range(len(x))]), 0)

    ref = run(src)
    return float(np.sqrt(np.mean((run(path) - ref) ** 2)) / np.sqrt(np.mean(ref ** 2)))


def _reads_quantized_input(path: Path) -> bool:
    import onnx

    return any(n.op_type == "QuantizeLinear" and n.input[0] == "x" for n in onnx.load(str(path)).graph.node)


def test_a_half_step_input_is_left_float_and_the_model_is_closer_to_float(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    calib, held = _centred_pixels(32, 1), _centred_pixels(32, 2)
    fixed, notes = _quantized(tmp_path, calib, "fixed")
    assert not _reads_quantized_input(fixed)
    assert any("left float" in n and "half-way" in n for n in notes), notes
    import edgekit.quantize.onnx.ort as ort_mod

    monkeypatch.setattr(ort_mod, "_float_half_step_inputs", lambda dst, data: None)
    rounded, _ = _quantized(tmp_path, calib, "rounded")
    assert _reads_quantized_input(rounded)
    src = tmp_path / "chain-fixed.onnx"
    fixed_error, rounded_error = _error(fixed, src, held), _error(rounded, src, held)
    assert fixed_error < 0.9 * rounded_error, (fixed_error, rounded_error)  # 0.0092 against 0.0113


def test_the_input_is_left_float_when_the_calibration_misses_the_extreme_pixels(tmp_path: Path) -> None:
    # pixels 20..220 only: min/max gives a scale that is not the data's step, and int8 still cannot hold them
    k = np.round(images(32, 3) * 200) + 20
    dst, notes = _quantized(tmp_path, ((k - 127.5) / 128).astype(np.float32), "short")
    assert not _reads_quantized_input(dst)
    assert any("left float" in n for n in notes)


def test_an_input_on_the_grid_keeps_its_quantizer(tmp_path: Path) -> None:
    x = images(32, 1)  # pixels in [0, 1]: not half-way, and a zero point holds them as well as int8 can
    dst, notes = _quantized(tmp_path, x, "grid")
    assert _reads_quantized_input(dst)
    assert not any("left float" in n for n in notes)
