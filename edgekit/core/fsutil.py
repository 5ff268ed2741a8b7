"""Atomic file writes and publishing (the output lock and staging folder: edgekit.conversion.outdir).

Every artifact and manifest is written to a temporary name in the destination folder, fsynced,
then moved into place with os.replace: a reader never sees half a file, and an interrupted run
leaves the previous file intact.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO


def cache_dir() -> Path:
    """Where edgekit caches facts: $EDGEKIT_CACHE_DIR, else $XDG_CACHE_HOME/edgekit, else ~/.cache/edgekit."""
    if os.environ.get("EDGEKIT_CACHE_DIR"):
        return Path(os.environ["EDGEKIT_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "edgekit"


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def sha256_tree(folder: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    """One digest for a folder (a SavedModel): every file's relative path and content, in sorted order.

    The one folder digest of edgekit: a manifest's source sha256 and a ProfileResult's artifact
    sha256 for the same folder are equal, so either can be checked against the other.
    """
    root = Path(folder)
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(root)).encode() + b"\0")
        with open(f, "rb") as fh:
            while block := fh.read(chunk):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def sha256_path(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes, or `sha256_tree` of a folder. A file with companions (an OpenVINO IR's .bin,
    edgekit.core.formats.companions) is digested with them, in order: the IR is one artifact, and a changed .bin
    is a changed model. The one digest of an artifact: the manifest's and a ProfileResult's agree."""
    from edgekit.core.formats import companions

    p = Path(path)
    if p.is_dir():
        return sha256_tree(p)
    others = companions(p)
    if not others:
        return sha256_file(p)
    h = hashlib.sha256()
    for f in (p, *others):
        h.update(sha256_file(f).encode() + b"\0")
    return h.hexdigest()


def size_path(path: str | os.PathLike[str]) -> int:
    """Bytes of a file (with its companions: an IR's .bin), or of every file under a folder."""
    from edgekit.core.formats import companions

    p = Path(path)
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return p.stat().st_size + sum(f.stat().st_size for f in companions(p))


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can fsync a directory
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _default_mode(path: str) -> None:
    """mkstemp creates 0600 files; give the result the mode a plain open() would (0666 less the umask)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def _write_atomically(path: Path, fill: Callable[[BinaryIO], object]) -> Path:
    """FILL a temp file in PATH's folder, fsync it, give it the usual mode, and rename it over PATH."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            fill(f)
            f.flush()
            os.fsync(f.fileno())
        _default_mode(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
    return path


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write DATA to PATH atomically (temp file in the same folder, fsync, os.replace)."""
    return _write_atomically(Path(path), lambda f: f.write(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def publish(staged: Path, final: Path) -> Path:
    """Move one finished file from the staging folder to its final name atomically."""
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(staged, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(staged, final)
    _fsync_dir(final.parent)
    return final
