"""The .param reader: layers and blobs, the sniffer, renaming blobs after the source's tensors, hostile text."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.core.errors import UnsupportedModel
from edgekit.ncnn.param import is_ncnn_param, parse_text, read_param, rename
from tests.ncnn.tiny_ncnn import PARAM


def test_parses_layers_blobs_and_params() -> None:
    p = parse_text(PARAM)
    assert [layer.type for layer in p.layers] == ["Input", "Convolution", "ReLU", "Pooling", "Flatten",
                                                  "InnerProduct"]
    assert p.input_names() == ["in0"] and p.output_names() == ["out0"]
    conv = p.layers[1]
    assert conv.bottoms == ["in0"] and conv.tops == ["1"] and conv.int_param(6) == 36 and conv.int_param(11) == 3
    assert p.input_shape(p.inputs[0]) is None  # pnnx writes no shape


def test_values_floats_and_arrays() -> None:
    p = parse_text("7767517\n1 1\nClip c 0 1 x 0=-1.000000e+00 1=6.0 -23302=3,1,2,3\n")
    layer = p.layers[0]
    assert layer.params[0] == -1.0 and layer.params[1] == 6.0 and layer.array_param(2) == [1, 2, 3]


def test_rename_writes_names_and_input_shape() -> None:
    text = rename(PARAM, {"in0": "image", "out0": "logits"}, {"image": [1, 1, 28, 28]})
    p = parse_text(text)
    assert p.input_names() == ["image"] and p.output_names() == ["logits"]
    assert p.layers[1].bottoms == ["image"]
    assert p.input_shape(p.inputs[0]) == [1, 1, 28, 28]
    again = parse_text(rename(text, {}, {"image": [1, 10]}))  # a rank-2 input: w only, the old shape replaced
    assert again.input_shape(again.inputs[0]) == [1, 10]


@pytest.mark.parametrize("bad", ["has space", "x" * 256, ""])
def test_rename_refuses_names_ncnn_cannot_hold(bad: str) -> None:
    with pytest.raises(UnsupportedModel, match="cannot be an ncnn blob name"):
        rename(PARAM, {"in0": bad})


def test_rename_refuses_a_collision() -> None:
    with pytest.raises(UnsupportedModel, match="already the name of another blob"):
        rename(PARAM, {"in0": "3"})


def test_sniffer(tmp_path: Path) -> None:
    (tmp_path / "a.param").write_text(PARAM)
    (tmp_path / "b.param").write_text("7767518\n")
    (tmp_path / "c.param").write_bytes(b"\x00\x01")
    assert is_ncnn_param(tmp_path / "a.param")
    assert not is_ncnn_param(tmp_path / "b.param") and not is_ncnn_param(tmp_path / "c.param")
    assert not is_ncnn_param(tmp_path / "missing.param")


@pytest.mark.parametrize(("text", "said"), [
    ("7767518\n1 1\n", "magic"),
    ("7767517\n", "counts are missing"),
    ("7767517\nx y\n", "second line"),
    ("7767517\n999999999 1\n", "more than edgekit reads"),
    ("7767517\n2 2\nInput in0 0 1 in0\n", "truncated"),
    ("7767517\n1 1\nInput in0 0 1 in0\nReLU r 1 1 in0 y\n", "more layers"),
    ("7767517\n1 1\nReLU r 5 1 x\n", "names fewer blobs"),
    ("7767517\n1 1\nReLU r x 1 a b\n", "a layer line"),
    ("7767517\n1 1\nReLU r 1 1 a b 0=abc\n", "not a number"),
    ("7767517\n1 1\nReLU r 1 1 a b 99=1\n", "out of ncnn's range"),
    ("7767517\n1 1\nReLU r 1 1 a b -23300=5,1\n", "declares 5 values"),
    ("7767517\n1 1\nReLU r 1 1 a b junk\n", "not an id=value"),
    ("7767517\n1 1\nReLU " + "n" * 300 + " 1 1 a b\n", "longer than 255"),
])
def test_malformed_text_is_a_named_error(text: str, said: str) -> None:
    with pytest.raises(UnsupportedModel, match=said):
        parse_text(text)


def test_binary_and_huge_files_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = tmp_path / "m.param"
    binary.write_bytes(b"7767517\n\xff\xfe")
    with pytest.raises(UnsupportedModel, match="not text"):
        read_param(binary)
    monkeypatch.setattr("edgekit.ncnn.param.MAX_BYTES", 4)
    with pytest.raises(UnsupportedModel, match="more than"):
        read_param(binary)
