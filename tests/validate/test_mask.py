"""The mask kind: single-channel probability maps judged by their thresholded mask and its regions (issue 29).

The maps are made from a real picture of printed text (scikit-image's `text` sample): a text detector's
probability map is high on the strokes and low elsewhere, and its user cuts it at about 0.3.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgekit.core.errors import UsageError
from edgekit.fidelity.decide import decide_kinds
from edgekit.fidelity.kinds import parse_mask_thresholds
from edgekit.fidelity.mask import compare_masks
from edgekit.fidelity.metrics import judge


def _text_maps(n: int = 4, size: int = 96) -> np.ndarray:
    """(N, 1, size, size) probability maps of text: dark strokes of the real picture -> high probability."""
    from skimage import data

    img = data.text().astype(np.float32) / 255.0
    crops = [img[r:r + size, c:c + size] for r, c in ((10, 20), (60, 150), (40, 300), (70, 250))][:n]
    return np.stack([1 / (1 + np.exp((c - 0.35) * 30)) for c in crops])[:, None].astype(np.float32)


def _int8_like(a: np.ndarray) -> np.ndarray:
    return np.round(a * 255) / 255  # one int8 step of a [0, 1] map


def test_a_map_quantized_by_an_int8_step_keeps_its_mask_and_regions() -> None:
    a = _text_maps()
    fid = judge(a, _int8_like(a), kind="mask", precision="int8", mask_threshold=0.3)
    assert fid.passed, fid.failures
    assert fid.mask_agreement is not None and fid.mask_agreement > 0.99 and fid.mask_threshold == 0.3
    assert fid.regions is not None and fid.regions >= 20  # the letters of four crops of text
    assert fid.region_recall == 1.0 and fid.region_precision == 1.0 and fid.cosine > 0.999


def test_a_map_that_merges_regions_fails_though_its_pixels_mostly_agree() -> None:
    """A map widened by one pixel: letters run into each other. 98.8% of pixels keep their side of the cut (the
    pixel bar alone would pass it); a fifth of the regions no longer match."""
    from scipy import ndimage

    a = _text_maps()
    grown = np.stack([ndimage.grey_dilation(m[0], size=(1, 2))[None] for m in a])
    fid = judge(a, grown, kind="mask", precision="int8", mask_threshold=0.3)
    assert fid.mask_agreement is not None and fid.mask_agreement >= 0.98
    assert not fid.passed and fid.region_recall is not None and fid.region_recall < 0.9
    assert [f for f in fid.failures if "mask regions" in f] == fid.failures, fid.failures
    assert fid.relative_error is not None and fid.cosine < 1  # recorded, not judged


def test_the_threshold_decides_what_is_compared() -> None:
    a = _text_maps()
    b = np.clip(a + 0.04, 0, 1)  # a constant offset: moves pixels across a cut where the map is near it
    at_03, at_05 = compare_masks(a, b, 0.3), compare_masks(a, b, 0.5)
    assert at_03.agreement != at_05.agreement


def test_few_regions_are_recorded_not_judged() -> None:
    a = np.zeros((2, 1, 32, 32), np.float32)
    a[:, 0, 4:12, 4:12] = 0.9
    b = a.copy()
    b[:, 0, 4:12, 4:12] = 0.1  # the one region lost: the mask agreement says so, the region count cannot
    fid = judge(a, b, kind="mask", precision="int8")
    assert fid.regions == 2 and "region_recall" not in fid.thresholds
    assert any("too few to judge regions" in n for n in fid.notes)
    assert not fid.passed and any("mask agreement" in f for f in fid.failures)


def test_a_single_channel_sigmoid_map_is_decided_a_mask_and_says_why() -> None:
    a = _text_maps()
    got = decide_kinds({"maps": a, "logits": a * 4 - 2, "box": a, "heat": a[:, :, :4, :4]}, "NCHW")
    assert got["maps"].kind == "mask" and "[0, 1]" in got["maps"].reason
    assert got["logits"].kind == "regression"  # values outside [0, 1]: not probabilities
    assert got["box"].kind == "regression"  # its name says it holds coordinates
    assert got["heat"].kind == "regression"  # 4x4: too small to call a map
    nhwc = decide_kinds({"maps": a.transpose(0, 2, 3, 1)}, "NHWC")
    assert nhwc["maps"].kind == "mask"


@pytest.mark.parametrize("typed, parsed", [("0.3", {"*": 0.3}), (["maps=0.3", "sal=0.6"], {"maps": 0.3, "sal": 0.6})])
def test_mask_threshold_parses(typed: object, parsed: dict[str, float]) -> None:
    assert parse_mask_thresholds(typed) == parsed  # type: ignore[arg-type]


@pytest.mark.parametrize("typed", ["1.5", "maps=", "=0.3", "maps=high", "0"])
def test_bad_mask_threshold_is_a_usage_error(typed: str) -> None:
    with pytest.raises(UsageError, match="--mask-threshold"):
        parse_mask_thresholds(typed)


@pytest.mark.parametrize("shape", [(8, 10), (2, 3, 16, 16)])
def test_mask_asked_of_an_output_that_is_no_single_channel_map_is_a_usage_error(shape: tuple[int, ...]) -> None:
    """--output-kind name=mask (or a named --mask-threshold) on a vector or a 3-channel map: a usage error naming the
    shape, not scipy's "structure and input must have equal rank" traceback when it is judged."""
    y = np.random.default_rng(0).uniform(0, 1, shape).astype(np.float32)
    with pytest.raises(UsageError, match="single-channel map") as exc:
        decide_kinds({"out": y}, "NCHW", {"out": "mask"})
    assert "--output-kind out=" in (exc.value.hint or "")
    assert decide_kinds({"out": y[:, :1] if y.ndim == 4 else y[:, :, None]}, "NCHW", {"out": "mask"})["out"].kind == \
        "mask"


