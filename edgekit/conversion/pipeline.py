"""convert(source, targets, precisions, **options): load the source, pick calibration and validation data,
plan, execute. The API behind `edgekit convert` and `edgekit.convert`.

The planning (edgekit.conversion.plan) and the running, validating and publishing (edgekit.conversion.execute) live in
modules of their own; this one only loads what they need and hands it over.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgekit.conversion.execute import ConvertResult, execute
from edgekit.conversion.options import API_NAMES, ConvertOptions  # API_NAMES: re-exported, as before
from edgekit.conversion.plan import check_modules, check_outputs, check_request, make_plan, stem_of
from edgekit.core.errors import InternalError, UsageError
from edgekit.measure import run_meter
from edgekit.sources.base import Source
from edgekit.targets import get_target

if TYPE_CHECKING:
    import numpy as np


def _factory_family(spec: str) -> str:
    """torch or keras: which framework the --model factory builds with (judged by its classes, no import)."""
    from edgekit.sources.factory import load_factory

    obj = load_factory(spec)()
    roots = {c.__module__.split(".")[0] for c in type(obj).__mro__}
    if "torch" in roots:
        return "torch"
    if roots & {"keras", "tf_keras", "tensorflow"}:
        return "keras"
    raise UsageError(f"--model {spec} built a {type(obj).__name__}, neither a torch.nn.Module nor a Keras model.")


def convert(
    source: str | Path | None,
    targets: str | list[str] | None = None,
    quantize: str | list[str] | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    **options: Any,
) -> ConvertResult:
    """Convert SOURCE to every (target, precision) asked for; validate each artifact; write the manifest.

    TARGETS and QUANTIZE default to ConvertOptions' (onnx, fp32). OPTIONS are the options declared in
    `edgekit.conversion.options` (and each target's file), by field name or by their flag's name (`out_dir` or
    `out`, `factory` or `model`, `output_kinds` or `output_kind`), the ones `edgekit convert --help`
    lists; a string is parsed as on the command line, a mistyped name gets a did-you-mean. Raises
    EdgekitError subclasses for bad input (before anything is written), FidelityError when `strict`
    and an artifact misses its thresholds (after the outputs are written, so they can be inspected).
    The Edge TPU "written but not compiled" outcome is `result.not_compiled`.
    """
    if targets is not None:  # given both ways (targets and target=...), from_keywords says so
        options["targets"] = targets
    if quantize is not None:
        options["quantize"] = quantize
    started = time.perf_counter()
    with run_meter.metering():  # the process tree's peak memory and the phases' seconds, for the manifest
        options_ = ConvertOptions.from_keywords(**options)  # checked against the declarations, strings parsed
        return convert_request(source, options_, progress, started)


def convert_request(source: str | Path | None, options_: ConvertOptions, progress: Callable[[str], None] | None,
                    started: float | None = None, wanted: list[tuple[str, list[str]]] | None = None
                    ) -> ConvertResult:
    """`convert` for a request already parsed (OPTIONS_) and, where WANTED is given, already judged by
    `check_request` (the Python API judges a model held in memory before it writes it): nothing is parsed or
    checked twice."""
    if run_meter.current() is None:
        with run_meter.metering():
            return convert_request(source, options_, progress, started, wanted)
    from edgekit.core.errors import FidelityError
    from edgekit.sources import LoadOptions
    from edgekit.sources.detect import FAMILY, detect
    from edgekit.sources.probe import load_source

    started = time.perf_counter() if started is None else started
    say = progress or (lambda _m: None)
    from edgekit.core.sniff import is_tflite

    # option values are judged before the model is loaded (a .tflite, taken as it is, needs no calibration)
    if wanted is None:
        wanted = check_request(options_, "tflite" if source and is_tflite(source) else None)
    model, input_shape = options_.factory, options_.input_shape
    if source is None or str(source) == "":
        if not model:
            raise UsageError("No model given.", hint="Pass a model file, or --model package.module:factory to build "
                             "one in code (with --input-shape).")
        path, family = None, _factory_family(model)
        kind = f"{family}-factory"
        say(f"building the model with {model} ...")
    else:
        path = Path(source)
        kind = detect(path)
        family = FAMILY[kind]
        say(f"loading {path} ({kind}) ...")
    check_modules([target for target, _ in wanted], family)  # known from the family alone: before the load
    if options_.out_dir:  # an --out another run is writing into is refused before the model is loaded
        from edgekit.conversion.outdir import refuse_if_busy

        refuse_if_busy(options_.out_dir)
    # a precision may need a newer ONNX opset than the source's (per-channel int8 QDQ: 13): raised first
    opsets = [get_target(target).min_source_opset.get(p, 0) for target, made in wanted for p in made]
    load_opts = LoadOptions(factory=model, trust_model=options_.trust_model, input_shape=input_shape,
                            signature=options_.signature, input_shapes=options_.input_shapes, layout=options_.layout,
                            min_opset=max(opsets, default=0) or None, reparameterize=options_.reparameterize)
    with run_meter.phase("load"):
        src: Source = load_source(path, kind, load_opts)  # a file is probed in a child first: a crash stays there
    options_.out_dir = Path(options_.out_dir) if options_.out_dir else Path("edgekit-out") / stem_of(src)
    result = run(src, options_, say, started, wanted)
    if options_.strict and result.fidelity_failures:
        names = ", ".join(a.path for a in result.fidelity_failures)
        err = FidelityError(
            f"{names} missed the fidelity thresholds (--strict); outputs and manifest were written to "
            f"{result.manifest_path.parent} for inspection.",
            hint="See each artifact's fidelity.failures in manifest.json; try more or better --calib data, or a "
            "higher precision.",
        )
        err.result = result  # the CLI still prints the table
        raise err
    return result


def run(src: Source, options: ConvertOptions, say: Callable[[str], None], started: float | None = None,
        wanted: list[tuple[str, list[str]]] | None = None) -> ConvertResult:
    """Plan the conversion of a loaded source, pick its calibration and validation data, execute.

    WANTED: the request as `check_request` judged it (None: judged here). The output folder's lock is taken
    first and held to the manifest, so a second run into the same --out is refused before it spends time on
    calibration data and reference outputs (edgekit.conversion.outdir); earlier outputs are refused once, here.
    """
    from edgekit.conversion.outdir import output_lock

    out_dir = options.out_dir
    if out_dir is None:  # convert_request names the default folder after the loaded source, before calling here
        raise InternalError("pipeline.run() was given options without an out_dir.")
    with output_lock(out_dir), (run_meter.metering() if run_meter.current() is None else contextlib.nullcontext()):
        return _run(src, options, out_dir, say, started, wanted)


def _run(src: Source, options: ConvertOptions, out_dir: Path, say: Callable[[str], None], started: float | None,
         wanted: list[tuple[str, list[str]]] | None) -> ConvertResult:
    from edgekit.data.calibration import random_samples, split_for_conversion

    plan = make_plan(src, options, wanted)
    check_outputs(plan, out_dir)
    for change in src.changes:  # what the loader changed in its own copy (dims pinned, custom ops rewritten)
        say(f"source: {change}")
    for line in plan.describe():
        say(f"plan: {line}")
    shape = [options.batch if d <= 0 else d for d in src.input_shape]
    calib_x: np.ndarray | dict[str, np.ndarray] | None = None
    t_data = time.perf_counter()
    if src.inputs:  # several inputs: a .npz with one array per input name (edgekit.data.feeds)
        from edgekit.data.feeds import split_named

        named = split_named(options.calib, src.inputs, src.layout, calib_size=options.calib_size,
                            val_size=options.val_size, batch=options.batch, mean=options.mean, std=options.std,
                            val_spec=options.val)
        feeds, labels, inputs_name = named.held_out, named.labels, named.name
        calib_x = named.calibration  # every input by name: the steps feed each its own (StepContext)
        say(f"validation: {len(next(iter(feeds.values())))} samples of {inputs_name}, every input fed by name")
    elif options.calib or options.val:
        cal, val = split_for_conversion(options.calib, shape, src.layout, calib_size=options.calib_size,
                                        val_size=options.val_size, mean=options.mean, std=options.std,
                                        val_spec=options.val)
        calib_x = cal.x if cal is not None else None
        feeds, labels, inputs_name = {src.input_name: val.x}, val.y, val.name
        held = val.name if options.val else f"{len(val.x)} held-out samples"
        say(f"calibration: {len(cal.x)} samples of {cal.name}; validation: {held}" if cal is not None
            else f"validation: {held} (no calibration data)")
    else:
        val = random_samples(shape, min(options.val_size, 100))
        feeds, labels, inputs_name = {src.input_name: val.x}, val.y, val.name
        say(f"validation: {len(val.x)} random samples (pass --calib for real data and accuracy)")
    run_meter.add("calibration_data", time.perf_counter() - t_data)
    with run_meter.phase("reference"):
        ref = reference(src, feeds, labels, inputs_name, options)
    return execute(plan, calib_x, ref, say, started)


def reference(src: Source, feeds: dict[str, Any], labels: Any, inputs_name: str, options: ConvertOptions) -> Any:
    """The source's every output on the held-out FEEDS, with the kinds asked for and any label masks."""
    from edgekit.data.feeds import held_out_boxes, held_out_masks
    from edgekit.fidelity.decide import decide_kinds
    from edgekit.fidelity.kinds import asked_with_masks
    from edgekit.fidelity.landmarks import image_size
    from edgekit.validation.artifact import Reference

    outputs = src.run_outputs(feeds)
    cuts = dict(options.mask_thresholds or {})
    kinds = asked_with_masks(options.output_kinds, cuts)  # a threshold named for an output judges it as a mask
    unknown = [k for k in kinds if k not in outputs]
    if unknown:
        raise UsageError(f"--output-kind / --mask-threshold name {unknown}, which the model does not output; its "
                         f"outputs are {list(outputs)}.",
                         hint="Name an output as the manifest's source.outputs lists it.")
    masks = held_out_masks(options.calib, options.calib_size, options.val_size, options.val)
    boxes = held_out_boxes(options.calib, options.calib_size, options.val_size, options.val)
    first = next(iter(feeds.values()))
    choices = decide_kinds(outputs, src.layout, kinds, src.metadata, image_size(first, src.layout))
    return Reference(x=first, y_ref=next(iter(outputs.values())), labels=labels, layout=src.layout,
                     inputs_name=inputs_name, outputs=outputs, feeds=feeds if len(feeds) > 1 else None,
                     masks=masks, kinds=kinds, choices=choices, boxes=boxes, mask_thresholds=cuts)


__all__ = ["API_NAMES", "ConvertResult", "convert", "convert_request", "run"]
