"""ONNX int8 and dynamic quantization of a model with ReduceL2 at opset >= 18 (ConvNeXt-V2's GRN).

onnxruntime's symbolic shape inference loses the shape of a ReduceL2 whose axes are an input and
crashed on the ReduceMean reading it: "object of type 'NoneType' has no len()" (issue 8,
microsoft/onnxruntime#32376). The fast test builds that pattern by hand; the slow one exports a small
ConvNeXt-V2 (depthwise 7x7, channels-last LayerNorm, Linear, GELU, GRN, residual) from PyTorch and
converts it end to end.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.conversion.options import ConvertOptions
from edgekit.sources.base import Source
from edgekit.steps.base import Intermediate, StepContext, StepParams

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _grn_onnx(path: Path) -> Path:
    """x[batch,4,6,6] -> Conv 1x1 -> y * ReduceL2(y, axes=[2,3]) / ReduceMean(that, axes=[1]) -> mean over H,W."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(np.float32), "w"),
        numpy_helper.from_array(np.array([2, 3], np.int64), "hw"),
        numpy_helper.from_array(np.array([1], np.int64), "c"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["y"]),
        helper.make_node("ReduceL2", ["y", "hw"], ["gx"], keepdims=1),
        helper.make_node("ReduceMean", ["gx", "c"], ["mx"], keepdims=1),
        helper.make_node("Div", ["gx", "mx"], ["nx"]),
        helper.make_node("Mul", ["y", "nx"], ["z"]),
        helper.make_node("ReduceMean", ["z", "hw"], ["scores"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "grn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 6, 6])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("precision", ["int8", "dynamic"])
def test_onnx_quantize_survives_reduce_l2_at_opset_18(tmp_path: Path, precision: str) -> None:
    from edgekit.steps.onnx_quantize import OnnxQuantize

    src = _grn_onnx(tmp_path / "grn.onnx")
    x = np.random.default_rng(1).random((8, 4, 6, 6), dtype=np.float32)
    source = Source(path=src, kind="onnx", family="onnx", layout="NCHW", input_name="x", input_shape=[1, 4, 6, 6],
                    input_dtype="float32", predict=lambda a: a, output_names=["scores"])
    said: list[str] = []
    ctx = StepContext(work=tmp_path, stem="grn", source=source, options=ConvertOptions(out_dir=tmp_path / "out"),
                      calibration=lambda: x, log=said.append)
    out = OnnxQuantize(StepParams(precision=precision)).run(Intermediate(kind="onnx", path=src, layout="NCHW"), ctx)
    assert out.path.name == f"grn.{precision}.onnx"
    assert any("microsoft/onnxruntime#32376" in m for m in said), said  # the workaround ran, and says why
    want = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ort.InferenceSession(str(out.path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    cos = float((want * got).sum() / np.linalg.norm(want) / np.linalg.norm(got))
    assert cos > 0.99, cos


@pytest.mark.slow  # a PyTorch export and a full convert with validation: about 10 s
def test_a_small_convnext_v2_converts_to_int8_onnx(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch import nn

    from edgekit.conversion.pipeline import convert

    class GRN(nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.gamma = nn.Parameter(torch.full((1, 1, 1, dim), 0.1))
            self.beta = nn.Parameter(torch.zeros(1, 1, 1, dim))

        def forward(self, x):
            gx = torch.linalg.vector_norm(x, ord=2, dim=(1, 2), keepdim=True)
            return self.gamma * (x * (gx / (gx.mean(dim=-1, keepdim=True) + 1e-6))) + self.beta + x

    class Block(nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
            self.norm, self.act = nn.LayerNorm(dim, eps=1e-6), nn.GELU()
            self.pw1, self.grn, self.pw2 = nn.Linear(dim, 4 * dim), GRN(4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            y = self.dw(x).permute(0, 2, 3, 1)
            y = self.pw2(self.grn(self.act(self.pw1(self.norm(y)))))
            return x + y.permute(0, 3, 1, 2)

    class TinyConvNeXtV2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem, self.blocks = nn.Conv2d(3, 16, 4, 4), nn.Sequential(Block(16), Block(16))
            self.head_norm, self.fc = nn.LayerNorm(16, eps=1e-6), nn.Linear(16, 5)

        def forward(self, x):
            return self.fc(self.head_norm(self.blocks(self.stem(x)).mean((2, 3))))

    torch.manual_seed(0)
    program = torch.export.export(TinyConvNeXtV2().eval(), (torch.randn(1, 3, 32, 32),))
    torch.export.save(program, tmp_path / "convnext_v2.pt2")
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(0).random((24, 3, 32, 32), dtype=np.float32))
    result = convert(tmp_path / "convnext_v2.pt2", "onnx", "fp32,int8", calib=str(tmp_path / "calib.npz"),
                     out=tmp_path / "out")
    assert not result.failed, [a.failure for a in result.failed]
    assert [a.precision for a in result.artifacts] == ["fp32", "int8"]
    assert all(a.fidelity is not None and a.fidelity.passed for a in result.artifacts)