def _sigmoid_net(path: Path, size: int = 96) -> Path:
    """image [1, 1, size, size] -> 3x3 conv (a blur that darkens) -> sigmoid: a 1-channel probability map."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = np.full((1, 1, 3, 3), -30.0 / 9, np.float32)
    nodes = [helper.make_node("Conv", ["image", "w", "b"], ["z"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Sigmoid", ["z"], ["maps"], name="sigmoid")]
    graph = helper.make_graph(nodes, "textmap", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                                                [1, 1, size, size])],
                              [helper.make_tensor_value_info("maps", TensorProto.FLOAT, [1, 1, size, size])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([10.5], np.float32),
                                                                                         "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.mark.slow  # two onnxruntime quantizations and validations (a few seconds)
def test_convert_records_the_mask_threshold_and_judges_the_regions(tmp_path: Path) -> None:
    from skimage import data

    from edgekit.conversion.pipeline import convert

    img = data.text().astype(np.float32) / 255.0
    crops = np.stack([img[r:r + 96, c:c + 96] for r in range(0, 76, 12) for c in range(0, 352, 32)])[:, None]
    np.save(tmp_path / "calib.npy", crops.astype(np.float32))
    result = convert(_sigmoid_net(tmp_path / "textmap.onnx"), "onnx", "fp32,int8,w8a16",
                     calib=str(tmp_path / "calib.npy"), mask_threshold="maps=0.3", out=tmp_path / "o")
    manifest = json.loads(result.manifest_path.read_text())
    assert manifest["options"]["mask_thresholds"] == {"maps": 0.3}
    fids = {}
    for art in manifest["artifacts"]:
        (out,) = art["fidelity"]["outputs"]
        fids[art["precision"]] = fid = out["fidelity"]
        assert out["kind"] == "mask" and fid["mask_threshold"] == 0.3, out
        assert fid["regions"] >= 20 and fid["region_recall"] is not None and fid["cosine"] > 0.9
    assert fids["fp32"]["passed"] and fids["w8a16"]["passed"], (fids["fp32"]["failures"], fids["w8a16"]["failures"])
    # int8's one scale for the pre-sigmoid logits moves region edges near the cut; w8a16 keeps nearly all of them
    assert fids["w8a16"]["region_recall"] > fids["int8"]["region_recall"] and fids["int8"]["mask_agreement"] > 0.95
