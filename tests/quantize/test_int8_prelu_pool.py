"""An int8 TFLite of a PReLU before a ceil-mode MaxPool (MTCNN's R-Net and O-Net) is made and validated.

PyTorch's MaxPool2d(ceil_mode=True) reaches TFLite through ONNX and onnx2tf as PADV2 with -FLT_MAX before a VALID
MAX_POOL_2D. The quantizer gives PADV2 one scale for its input and output, so the PReLU output it reads got the
step 1.3e36 and the artifact was refused ("its calibrated range holds an infinity"). A PReLU can be negative, so
the PAD rewrite for a ReLU does not apply; where the pads are SAME's, the pool reads the PReLU with SAME padding
instead (edgekit.edgetpu.fixes), exact in float and in int8.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # a PyTorch export and a full ONNX -> TFLite int8 convert with validation: seconds


def _prelu_net(torch: object) -> object:
    from torch import nn

    class Net(nn.Module):
        """R-Net's stem in small: conv, PReLU(C), MaxPool(3, 2, ceil_mode) (22 -> 11: one padded column and row),
        conv, PReLU(C), flatten, a (N,2) softmax and a (N,4) box regression."""

        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.prelu1 = nn.Conv2d(3, 8, 3), nn.PReLU(num_parameters=8)
            self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv2, self.prelu2 = nn.Conv2d(8, 8, 3, stride=2), nn.PReLU(num_parameters=8)
            self.prob, self.box = nn.Linear(8 * 5 * 5, 2), nn.Linear(8 * 5 * 5, 4)

        def forward(self, x):  # noqa: ANN001, ANN202 - torch types
            x = self.prelu2(self.conv2(self.pool1(self.prelu1(self.conv1(x))))).flatten(1)
            return self.box(x), self.prob(x).softmax(1)

    torch.manual_seed(0)  # type: ignore[attr-defined]
    net = Net().eval()
    with torch.no_grad():  # type: ignore[attr-defined]
        for p in (net.prelu1, net.prelu2):
            p.weight.copy_(torch.linspace(-0.5, 0.5, 8))  # type: ignore[attr-defined]  # slopes of both signs
    return net


def test_prelu_before_a_ceil_mode_maxpool_converts_to_int8_tflite(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx2tf")
    from edgekit.conversion.pipeline import convert
    from edgekit.quantize.tflite.int8_ranges import absurd_ranges

    program = torch.export.export(_prelu_net(torch), (torch.zeros(1, 3, 24, 24),))
    torch.export.save(program, tmp_path / "prelu.pt2")
    x = np.random.default_rng(0).standard_normal((48, 3, 24, 24)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    result = convert(tmp_path / "prelu.pt2", "tflite", "fp32,int8", calib=str(tmp_path / "calib.npz"),
                     out=tmp_path / "out")
    assert not result.failed, [a.failure for a in result.failed]
    int8 = next(a for a in result.artifacts if a.precision == "int8")
    assert absurd_ranges(Path(int8.path) if Path(int8.path).is_absolute() else tmp_path / "out" / int8.path) == []
    notes = int8.extra["int8_recipe"]["notes"]
    assert any("MAX_POOL_2D SAME" in n for n in notes), notes  # the fix ran and says so
    fid = int8.fidelity
    assert fid is not None and fid.passed, fid
    kinds = {o.name: o.kind for o in fid.outputs}
    assert sorted(kinds.values()) == ["classes", "regression"], kinds  # the box is judged as a regression
