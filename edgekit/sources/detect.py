"""Tell what a model file is from its content, not its name.

Kinds: torch-exported (.pt2 ExportedProgram), torchscript, torch-zip (a torch.save archive: a
state_dict, a checkpoint dict or a pickled module; the torch loader tells which), onnx, keras
(Keras 3 archive), h5 (legacy Keras HDF5), savedmodel (folder).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from edgekit.errors import UnsupportedModel, UsageError

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
ZIP_MAGIC = b"PK\x03\x04"

# kind -> family (the loader in edgekit.sources.LOADERS that reads it)
FAMILY = {
    "torch-exported": "torch",
    "torchscript": "torch",
    "torch-zip": "torch",
    "torch-legacy": "torch",
    "onnx": "onnx",
    "keras": "keras",
    "h5": "keras",
    "savedmodel": "savedmodel",
}


def _zip_kind(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except zipfile.BadZipFile as exc:
        raise UnsupportedModel(
            f"{path} looks like a zip archive but cannot be read ({exc}); the file is truncated or corrupt.",
            hint="Re-save or re-download the model file.",
        ) from exc
    base = {n.split("/", 1)[-1] for n in names}
    if "config.json" in names and any(n.startswith("model.weights") for n in names):
        return "keras"
    if any(n.endswith("serialized_exported_program.json") or n.endswith("models/model.json")
           or n.endswith(".json") and "/models/" in n for n in names) or "archive_format" in base:
        return "torch-exported"
    if any("/code/" in n for n in names) or "constants.pkl" in base:
        return "torchscript"
    if "data.pkl" in base:
        return "torch-zip"
    raise UnsupportedModel(
        f"{path} is a zip archive but not a model edgekit knows (no PyTorch or Keras layout inside).",
        hint="Supported: .pt2 (torch.export.save), TorchScript .pt, torch.save state_dict, .keras, .h5, "
        ".onnx, SavedModel folders.",
    )


def _looks_like_onnx(head: bytes) -> bool:
    # ModelProto starts with field 1 (ir_version, varint: 0x08) and usually producer_name (0x12);
    # the full parse happens in the loader.
    return len(head) > 2 and head[0] == 0x08 and head[1] < 0x80


def detect(path: str | Path) -> str:
    """The kind of the model at PATH, or a UsageError / UnsupportedModel saying what is wrong."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"No such file or folder: {p}.", hint="Check the path (it is relative to the current folder).")
    if p.is_dir():
        if (p / "saved_model.pb").is_file() or (p / "saved_model.pbtxt").is_file():
            return "savedmodel"
        raise UnsupportedModel(
            f"{p} is a folder but not a TensorFlow SavedModel (no saved_model.pb inside).",
            hint="Pass a model file, or the SavedModel folder itself (the one holding saved_model.pb).",
        )
    try:
        with open(p, "rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise UsageError(f"Cannot read {p}: {exc.strerror}.") from exc
    if not head:
        raise UnsupportedModel(f"{p} is empty (0 bytes).", hint="Re-save or re-download the model file.")
    if head.startswith(ZIP_MAGIC):
        return _zip_kind(p)
    if head.startswith(HDF5_MAGIC):
        return "h5"
    if head[:2] == b"\x80\x02" or head[:1] == b"\x80" and p.suffix in (".pt", ".pth", ".bin"):
        return "torch-legacy"  # torch.save(..., _use_new_zipfile_serialization=False): a raw pickle
    if p.suffix.lower() == ".onnx" or _looks_like_onnx(head):
        return "onnx"
    raise UnsupportedModel(
        f"{p} is not a model file edgekit recognises (first bytes: {head[:8]!r}).",
        hint="Supported: .pt2 (torch.export.save), TorchScript .pt, torch.save state_dict, .onnx, .keras, .h5, "
        "SavedModel folders.",
    )
