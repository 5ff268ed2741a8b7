"""The .bin walk: each layer's weights by dtype, the stored precision, a short file or an unknown layer."""

from __future__ import annotations

from pathlib import Path

from edgekit.ncnn.param import parse_text
from edgekit.ncnn.weights import stored_precision, walk
from tests.ncnn.tiny_ncnn import PARAM, weights_bytes


def test_walks_fp32_and_fp16_weights(tmp_path: Path) -> None:
    layers = parse_text(PARAM).layers
    weights, biases = 36 + 6760, 4 + 10
    for fp16, dtype in ((False, "float32"), (True, "float16")):
        path = tmp_path / f"{dtype}.bin"
        path.write_bytes(weights_bytes(fp16))
        found = walk(layers, path)
        assert found.complete and found.read_bytes == path.stat().st_size
        if fp16:  # the weights in fp16 after their tags, the biases raw float32
            assert found.by_dtype == {"float16": {"count": weights, "bytes": weights * 2 + 8},
                                      "float32": {"count": biases, "bytes": biases * 4}}
        else:
            assert found.by_dtype == {"float32": {"count": weights + biases, "bytes": (weights + biases) * 4 + 8}}
        assert set(found.by_layer) == {"conv_0", "fc_0"}  # the layers that hold weights, no other
        assert stored_precision(layers, path) == ("fp16" if fp16 else "fp32")


def test_a_short_file_or_an_unknown_layer_stops_the_walk(tmp_path: Path) -> None:
    layers = parse_text(PARAM).layers
    short = tmp_path / "short.bin"
    short.write_bytes(weights_bytes(False)[:100])
    found = walk(layers, short)
    assert not found.complete and "ends inside" in (found.stopped_at or "")
    odd = parse_text(PARAM.replace("ReLU                     relu_0", "MysteryOp                relu_0"))
    full = tmp_path / "full.bin"
    full.write_bytes(weights_bytes(False))
    found = walk(odd.layers, full)
    assert found.stopped_at == "MysteryOp relu_0" and found.read_bytes == 4 + 36 * 4 + 16
