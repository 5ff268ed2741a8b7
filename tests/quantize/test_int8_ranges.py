"""An int8 TFLite never carries an infinite range: rewritten where exact, a named failure elsewhere, and the
failure's hint names the cause found in that model (each hint's premise is checked on the model it was given for).

The first pattern is a transformers ResNet-18's stem (ReLU, then a MaxPool padded with the float minimum: PADV2 from
ONNX): its int8 TFLite got the step 1.3e36, XNNPACK refused it and LiteRT's builtin kernels aborted. The others: a
mask filled with -1e9, a division by almost zero, and activations that grow layer by layer to 1e9 (a MobileOne at
random weights, before re-parameterization, does so: issue 41): the last is the model's own range, kept.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tf_models import build, images  # noqa: E402

tf = pytest.importorskip("tensorflow")


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")  # tiny float-compatible models: no child per stage


@pytest.fixture(scope="module")
def padv2_saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("tf") / "padv2", "padv2")


def _job(saved: Path, work: Path, xs: np.ndarray):
    from edgekit.quantize.tflite.recipes import TfliteJob

    work.mkdir(parents=True, exist_ok=True)
    return TfliteJob(tf, saved, "serving_default", xs, 1, "int8", work, lambda _m: None)


def test_plain_int8_gets_the_exact_rewrite_and_finite_ranges(padv2_saved: Path, tmp_path: Path) -> None:
    from edgekit.quantize.search import judge
    from edgekit.quantize.tflite.int8_ranges import absurd_ranges
    from edgekit.quantize.tflite.recipes import float_model
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.quantize.tflite.search import quantize_tflite

    xs = images(48)
    job = _job(padv2_saved, tmp_path / "w", xs)
    blob, choice = quantize_tflite(job, "plain")
    assert any("1 x PADV2(-inf) after ReLU -> PAD" in n for n in choice.notes)
    assert choice.edgetpu_fixes is None  # not the Edge TPU artifact
    paths = [tmp_path / "int8.tflite", tmp_path / "float.tflite"]
    paths[0].write_bytes(blob)
    paths[1].write_bytes(float_model(job))
    assert absurd_ranges(paths[0]) == []
    y_int8, y_float = run_tflite(paths, xs)
    assert judge(y_float, y_int8).passed


@pytest.mark.slow  # a second TFLite int8 conversion; the rewrite's own test above keeps the module in the fast suite
def test_without_the_rewrite_the_artifact_fails_naming_the_tensor(padv2_saved: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.core.errors import ConversionError
    from edgekit.quantize.tflite import int8_ranges
    from edgekit.quantize.tflite.recipes import float_model
    from edgekit.quantize.tflite.search import quantize_tflite

    monkeypatch.setattr(int8_ranges, "RANGE_FIXES", ())  # as where the PADV2's input can be negative
    with pytest.raises(ConversionError) as err:
        quantize_tflite(_job(padv2_saved, tmp_path / "w", images(48)), "plain")
    assert err.value.step == "tflite_convert" and err.value.op
    assert "holds the pad's minus infinity" in err.value.message and f"'{err.value.op}'" in err.value.message
    hint = err.value.hint or ""
    assert "MaxPool" in hint and "PADV2" in hint
    # the premise: the model has that PADV2, padding with the float minimum before a MAX_POOL_2D
    from edgekit.tflite.model import read_tflite

    float_path = tmp_path / "float.tflite"
    float_path.write_bytes(float_model(_job(padv2_saved, tmp_path / "f", images(8))))
    m = read_tflite(float_path)
    pads = [op for op in m.ops if op.op == "PADV2"]
    assert pads and float(m.tensors[pads[0].inputs[2]].value().min()) <= np.finfo(np.float32).min
    assert any(op.op == "MAX_POOL_2D" and pads[0].outputs[0] in op.inputs for op in m.ops)


def _steps(path: Path) -> list[tuple[str, float, float, float]]:
    """Each op of the int8 model at PATH: its type, its widest activation input step, its output step, and the
    largest magnitude among its constant inputs."""
    from edgekit.quantize.tflite.int8_ranges import _dequantized, _step_in, _step_out
    from edgekit.tflite.model import read_tflite

    m = read_tflite(path)
    out = []
    for op in m.ops:
        ins = [t for t in m.op_inputs(op) if t is not None]
        consts = [v for t in ins if t.const and (v := _dequantized(t)) is not None and v.size]
        out.append((op.op, max((_step_in(m, t) for t in ins if not t.const), default=0.0),
                    max(_step_out(m, t) for t in m.op_outputs(op) if t is not None),
                    max((float(np.abs(v).max()) for v in consts), default=0.0)))
    return out


@pytest.mark.slow  # a TFLite int8 conversion each: seconds
@pytest.mark.parametrize("pattern", ["mask_fill", "div_zero"])
def test_the_hint_names_the_op_that_brings_the_range(pattern: str, tmp_path: Path) -> None:
    from edgekit.core.errors import ConversionError
    from edgekit.quantize.tflite.search import quantize_tflite

    saved = build(tmp_path / "tf", pattern)
    job = _job(saved, tmp_path / "w", images(48))
    with pytest.raises(ConversionError) as err:
        quantize_tflite(job, "plain")
    hint = err.value.hint or ""
    assert "MaxPool" not in hint and "PADV2" not in hint  # the model has none
    found = sorted(job.work.glob("range-check*.tflite"))
    assert found
    ops = _steps(found[0])
    if pattern == "mask_fill":  # premise: an ADD reads a constant of -1e9, and the hint names it
        assert "constant of -1e+09" in hint and "ADD" in hint
        assert any(op == "ADD" and big >= 0.9e9 for op, _, _, big in ops)
    else:  # premise: a DIV's output step is over JUMP times its inputs', and no constant is huge
        from edgekit.quantize.tflite.int8_ranges import JUMP

        assert "The DIV" in hint and "division" in hint
        assert any("DIV(s) kept in float" in n for n in job.notes), job.notes  # its divisor reaches 1e-9
        assert any(op == "DIV" and step_out > JUMP * step_in for op, step_in, step_out, _ in ops)
        assert all(big < 1e6 for *_, big in ops)


@pytest.mark.slow  # a TFLite int8 conversion: seconds
def test_a_range_the_model_grows_itself_is_kept_and_judged(tmp_path: Path) -> None:
    from edgekit.quantize.search import judge
    from edgekit.quantize.tflite.int8_ranges import ABSURD_SCALE, JUMP, absurd_ranges
    from edgekit.quantize.tflite.recipes import float_model
    from edgekit.quantize.tflite.run import run_tflite
    from edgekit.quantize.tflite.search import quantize_tflite

    xs = images(48)
    job = _job(build(tmp_path / "tf", "grown"), tmp_path / "w", xs)
    blob, choice = quantize_tflite(job, "plain")
    assert any("grown layer by layer" in n and "'" in n for n in choice.notes), choice.notes
    paths = [tmp_path / "int8.tflite", tmp_path / "float.tflite"]
    paths[0].write_bytes(blob)
    paths[1].write_bytes(float_model(job))
    assert absurd_ranges(paths[0])  # steps over a million ...
    ops = _steps(paths[0])  # ... that no op brings at once (the premise of "grown"), reached through no constant
    assert max(step for _, _, step, _ in ops) > ABSURD_SCALE
    assert all(step_out <= JUMP * step_in for _, step_in, step_out, _ in ops if step_in)
    assert all(big < ABSURD_SCALE for *_, big in ops)
    y_int8, y_float = run_tflite(paths, xs)
    assert judge(y_float, y_int8).passed


@pytest.mark.slow  # a PyTorch export and an ONNX -> TFLite int8 conversion with validation: about 40 s
def test_an_unfused_mobileone_publishes_its_int8_tflite(tmp_path: Path) -> None:
    """Issue 41: MobileOne as it leaves training (branches not re-parameterized), its BatchNorms growing the
    activations block by block to about 5e8, was refused with "a padded MaxPool" (it has none). Its range is its own:
    the artifact is published, says why its steps are large, and is judged against the float model."""
    pytest.importorskip("torch")
    pytest.importorskip("onnx2tf")
    from edgekit.conversion.pipeline import convert
    from edgekit.testing import mobile_blocks

    mobile_blocks.export(mobile_blocks.mobileone(depth=6, channels=8, gain=3.0), tmp_path / "mobileone.pt2")
    x = np.random.default_rng(0).standard_normal((64, 3, 32, 32)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    result = convert(tmp_path / "mobileone.pt2", "tflite", "int8", calib=str(tmp_path / "calib.npz"),
                     out=tmp_path / "out")
    assert not result.failed, [a.failure for a in result.failed]
    int8 = result.artifacts[0]
    notes = int8.extra["int8_recipe"]["notes"]
    assert any("grown layer by layer" in n for n in notes), notes
    assert int8.fidelity is not None and int8.fidelity.passed, int8.fidelity
