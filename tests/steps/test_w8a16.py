"""The w8a16 precision (int8 weights, int16 activations): planned, refused where a target cannot make it, and near
lossless on the bundled CNN in both formats."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgekit.conversion.options import ConvertOptions
from edgekit.conversion.plan import make_plan
from edgekit.core.errors import UsageError
from edgekit.core.precisions import PRECISIONS, get_precision
from edgekit.sources.base import Source


def _source() -> Source:
    return Source(path=Path("m.pt2"), kind="torch-exported", family="torch", layout="NCHW", input_name="x",
                  input_shape=[-1, 1, 28, 28], input_dtype="float32", predict=lambda x: np.zeros((len(x), 10)))


def _opts(tmp_path: Path, **kw: object) -> ConvertOptions:
    base: dict[str, object] = {"precisions": ["w8a16"], "calib": "mnist", "out_dir": tmp_path / "out"}
    base.update(kw)
    return ConvertOptions(**base)  # type: ignore[arg-type]


def test_w8a16_is_planned_for_onnx_and_tflite_with_float_io(tmp_path: Path) -> None:
    plan = make_plan(_source(), _opts(tmp_path, targets=["onnx", "tflite"]))
    assert [c.label for c in plan.chains] == ["onnx w8a16", "tflite w8a16"]
    assert plan.outputs == ["m.w8a16.onnx", "m.w8a16.tflite"]
    assert all(c.io_dtype is None for c in plan.chains)  # float I/O: no --io-dtype choice
    assert get_precision("16x8").name == "w8a16" and PRECISIONS["w8a16"].needs_calibration
    th, fp16, int8 = (PRECISIONS[p].thresholds for p in ("w8a16", "fp16", "int8"))
    assert int8["top1_agreement"] < th["top1_agreement"] <= fp16["top1_agreement"]
    assert int8["cosine"] < th["cosine"] < fp16["cosine"]


@pytest.mark.parametrize("targets", [["edgetpu"], ["tflite", "edgetpu"]])
def test_edgetpu_refuses_w8a16_at_plan_time_with_the_reason(tmp_path: Path, targets: list[str]) -> None:
    with pytest.raises(UsageError, match="edgetpu cannot make w8a16: the Edge TPU runs 8-bit") as err:
        make_plan(_source(), _opts(tmp_path, targets=targets, precisions=["int8", "w8a16"]))
    assert "--target onnx,tflite --quantize w8a16" in (err.value.hint or "")
    # the Edge TPU still makes its int8 from any other request, as before
    (chain,) = make_plan(_source(), _opts(tmp_path, targets=["edgetpu"], precisions=["fp32"])).chains
    assert chain.precision == "int8"


def test_file_names_say_w8a16(tmp_path: Path) -> None:
    from edgekit.measure.artifact import guess_precision

    assert guess_precision(Path("m.w8a16.tflite"), None) == ("w8a16", "file name")
    assert guess_precision(Path("m_16x8.tflite"), None) == ("w8a16", "file name")
    assert guess_precision(Path("model_static_wi8_ai16.tflite"), None) == ("w8a16", "file name")


@pytest.mark.slow
def test_w8a16_on_the_bundled_cnn_is_near_lossless(bundled_pt2: Path, tmp_path: Path) -> None:
    """Both formats: 16-bit activations, int8 weights (about int8's size), and within fp16's reach of the source."""
    import onnx

    from edgekit.conversion.pipeline import convert
    from edgekit.core.artifact import Manifest
    from edgekit.tflite.model import read_tflite

    result = convert(bundled_pt2, "onnx,tflite", "w8a16", calib="mnist", val_size=300, out=tmp_path / "o")
    manifest = Manifest.from_dict(json.loads(result.manifest_path.read_text()))
    by_format = {a.format: a for a in manifest.artifacts}
    for fmt, art in by_format.items():
        fid = art.fidelity
        assert art.precision == "w8a16" and fid is not None and fid.passed, (fmt, fid)
        assert fid.top1_agreement is not None and fid.top1_agreement >= 0.997 and fid.cosine > 0.99995, (fmt, fid)
        assert fid.thresholds["top1_agreement"] == 0.99
        assert art.size_bytes < 0.3 * 908_000  # int8 weights: about a quarter of the fp32 model
        assert art.extra["int8_recipe"]["chosen"] == "w8a16"
        assert art.inputs[0].dtype == "float32"  # float I/O: fed as the fp32 artifact is
    model = onnx.load(str(result.manifest_path.parent / by_format["onnx"].path))
    assert next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) >= 21
    zero_points = {i.name: i.data_type for i in model.graph.initializer if i.name.endswith("zero_point")}
    assert onnx.TensorProto.INT16 in zero_points.values() and onnx.TensorProto.INT8 in zero_points.values()
    tfl = read_tflite(result.manifest_path.parent / by_format["tflite"].path)
    kinds = {tfl.tensors[op.outputs[0]].dtype for op in tfl.ops if op.op == "CONV_2D"}
    weights = {tfl.tensors[op.inputs[1]].dtype for op in tfl.ops if op.op == "CONV_2D"}
    assert kinds == {"int16"} and weights == {"int8"}
