"""`edgekit inspect` of an ncnn model: layers, shapes, MACs, parameters from the .bin, without ncnn."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.core.errors import UnsupportedModel
from edgekit.inspect.ncnn import describe
from tests.ncnn.tiny_ncnn import PARAM, write_model


def test_layers_shapes_macs_and_params(tmp_path: Path) -> None:
    report = describe(write_model(tmp_path))
    d = report.to_dict()
    assert d["format"] == "ncnn" and d["precision"] == "fp32"
    assert [t["name"] for t in d["inputs"]] == ["image"] and d["inputs"][0]["shape"] == [1, 1, 28, 28]
    assert d["outputs"] == [{"name": "logits", "shape": [1, 10], "dtype": "float32", "quantization": None}]
    assert [o["op"] for o in d["ops"]] == ["Convolution", "ReLU", "Pooling", "Flatten", "InnerProduct"]
    assert d["macs"] == 36 * 26 * 26 + 6760
    assert d["params"]["count"] == 36 + 6760 + 14
    assert "unknown_shapes" not in d


def test_fp16_weights_and_an_unreadable_layer(tmp_path: Path) -> None:
    assert describe(write_model(tmp_path, fp16=True)).precision == "fp16"
    odd = PARAM.replace("Pooling                  pool_0", "Mystery                  pool_0")
    d = describe(write_model(tmp_path / "odd", param=odd)).to_dict()
    assert d["params"]["by_dtype"]["unread"]["bytes"] == 6760 * 4 + 4 + 40  # the inner product after it
    assert d["unknown_shapes"] == 2 and "fc_0" not in d.get("description", "")  # InnerProduct counts unshaped


def test_missing_bin_is_a_named_error(tmp_path: Path) -> None:
    path = write_model(tmp_path)
    path.with_suffix(".bin").unlink()
    with pytest.raises(UnsupportedModel, match="m.ncnn.bin is not beside it"):
        describe(path)
