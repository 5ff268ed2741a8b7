"""What kind of model file this is, from its first bytes: the one home of edgekit's byte-level sniffers.

`inspect`, the source detector and the runtimes all need to tell a .tflite from an .onnx (and an
Edge TPU-compiled .tflite from a plain one) before any parser runs. These checks read a few bytes,
import nothing heavy and never raise on a missing or unreadable file, so any layer may call them.
A full parse (and its errors) stays with the readers.
"""

from __future__ import annotations

import re
from pathlib import Path

TFLITE_IDENTIFIER = b"TFL3"  # the flatbuffer file identifier at bytes 4..8 of every .tflite
# The one custom op the Edge TPU compiler leaves in a compiled model: the whole TPU part runs inside it.
EDGETPU_CUSTOM_OP = "edgetpu-custom-op"


def read_head(path: str | Path, n: int = 16) -> bytes:
    """The first N bytes of PATH, or b"" where it cannot be read (a folder, no such file, no permission)."""
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def is_tflite_head(head: bytes) -> bool:
    """True when HEAD (the file's first 8 bytes or more) carries the TFLite flatbuffer identifier."""
    return len(head) >= 8 and head[4:8] == TFLITE_IDENTIFIER


def is_tflite(path: str | Path) -> bool:
    """True when the file at PATH is a TFLite flatbuffer (bytes 4..8 are 'TFL3')."""
    return is_tflite_head(read_head(path, 8))


def looks_like_onnx(head: bytes) -> bool:
    """True when HEAD starts like a serialized ONNX ModelProto.

    A ModelProto starts with field 1 (ir_version, varint: 0x08) and a small version number; the full
    parse, which can still refuse the file, happens in the loader.
    """
    return len(head) > 2 and head[0] == 0x08 and head[1] < 0x80


# An OpenVINO IR's graph file: an XML document whose root element is <net ...>, before which only a UTF-8 BOM,
# whitespace, the XML declaration and comments may stand. A document type (<!DOCTYPE, the only place entities
# can be declared) does not match, so a file that could ask a parser to expand entities is never taken for an IR.
_IR_HEAD = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*(?:<\?xml[^<>]{0,256}\?>\s*)?"
                      rb"(?:<!--(?:(?!-->).){0,4096}-->\s*)*<net[\s>/]", re.S)


def is_openvino_ir(path: str | Path) -> bool:
    """True when PATH starts like an OpenVINO IR graph (an .xml with a <net> root); its .bin is not checked."""
    return bool(_IR_HEAD.match(read_head(path, 8192)))


def has_onnx_suffix(path: str | Path) -> bool:
    """True for a file named *.onnx (the ONNX protobuf has no magic number: looks_like_onnx is only a hint)."""
    p = Path(path)
    return p.suffix.lower() == ".onnx" and p.is_file()


def is_edgetpu_model(path: str | Path) -> bool:
    """True when the .tflite at PATH holds a compiled Edge TPU subgraph (the custom op's name is in it)."""
    try:
        with open(path, "rb") as f:
            return EDGETPU_CUSTOM_OP.encode() in f.read()
    except OSError:
        return False


__all__ = [
    "EDGETPU_CUSTOM_OP",
    "has_onnx_suffix",
    "TFLITE_IDENTIFIER",
    "is_edgetpu_model",
    "is_openvino_ir",
    "is_tflite",
    "is_tflite_head",
    "looks_like_onnx",
    "read_head",
]
