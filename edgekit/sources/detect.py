"""Tell what a model file is from its content, not its name, by asking each source in SOURCES.

Each source module's `sniff(path, head)` looks at the first bytes (and, for a zip, the archive's
name list) and claims a kind or passes; `detect` walks edgekit.sources.SOURCES in order and takes
the first claim. What no source claims gets one message here: missing, unreadable, empty, a
folder that is no SavedModel, a zip with no known layout inside, or bytes nobody recognises.

Built-in kinds: torch-exported (.pt2 ExportedProgram), torchscript, torch-zip (a torch.save archive:
a state_dict, a checkpoint dict or a pickled module; the torch loader tells which), torch-legacy,
keras (Keras 3 archive), h5 (legacy Keras HDF5), savedmodel (folder), onnx.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from edgekit.core.errors import EdgekitError, UnsupportedModel, UsageError
from edgekit.sources import family_of, source_specs
from edgekit.sources.base import SourceSpec

SNIFF_BYTES = 16  # how much of a file each sniff sees
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
ZIP_MAGIC = b"PK\x03\x04"


class _Families(Mapping[str, str]):
    """kind -> family, read from SOURCES on every lookup (so a source registered later is in it too)."""

    def __getitem__(self, kind: str) -> str:
        return family_of(kind)

    def __iter__(self) -> Iterator[str]:
        return iter([k for spec in source_specs() for k in spec.kinds])

    def __len__(self) -> int:
        return sum(len(spec.kinds) for spec in source_specs())


# kind -> family, for callers that index by kind (the runtimes); `family_of(kind)` says the same.
FAMILY: Mapping[str, str] = _Families()


def zip_names(path: Path) -> list[str]:
    """The names inside the zip archive at PATH; UnsupportedModel when it starts like a zip but cannot be read."""
    try:
        with zipfile.ZipFile(path) as zf:
            return zf.namelist()
    except zipfile.BadZipFile as exc:
        raise UnsupportedModel(
            f"{path} looks like a zip archive but cannot be read ({exc}); the file is truncated or corrupt.",
            hint="Re-save or re-download the model file.",
        ) from exc


def supported() -> str:
    """The "Supported: ..." hint, from the table."""
    return f"Supported: {', '.join(spec.files for spec in source_specs())}."


def detect_source(path: str | Path) -> tuple[SourceSpec, str]:
    """(the spec that claims PATH, the kind it claims), or a UsageError / UnsupportedModel saying what is wrong."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"No such file or folder: {p}.", hint="Check the path (it is relative to the current folder).")
    head = b""
    if not p.is_dir():
        try:
            with open(p, "rb") as f:
                head = f.read(SNIFF_BYTES)
        except OSError as exc:
            raise UsageError(f"Cannot read {p}: {exc.strerror}.") from exc
        if not head:
            raise UnsupportedModel(f"{p} is empty (0 bytes).", hint="Re-save or re-download the model file.")
    for spec in source_specs():
        kind = spec.sniff(p, head)
        if kind is not None:
            return spec, kind
    if p.is_dir():
        raise UnsupportedModel(
            f"{p} is a folder but not a TensorFlow SavedModel (no saved_model.pb inside).",
            hint="Pass a model file, or the SavedModel folder itself (the one holding saved_model.pb).",
        )
    if head.startswith(ZIP_MAGIC):
        raise UnsupportedModel(
            f"{p} is a zip archive but not a model edgekit knows (no PyTorch or Keras layout inside).",
            hint=supported(),
        )
    raise UnsupportedModel(f"{p} is not a model file edgekit recognises (first bytes: {head[:8]!r}).",
                           hint=supported())


def detect(path: str | Path) -> str:
    """The kind of the model at PATH, or a UsageError / UnsupportedModel saying what is wrong."""
    return detect_source(path)[1]


def is_torch_model(path: str | Path) -> bool:
    """Whether PATH is a PyTorch model (a .pt2, TorchScript or torch.save archive): the torch format's sniffer
    (edgekit.core.formats), so the runtimes recognise a source model without importing the sources."""
    try:
        return family_of(detect(path)) == "torch"
    except EdgekitError:
        return False


__all__ = ["FAMILY", "HDF5_MAGIC", "SNIFF_BYTES", "ZIP_MAGIC", "detect", "detect_source", "is_torch_model",
           "supported", "zip_names"]
