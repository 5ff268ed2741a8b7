"""edgekit.quantize.tflite.div_guard: an int8 DIV whose divisor int8 rounds to zero is kept in float, so the int8
TFLite runs (LiteRT's int8 DIV refused it: `div.cc:262 data[i] != zero_point`, EfficientViT-B0, issue 41)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tf_models import build, images  # noqa: E402

pytestmark = pytest.mark.slow  # TFLite calibrations and conversions: seconds each

tf = pytest.importorskip("tensorflow")


def test_a_divisor_that_reaches_zero_is_found_in_the_calibrated_model(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.quantize.tflite.div_guard import zero_divisors
    from edgekit.quantize.tflite.recipes import TfliteJob, calibrated

    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")
    found = {}
    for pattern in ("div_zero", "plain"):
        work = tmp_path / pattern
        work.mkdir()
        job = TfliteJob(tf, build(work / "tf", pattern), "serving_default", images(24), 1, "int8", work,
                        lambda _m: None)
        found[pattern] = zero_divisors(calibrated(job))
    (div,) = found["div_zero"]  # h / (relu(h - 0.5) + 1e-9): the divisor is 1e-9 wherever h <= 0.5
    assert div.nearest == pytest.approx(1e-9, rel=0.01) and div.nearest < div.step / 2
    assert found["plain"] == []


def test_efficientvits_linear_attention_runs_in_int8(tmp_path: Path) -> None:
    """The small EfficientViT block (ReLU linear attention, normalizer out / (q . sum(k) + 1e-5)): both int8
    artifacts run and are judged; its DIV is the one op in float, and its calibrated divisor does reach zero."""
    pytest.importorskip("torch")
    from edgekit.conversion.pipeline import convert
    from edgekit.testing import mobile_blocks
    from edgekit.tflite.model import read_tflite

    mobile_blocks.export(mobile_blocks.efficientvit(), tmp_path / "efficientvit.pt2")
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(0).standard_normal((64, 3, 32, 32)).astype(np.float32))
    result = convert(tmp_path / "efficientvit.pt2", "tflite,edgetpu", "int8", calib=str(tmp_path / "calib.npz"),
                     out=tmp_path / "out")
    tflites = [a for a in result.artifacts if a.format == "tflite"]
    assert len(tflites) == 2 and not [a for a in tflites if a.failure], [a.failure for a in tflites]
    for art in tflites:
        notes = art.extra["int8_recipe"]["notes"]
        assert any("1 DIV(s) kept in float" in n and "reaches 1e-05" in n for n in notes), notes
        assert art.fidelity is not None and art.fidelity.passed, art.fidelity
        m = read_tflite(tmp_path / "out" / Path(art.path).name)
        divs = [op for op in m.ops if op.op == "DIV"]
        assert len(divs) == 1 and all(m.tensors[i].dtype == "float32" for i in divs[0].inputs)
