"""`edgekit.convert(model, ...)`: a model file, or the model object a notebook holds, to validated artifacts.

A path goes straight to the conversion pipeline (edgekit.conversion.pipeline.convert), as `edgekit convert`
does. A model held in memory (a torch.nn.Module, an ExportedProgram, a Keras model, a tf.Module or
tf.function, an onnx.ModelProto) is first written into the output folder in its file form
(edgekit.sources.memory: `OUT/source/`), and that file is converted: same plan, validation and manifest as
the saved file would give, and a run anyone can repeat from the files. Calibration and held-out data given as
numpy arrays are written there too, as the .npy/.npz that `--calib` and `--val` read. Everything the request can
be judged on (option names and values, targets, precisions, calibration) is judged before anything is written.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgekit.api.progress import reporter
from edgekit.core.errors import UsageError

if TYPE_CHECKING:
    from edgekit.api.result import Conversion

DEFAULT_NAME = "model"


def convert(model: Any, targets: str | list[str] | None = None, quantize: str | list[str] | None = None, *,
            example_inputs: Any = None, name: str | None = None, quiet: bool = False, **options: Any) -> Conversion:
    """Convert MODEL to every target and precision asked for, validate each artifact against it, write the manifest.

    MODEL: a model file or folder (.pt2, TorchScript, .onnx, .keras, .h5, a SavedModel, .tflite), or the model
    itself: a torch.nn.Module (with EXAMPLE_INPUTS, a tensor or tuple of them, or `input_shape=`), a
    torch.export.ExportedProgram, a keras.Model, a tf.Module / tf.function / concrete function, or an
    onnx.ModelProto. A model in memory is written into `OUT/source/` (NAME, default "model", names it and its
    artifacts) and converted from there. TARGETS and QUANTIZE: comma lists or lists ("onnx,tflite",
    "fp32,int8"). OPTIONS: `edgekit convert`'s options by name (`out`, `calib`, `input_shape`, `force`, ...);
    `calib` and `val` (held-out data apart from the calibration's) may also be a numpy array of samples, an (x, y)
    pair with labels, or a dict of arrays by input name. QUIET: no progress display.

    Returns a Conversion: the artifacts (`result["tflite", "int8"]`), the manifest, the Edge TPU state.
    Raises edgekit errors (UsageError for bad input, before anything is written; FidelityError with
    `strict=True` when an artifact misses its thresholds, its `result` the Conversion).
    """
    from edgekit.api.result import Conversion
    from edgekit.conversion.execute import ConvertResult
    from edgekit.conversion.options import API_NAMES, ConvertOptions
    from edgekit.conversion.outdir import output_lock
    from edgekit.conversion.pipeline import convert as run_pipeline
    from edgekit.conversion.pipeline import convert_request
    from edgekit.conversion.plan import check_request
    from edgekit.core.errors import FidelityError
    from edgekit.sources import memory

    kind = memory.memory_kind(model)
    keyword = {API_NAMES.get(k, k): k for k in options}  # option field -> the keyword it was given as
    arrays = memory.calibration_arrays(options.get(keyword["calib"])) if "calib" in keyword else None
    held = memory.calibration_arrays(options.get(keyword["val"]), "val") if "val" in keyword else None
    if kind is None:
        memory.check_inputs(None, example_inputs, None)
    if kind is None and name is not None:
        raise UsageError("name= names a model held in memory; a file's artifacts are named after the file.",
                         hint="Leave it out, or rename the file.")
    try:
        with reporter(quiet, "convert") as say:
            if kind is None and arrays is None and held is None:  # a file, nothing in memory: as the CLI runs it
                return Conversion.of(run_pipeline(model, targets, quantize, progress=say, **options))
            given = dict(options)
            if arrays is not None:
                given[keyword["calib"]] = "in-memory arrays"  # judged as given; written below
            if held is not None:
                given[keyword["val"]] = "in-memory held-out arrays"
            requested = ConvertOptions.from_keywords(**given, **_targets(targets, quantize))
            wanted = check_request(requested)  # names, values, calibration: before anything is written
            memory.check_inputs(kind, example_inputs, requested.input_shape)
            if kind and requested.reparameterize:
                memory.refuse_reparameterize(kind)
            stem = memory.check_name(name or DEFAULT_NAME) if kind else _stem(Path(model))
            out_dir = Path(requested.out_dir) if requested.out_dir else Path("edgekit-out") / stem
            with output_lock(out_dir):
                memory.refuse_earlier(out_dir, requested.force)
                if kind:
                    say(f"writing the {kind} model to {memory.source_folder(out_dir)} ...")
                staged = memory.write_source(
                    model, kind, out_dir, stem, example_inputs=example_inputs,
                    input_shape=requested.input_shape, calib=arrays, signature=requested.signature,
                    reparameterize=bool(kind and requested.reparameterize), val=held)
                # the request as judged above, pointing at what was just written: not parsed or judged again
                run = dataclasses.replace(
                    requested, out_dir=out_dir,
                    input_shape=None if staged.consumed_input_shape else requested.input_shape,
                    calib=str(staged.calibration) if staged.calibration is not None else requested.calib,
                    val=str(staged.validation) if staged.validation is not None else requested.val)
                return Conversion.of(convert_request(staged.model or model, run, say, wanted=wanted))
    except FidelityError as exc:  # --strict: the outputs were written; the error carries the result, as the API's
        if isinstance(exc.result, ConvertResult):
            exc.result = Conversion.of(exc.result)
        raise


def _targets(targets: str | list[str] | None, quantize: str | list[str] | None) -> dict[str, Any]:
    return {k: v for k, v in (("targets", targets), ("quantize", quantize)) if v is not None}


def _stem(path: Path) -> str:
    """The name a file's artifacts are called after (edgekit.conversion.plan.stem_of, before loading)."""
    return path.name if path.is_dir() else path.stem


__all__ = ["DEFAULT_NAME", "convert"]
