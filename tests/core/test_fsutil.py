from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgekit.core.fsutil import atomic_write_bytes, atomic_write_json, publish, sha256_file


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    p = tmp_path / "a.bin"
    atomic_write_bytes(p, b"old")
    atomic_write_bytes(p, b"new content")
    assert p.read_bytes() == b"new content"
    assert [f.name for f in tmp_path.iterdir()] == ["a.bin"]  # no temp file left behind


def test_failed_write_keeps_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "m.json"
    atomic_write_json(p, {"v": 1})

    def boom(*_a: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_json(p, {"v": 2})
    assert p.read_text().strip().endswith("}") and '"v": 1' in p.read_text()
    assert sorted(f.name for f in tmp_path.iterdir()) == ["m.json"]


def test_publish_moves_file(tmp_path: Path) -> None:
    src = tmp_path / "s.bin"
    src.write_bytes(b"x" * 10)
    dst = publish(src, tmp_path / "d" / "s.bin")
    assert dst.read_bytes() == b"x" * 10 and not src.exists()
    assert len(sha256_file(dst)) == 64


def test_atomic_write_gives_normal_permissions(tmp_path: Path) -> None:
    p = atomic_write_bytes(tmp_path / "x.bin", b"1")
    umask = os.umask(0)
    os.umask(umask)
    assert (p.stat().st_mode & 0o777) == (0o666 & ~umask)


def test_an_openvino_ir_is_hashed_and_sized_with_its_weights(tmp_path) -> None:
    """FormatSpec.companions: the .bin belongs to the .xml; a changed .bin is a changed artifact."""
    from edgekit.core.formats import companions
    from edgekit.core.fsutil import sha256_file, sha256_path, size_path

    xml, binf = tmp_path / "m.int8.xml", tmp_path / "m.int8.bin"
    xml.write_bytes(b'<?xml version="1.0"?><net name="m" version="11"/>')
    assert companions(xml) == [] and sha256_path(xml) == sha256_file(xml)  # no .bin yet: the file alone
    binf.write_bytes(b"\x00" * 10)
    assert companions(xml) == [binf] and size_path(xml) == xml.stat().st_size + 10
    first = sha256_path(xml)
    assert first != sha256_file(xml)
    binf.write_bytes(b"\x01" * 10)
    assert sha256_path(xml) != first
    assert companions(tmp_path / "m.onnx") == []  # formats without companions
