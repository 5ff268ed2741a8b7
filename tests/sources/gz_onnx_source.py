"""A whole source kind in one file: the proof that adding a source takes a file and one table line.

`onnx-gz` is a gzip-compressed ONNX model (`model.onnx.gz`): gzip's magic bytes 1f 8b with an
ONNX ModelProto inside. Its loader decompresses the model into a temporary folder it owns (kept
alive by the Source, removed with it) and hands it to the ONNX loader, so the conversion chains
are the ONNX ones (family "onnx"). Registered by one line (SOURCES["onnx-gz"] =
"gz_onnx_source:SOURCE") in the test that uses it; nothing else in edgekit knows about it.

A gzip file is untrusted input like any model: a corrupt or truncated one is UnsupportedModel,
and one that decompresses past MAX_BYTES (a gzip bomb) is refused before it fills the disk.
"""

from __future__ import annotations

import dataclasses
import gzip
import tempfile
import zlib
from pathlib import Path

from edgekit.core.errors import UnsupportedModel
from edgekit.core.fsutil import sha256_file
from edgekit.core.sniff import looks_like_onnx
from edgekit.sources.base import LoadOptions, Source, SourceSpec

GZIP_MAGIC = b"\x1f\x8b"
MAX_BYTES = 1 << 30  # the most a model may decompress to
_BLOCK = 1 << 20
_DAMAGE = (gzip.BadGzipFile, EOFError, zlib.error)  # bad header or CRC, truncated stream, corrupt data
_HINT = "Re-compress the model (gzip -k model.onnx), or pass the .onnx itself."


def _damaged(path: Path, exc: BaseException) -> UnsupportedModel:
    why = str(exc).strip() or type(exc).__name__
    return UnsupportedModel(f"{path} looks like a gzip file but cannot be decompressed ({why}).", hint=_HINT)


def sniff(path: Path, head: bytes) -> str | None:
    """onnx-gz when the gzip stream starts like an ONNX ModelProto (reads 16 decompressed bytes)."""
    if not head.startswith(GZIP_MAGIC):
        return None
    try:
        with gzip.open(path, "rb") as f:
            inner = f.read(16)
    except _DAMAGE as exc:
        raise _damaged(path, exc) from exc
    return "onnx-gz" if looks_like_onnx(inner) else None


def decompress(path: Path, out: Path, limit: int | None = None) -> None:
    """Write PATH's decompressed bytes to OUT, refusing more than LIMIT (default MAX_BYTES) of them."""
    limit = MAX_BYTES if limit is None else limit
    written = 0
    try:
        with gzip.open(path, "rb") as src, open(out, "wb") as dst:
            while block := src.read(_BLOCK):
                written += len(block)
                if written > limit:
                    raise UnsupportedModel(
                        f"{path} decompresses to more than {limit / 2**20:.0f} MiB; edgekit stopped reading it "
                        "(a model that large, or a gzip bomb).", hint=_HINT)
                dst.write(block)
    except _DAMAGE as exc:
        raise _damaged(path, exc) from exc


def load(path: Path | None, opts: LoadOptions, kind: str) -> Source:
    """The ONNX source inside PATH, read from a decompressed copy in a folder this Source owns."""
    from edgekit.sources import onnx as onnx_source

    if path is None:
        raise UnsupportedModel("A gzip-compressed ONNX source needs a file.")
    work = tempfile.TemporaryDirectory(prefix="edgekit-onnx-gz-")
    try:
        inner = Path(work.name) / (path.name[:-3] if path.name.endswith(".gz") else f"{path.name}.onnx")
        decompress(path, inner)
        src = onnx_source.load(inner, opts, "onnx")
    except BaseException:
        work.cleanup()
        raise
    # the steps read the copy (src.path); the manifest names the user's file (origin) and its digest
    return dataclasses.replace(src, kind=kind, origin=path, sha256=sha256_file(path),
                               extra={**src.extra, "workdir": work})


SOURCE = SourceSpec(name="onnx-gz", family="onnx", kinds=("onnx-gz",), sniff=sniff, load=load, files=".onnx.gz",
                    dists=("onnx", "onnxruntime"))
