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
