"""What of an artifact goes to the device: the file itself and the files it needs beside it, nothing else.

- an ONNX model and the external-data files it names (model.onnx + model.onnx.data), each inside its folder;
- an OpenVINO IR: model.xml and its weights model.bin;
- a SavedModel folder: its regular files (no symbolic links: a link could point at anything on this machine);
- a .tflite or .pt2: the file alone.
A bundle is keyed by its content (sha256), so a device keeps one copy of it however often it is measured.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from edgekit.core.errors import UsageError
from edgekit.core.fsutil import sha256_file


@dataclass(frozen=True)
class Bundle:
    """An artifact's files: ROOT is the folder they sit in, `files` their paths relative to it (the artifact first)."""

    root: Path
    files: tuple[str, ...]
    main: str  # the path to pass to `edgekit profile`, relative to the bundle's folder on the device
    sums: tuple[str, ...]  # the files' sha256, in the same order

    @property
    def key(self) -> str:
        """The cache key: the artifact's own sha256 when it is one file, else one digest of names and contents."""
        if len(self.files) == 1:
            return self.sums[0]
        h = hashlib.sha256()
        for name, digest in zip(self.files, self.sums, strict=True):
            h.update(f"{name}\0{digest}\0".encode())
        return h.hexdigest()

    @property
    def size(self) -> int:
        return sum((self.root / f).stat().st_size for f in self.files)


def bundle(path: str | Path) -> Bundle:
    """The files of the artifact at PATH, checked: regular files inside its folder, nothing a link leads to."""
    p = Path(path)
    if p.is_symlink() or not p.exists():
        raise UsageError(f"{p}: no such artifact (or a symbolic link, which edgekit does not copy to a device).",
                         hint="Pass the artifact file (or SavedModel folder) itself.")
    root = p.parent
    if p.is_dir():
        files = sorted(str(f.relative_to(root)) for f in p.rglob("*") if f.is_file() and not _linked(f, p))
        if not files:
            raise UsageError(f"{p} is an empty folder.", hint="Pass a SavedModel folder or a model file.")
        main = p.name
    else:
        files = [p.name, *(_sidecars(p))]
        main = p.name
    return Bundle(root=root, files=tuple(files), main=main, sums=tuple(sha256_file(root / f) for f in files))


def _linked(f: Path, top: Path) -> bool:
    """Whether F, or a folder between it and TOP, is a symbolic link."""
    return any(q.is_symlink() for q in (f, *f.parents) if q != top and top in q.parents)


def _sidecars(p: Path) -> list[str]:
    """The files that travel with P: its format's companions (an OpenVINO IR's .bin: edgekit.core.formats) and an
    ONNX model's external data; never a symbolic link."""
    from edgekit.core.formats import companions

    if p.suffix.lower() == ".onnx":
        return _onnx_data(p)
    return [c.name for c in companions(p) if not c.is_symlink()]


def _onnx_data(p: Path) -> list[str]:
    """The external-data files an ONNX model names (read with onnx where it is here, else the usual name)."""
    try:
        import onnx
        from onnx.external_data_helper import ExternalDataInfo, _get_all_tensors, uses_external_data
    except ImportError:
        guess = p.with_name(p.name + ".data")
        return [guess.name] if guess.is_file() and not guess.is_symlink() else []
    from edgekit.core.border import vendor_errors

    with vendor_errors("onnx", error=UsageError, what=f"{p.name} is not a readable ONNX model"):
        model = onnx.load(str(p), load_external_data=False)
    names: list[str] = []
    folder = p.parent.resolve()
    for tensor in _get_all_tensors(model):
        if uses_external_data(tensor):
            loc = ExternalDataInfo(tensor).location
            target = (folder / loc).resolve()
            if Path(loc).is_absolute() or folder not in target.parents or (folder / loc).is_symlink():
                raise UsageError(f"{p} refers to external data '{loc}' outside its own folder; edgekit copies "
                                 "nothing from outside the model's folder to a device.",
                                 hint="Keep the .onnx and its data file together in one folder.")
            if target.is_file() and loc not in names:
                names.append(loc)
    return names


def write_tar(bundles: list[Bundle], out: IO[bytes]) -> None:
    """A tar stream of KEY/<files> and KEY/SHA256SUMS for each bundle, written to OUT (ssh's stdin)."""
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for b in bundles:
            for name in b.files:
                tar.add(b.root / name, arcname=f"{b.key}/{name}", recursive=False)
            sums = "".join(f"{d}  {n}\n" for n, d in zip(b.files, b.sums, strict=True)).encode()
            info = tarfile.TarInfo(f"{b.key}/SHA256SUMS")
            info.size = len(sums)
            tar.addfile(info, io.BytesIO(sums))


__all__ = ["Bundle", "bundle", "write_tar"]
