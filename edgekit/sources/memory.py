"""Models held in memory, written in their file form so that they go the file route (`edgekit.convert(model)`).

A notebook user holds a `torch.nn.Module`, a Keras model or an `onnx.ModelProto`, not a file. Rather than a
second conversion path beside the file one, the object is written into the run's output folder in the form
the file route reads (a torch.export `.pt2`, a `.keras` archive, a SavedModel folder, an `.onnx`), and that
file is converted as any other: the same loader, plan, validation and manifest, and a run that can be
repeated from the files alone (`edgekit convert OUT/source/model.pt2`). Nothing is pickled.

The folder `OUT/source/` holds the written model, any calibration arrays given as numpy arrays, and
`source.json` saying what was written from what. It is published whole (built in a hidden folder beside
it, then renamed into place), so an interrupted write leaves no half model; an earlier run's folder is
replaced only with `force`, as every output is.

Which kind an object is, is judged from its class's modules (no framework is imported to say "wrong type").
The writers, one per framework, are edgekit.sources.memory_writers.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from edgekit.core.errors import UsageError
from edgekit.core.fsutil import atomic_write_json
from edgekit.core.records import Record

SOURCE_FOLDER = "source"  # OUT/source/: the model as written, its calibration arrays, source.json
RECORD_FILE = "source.json"
ACCEPTED = ("a model file or folder path; a torch.nn.Module (with example_inputs= or input_shape=); a "
            "torch.export.ExportedProgram; a keras.Model; a tf.Module, tf.function or concrete function; an "
            "onnx.ModelProto")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")

# (class module prefix, class name) -> memory kind; the first class of the object's MRO that matches wins,
# so a Keras 3 model (a tf AutoTrackable too) is a Keras model, and a torch module a torch module
_KINDS: tuple[tuple[str, str, str], ...] = (
    ("torch.export", "ExportedProgram", "torch-exported-program"),
    ("torch.nn", "Module", "torch-module"),
    ("keras", "Model", "keras"),
    ("tf_keras", "Model", "keras"),
    ("onnx", "ModelProto", "onnx"),
    ("tensorflow", "ConcreteFunction", "tf-function"),
    ("tensorflow", "Function", "tf-function"),
    ("tensorflow", "Module", "tf-module"),
)


def memory_kind(model: Any) -> str | None:
    """None for a path (the file route); the kind of an in-memory model; UsageError naming what is accepted."""
    if isinstance(model, (str, os.PathLike)):
        return None
    for cls in type(model).__mro__:
        module = cls.__module__ or ""
        for prefix, name, kind in _KINDS:
            if cls.__name__ == name and (module == prefix or module.startswith(prefix + ".")):
                return kind
    raise UsageError(f"edgekit.convert() cannot take a {type(model).__module__}.{type(model).__qualname__}.",
                     hint=f"It takes {ACCEPTED}.")


def check_inputs(kind: str | None, example_inputs: Any, input_shape: list[int] | None) -> None:
    """UsageError before anything is written where KIND's writer cannot use (or needs) what was given."""
    if kind is None and example_inputs is not None:
        raise UsageError("example_inputs= is for a model held in memory; a model file records its inputs.",
                         hint="Leave it out (input_shape= fills a dynamic dimension of a file's input).")
    if kind == "torch-module" and example_inputs is None and not input_shape:
        raise UsageError("A torch.nn.Module is exported with torch.export, which needs an example input.",
                         hint="Pass example_inputs=(tensor,) or input_shape=(1, 3, 224, 224) (batch first, NCHW, as "
                         "the model is called).")
    items = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    if any(isinstance(x, np.ndarray) and x.dtype.hasobject for x in items):
        raise UsageError("example_inputs holds an array of Python objects; a model is exported with numbers.",
                         hint="Pass numeric arrays or tensors, e.g. np.zeros((1, 3, 224, 224), np.float32).")
    if kind in ("torch-exported-program", "keras", "onnx") and example_inputs is not None:
        raise UsageError(f"example_inputs= is for a torch.nn.Module or a tf.function; a {kind} model records its "
                         "inputs.", hint="Leave example_inputs out (input_shape= fills a dynamic dimension, as for "
                         "a file).")


def check_name(name: str) -> str:
    """NAME as the stem of the written model and its artifacts, or UsageError."""
    if not isinstance(name, str) or not _NAME.match(name) or name in (".", ".."):
        raise UsageError(f"name={name!r} cannot name a model file.",
                         hint="Use letters, digits, '_', '-' and '.', e.g. name='mnist_cnn'.")
    return name


@dataclass(frozen=True)
class ExampleInput(Record):
    """One example input the model was exported or traced with: its shape and dtype."""

    shape: list[int] = field(default_factory=list)
    dtype: str = ""


