"""The byte-level sniffers of edgekit.core.sniff: what a file is from its first bytes, never an exception."""

from __future__ import annotations

from tflite_builder import Graph, conv_chain

from edgekit.core import sniff


def test_tflite_and_edgetpu_models(tmp_path):
    plain = conv_chain(tmp_path / "m.tflite")
    assert sniff.is_tflite(plain) and not sniff.is_edgetpu_model(plain)
    g = Graph()
    x = g.tensor("input", [1, 8, 8, 3], "uint8")
    y = g.tensor("output", [1, 10], "uint8")
    g.op(sniff.EDGETPU_CUSTOM_OP, [x], [y])
    compiled = g.write(tmp_path / "m_edgetpu.tflite", [x], [y])
    assert sniff.is_tflite(compiled) and sniff.is_edgetpu_model(compiled)


def test_onnx_head_and_foreign_files(tmp_path):
    assert sniff.looks_like_onnx(b"\x08\x08\x12\x07pytorch")  # ir_version 8, then producer_name
    assert not sniff.looks_like_onnx(b"\x08")
    assert not sniff.looks_like_onnx(b"PK\x03\x04")
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a model\n")
    assert not sniff.is_tflite(text) and not sniff.is_tflite_head(b"TFL3")


def test_missing_and_folders_are_just_no(tmp_path):
    missing = tmp_path / "missing.tflite"
    assert sniff.read_head(missing) == b"" and sniff.read_head(tmp_path) == b""
    assert not sniff.is_tflite(missing) and not sniff.is_edgetpu_model(missing) and not sniff.is_tflite(tmp_path)
