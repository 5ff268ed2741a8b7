"""End to end (issue 41): the small MobileViTv2 block (unfold into 2 x 2 patches, separable attention with its softmax
over the patches, GroupNorm(1), fold back, all through 6-D tensors in the model) converts with --target edgetpu to an
int8 model the pre-flight predicts wholly on the Edge TPU (12 of 64 ops before the attention fixes), and that model
runs in LiteRT and is validated against the source."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # one torch export and one TFLite conversion: about a minute


def test_a_mobilevitv2_block_maps_whole_and_its_int8_runs(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from edgekit.conversion.pipeline import convert
    from edgekit.testing import mobile_blocks

    mobile_blocks.export(mobile_blocks.mobilevitv2(), tmp_path / "mobilevitv2.pt2")
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(0).standard_normal((48, 3, 32, 32)).astype(np.float32))
    result = convert(tmp_path / "mobilevitv2.pt2", "edgetpu", "int8", calib=str(tmp_path / "calib.npz"),
                     out=tmp_path / "out")
    (art,) = [a for a in result.artifacts if a.format == "tflite"]
    assert art.failure is None and art.fidelity is not None, art.failure
    pf = art.extra["edgetpu"]  # the Edge TPU-ready int8 model carries its pre-flight
    assert pf["ops_on_tpu"] == pf["ops_total"] and pf["first_unsupported"] is None, pf["summary"]
    applied = art.extra["int8_recipe"]["edgetpu_fixes"]["applied"]
    assert any(k.startswith("SOFTMAX of 2-16 rows") for k in applied) and any(k.startswith("5-D") for k in applied)