@dataclass(frozen=True)
class WrittenSource(Record):
    """`OUT/source/source.json`: what edgekit.convert() wrote for an in-memory model, and from what."""

    written_by: str = "edgekit.convert"
    kind: str = ""  # memory kind: torch-module, torch-exported-program, keras, tf-module, tf-function, onnx
    object: str = ""  # the object's class, module-qualified
    file: str | None = None  # the model as written, relative to the source folder (None: a path was given)
    how: str = ""  # how it was written ("torch.export.export + torch.export.save")
    example_inputs: list[ExampleInput] = field(default_factory=list)
    calibration: str | None = None  # calibration arrays given in memory, as written
    validation: str | None = None  # held-out arrays given in memory (val=), as written
    framework_version: str | None = None
    # reparameterize=True: the fused copy of the module, exported beside it (the model converted; `file`, the module
    # as given, stays the reference), and the methods called on how many modules
    fused: str | None = None
    fused_by: dict[str, int] = field(default_factory=dict)


@dataclass
class Written:
    """What a writer made inside the staging folder: the model's file or folder name, and how."""

    name: str
    how: str
    example_inputs: list[ExampleInput] = field(default_factory=list)
    framework_version: str | None = None
    consumed_input_shape: bool = False  # input_shape built the example inputs; the file now records it


Writer = Callable[[Any, Path, str, Any, list[int] | None, str], Written]

# memory kind -> its writer ("module:function" strings: the writers import this module's records)
WRITERS: dict[str, str] = {
    "torch-module": "edgekit.sources.memory_writers:write_torch_module",
    "torch-exported-program": "edgekit.sources.memory_writers:write_exported_program",
    "keras": "edgekit.sources.memory_writers:write_keras",
    "tf-module": "edgekit.sources.memory_writers:write_tf_module",
    "tf-function": "edgekit.sources.memory_writers:write_tf_function",
    "onnx": "edgekit.sources.memory_writers:write_onnx",
}


def source_folder(out_dir: Path) -> Path:
    return out_dir / SOURCE_FOLDER


def refuse_earlier(out_dir: Path, force: bool) -> None:
    """UsageError where writing OUT_DIR/source/ would overwrite what it must not.

    A finished earlier run (its manifest.json) is replaced only with FORCE, as every output is; a source
    folder edgekit.convert() wrote for a run that never finished is replaced; a `source/` folder it did
    not write (no source.json) is never touched.
    """
    folder = source_folder(out_dir)
    if folder.exists() and not (folder / RECORD_FILE).is_file():
        raise UsageError(f"{folder} exists and was not written by edgekit.convert(); edgekit does not overwrite it.",
                         hint="Pass out= another folder.")
    if not force and (out_dir / "manifest.json").exists():
        raise UsageError(f"{out_dir} already holds manifest.json from an earlier run; edgekit does not overwrite "
                         "outputs.", hint="Pass force=True to replace them, or out= to write elsewhere.")


class Staged(NamedTuple):
    """What write_source wrote: the model's path (None: a path was given), the calibration and held-out arrays'
    files (None where none were given in memory), and whether INPUT_SHAPE was consumed to build example inputs."""

    model: Path | None
    calibration: Path | None
    consumed_input_shape: bool
    validation: Path | None = None


def calibration_arrays(calib: Any, keyword: str = "calib") -> dict[str, np.ndarray] | None:
    """Calibration given in memory as arrays to write: x (an array), x and y (a pair), or one per input (a dict).

    UsageError for arrays that hold Python objects (a structured dtype's object field too): they could only be
    written pickled, and nothing is."""
    arrays: dict[str, np.ndarray] | None = None
    if isinstance(calib, np.ndarray):
        arrays = {"x": calib}
    elif isinstance(calib, tuple) and len(calib) == 2 and all(isinstance(a, np.ndarray) for a in calib):
        arrays = {"x": calib[0], "y": calib[1]}
    elif isinstance(calib, dict) and calib and all(isinstance(a, np.ndarray) for a in calib.values()):
        arrays = {str(k): v for k, v in calib.items()}
    if arrays is not None:
        if any(a.dtype.hasobject for a in arrays.values()):
            raise UsageError(f"{keyword}= arrays of Python objects cannot be written (only pickled, and edgekit "
                             "pickles nothing).", hint="Pass numeric arrays.")
        return arrays
    if calib is None or isinstance(calib, (str, os.PathLike)):
        return None
    raise UsageError(f"{keyword}= cannot be a {type(calib).__name__}.",
                     hint="Pass a path ('mnist', an image folder, a .npy/.npz), a numpy array of samples, an (x, y) "
                     "pair of arrays with labels, or a dict of arrays by input name.")


def _write_calibration(arrays: dict[str, np.ndarray], folder: Path, stem: str = "calibration") -> str:
    if list(arrays) == ["x"]:
        np.save(folder / f"{stem}.npy", np.ascontiguousarray(arrays["x"]), allow_pickle=False)
        return f"{stem}.npy"
    # np.savez(path, **arrays) as numpy writes it, without keywords: an input named "file" made savez raise
    # TypeError, and one named "allow_pickle" was taken as savez's flag and left out of the file
    with zipfile.ZipFile(folder / f"{stem}.npz", "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for k, v in arrays.items():
            with zf.open(f"{k}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.ascontiguousarray(v), allow_pickle=True)
    return f"{stem}.npz"


def write_source(model: Any, kind: str | None, out_dir: Path, name: str, *, example_inputs: Any = None,
                 input_shape: list[int] | None = None, calib: dict[str, np.ndarray] | None = None,
                 signature: str = "serving_default", reparameterize: bool = False,
                 val: dict[str, np.ndarray] | None = None) -> Staged:
    """Write MODEL (of memory KIND; None: it is a path, written are only the arrays), CALIB and VAL (held-out arrays)
    into OUT_DIR/source/. REPARAMETERIZE (a torch module only: `refuse_reparameterize` first) also writes its fused
    copy (`fused_twin`). The caller holds OUT_DIR's lock and has called `refuse_earlier`.
    """
    from edgekit.core.registry import resolve

    out_dir.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".edgekit-source-", dir=out_dir))
    umask = os.umask(0)
    os.umask(umask)
    stage.chmod(0o777 & ~umask)  # mkdtemp's 0700 is for a scratch folder; this one is published
    try:
        writer: Writer | None = resolve(WRITERS, kind, "in-memory model kind") if kind else None
        written = writer(model, stage, name, example_inputs, input_shape, signature) if writer else None
        fused, calls = None, {}
        if reparameterize and writer is not None:
            from edgekit.sources.torch_reparam import fused_copy

            module, counted = fused_copy(model)
            fused, calls = writer(module, stage, f"{name}.fused", example_inputs, input_shape, signature), dict(counted)
        calib_name = _write_calibration(calib, stage) if calib else None
        val_name = _write_calibration(val, stage, "validation") if val else None
        record = WrittenSource(kind=kind or "path", object=f"{type(model).__module__}.{type(model).__qualname__}",
                               file=written.name if written else None, how=written.how if written else "",
                               example_inputs=written.example_inputs if written else [], calibration=calib_name,
                               validation=val_name,
                               framework_version=written.framework_version if written else None,
                               fused=fused.name if fused else None, fused_by=calls)
        atomic_write_json(stage / RECORD_FILE, record.to_dict())
        _swap_in(stage, source_folder(out_dir))
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    folder = source_folder(out_dir)
    return Staged(folder / written.name if written else None, folder / calib_name if calib_name else None,
                  bool(written and written.consumed_input_shape), folder / val_name if val_name else None)


def refuse_reparameterize(kind: str | None) -> None:
    """UsageError before anything is written where reparameterize=True meets a model that is no torch module."""
    if kind == "torch-module":
        return
    from edgekit.sources.torch_reparam import refuse_without_module

    if kind == "torch-exported-program":
        raise refuse_without_module(kind)
    raise UsageError(f"reparameterize=True fuses a PyTorch module's branches; this is a {kind or 'model file'}.",
                     hint="Leave reparameterize out, or pass the torch.nn.Module (or its file with --model).")


def fused_twin(path: Path) -> tuple[Path, Counter[str]] | None:
    """(the fused copy edgekit.convert() wrote beside the ExportedProgram file PATH, the methods called), or None
    where PATH is not the model of such a source folder."""
    from edgekit.core.filedoc import as_dict, read_json

    record = path.parent / RECORD_FILE
    try:  # the one reader of files edgekit did not write this run: size cap, UTF-8, bounded nesting
        data = as_dict(read_json(record, "source record")) if record.is_file() else {}
    except UsageError:  # an unreadable record names no twin: --reparameterize is then refused for the .pt2
        return None
    if data.get("file") != path.name or not isinstance(data.get("fused"), str):
        return None
    twin = path.parent / Path(data["fused"]).name  # a name in this folder, never a path out of it
    by = data.get("fused_by")
    calls = by if isinstance(by, dict) else {}
    return (twin, Counter({str(k): int(v) for k, v in calls.items() if isinstance(v, int)})) if twin.is_file() else None


def _swap_in(stage: Path, dest: Path) -> None:
    """Put the finished STAGE folder at DEST in one rename; an earlier DEST is moved aside first, then removed."""
    old = None
    if dest.exists():
        old = dest.parent / f".edgekit-source-old-{os.getpid()}-{id(stage):x}"
        os.replace(dest, old)
    try:
        os.replace(stage, dest)
    except BaseException:
        if old is not None:
            with contextlib.suppress(OSError):
                os.replace(old, dest)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


__all__ = ["ACCEPTED", "RECORD_FILE", "SOURCE_FOLDER", "WRITERS", "ExampleInput", "Writer", "Written",
           "WrittenSource", "calibration_arrays", "check_inputs", "check_name", "fused_twin", "memory_kind",
           "refuse_earlier", "refuse_reparameterize", "source_folder", "write_source"]
