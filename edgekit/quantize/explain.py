"""After validation: diagnose an int8 artifact layer by layer when it missed its thresholds, or when
--explain asks, on the validation inputs; the result goes to `fidelity.diagnosis` and on screen."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgekit.core.errors import EdgekitError, InternalError, RuntimeFailure
from edgekit.quantize.records import Diagnosis

# How many samples an unasked diagnosis reads, per format: edgekit.core.formats.Int8Diagnosis.unasked_samples.


def explain(art: Any, inter: Any, ref: Any, options: Any, progress: Callable[[str], None],
            seen: dict[str, tuple[str, Any]] | None = None) -> Diagnosis | None:
    """Fill ART.fidelity.diagnosis for an int8 artifact that missed (or with --explain); None when not asked.

    The diagnosis is advice: where it cannot be made (an op the debugger cannot run, a model without
    quantized layers: an EdgekitError, the library's failure mapped at the border) the artifact keeps its verdict
    and the reason is noted in ART.diagnosis_run; a bug in edgekit (InternalError) is raised, never turned into a
    manifest key nobody reads. SEEN (one per run)
    keeps each diagnosis by what determines it: the TFLite int8 and Edge TPU models of a run are quantized from
    the same calibrated model (their I/O types differ, which the debugger does not see), so the second one gets
    the first one's diagnosis instead of a second identical run of the debugger. Unasked, an Edge TPU artifact whose
    graph fixes (edgekit.edgetpu.fixes) made its calibrated model another one gets the run's float-free TFLite
    diagnosis too, said so: the same network quantized the same way, a few ops rewritten; --explain diagnoses it
    on its own. The float model's input-noise agreement is the network's, measured once a run (_noise_measured).
    """
    choice = getattr(inter, "quantization", None)
    fid = art.fidelity
    if fid is None or choice is None or inter.path is None:
        return None
    if choice.float_model is None:  # no float twin to compare layers with (w8a16's one recipe, OpenVINO's NNCF)
        if not fid.passed or options.explain:
            art.diagnosis_run.note = (f"no layer-by-layer diagnosis for this {art.precision} {art.format} artifact: "
                                      "its recipe keeps no float twin to compare its layers with")
        return None
    if fid.passed and not options.explain:
        return None
    how = _diagnosis_of(art.format)
    if how is None:  # a format without a layer-by-layer diagnosis (FORMATS): said, never a TFLite run on it
        art.diagnosis_run.note = f"no layer-by-layer int8 diagnosis exists for {art.format} artifacts"
        return None
    from edgekit.core.console import captured_output
    from edgekit.core.layout import to_layout
    from edgekit.core.registry import resolve

    x = x_all = to_layout(ref.x, ref.layout, inter.layout).astype("float32")
    if not options.explain:  # unasked: the ranking of a few layers, not the last digit of their SQNR
        x = x[:how.unasked_samples]
    key = _key(art.format, choice, len(x))
    fixes = sum((choice.edgetpu_fixes or {}).get("applied", {}).values()) if choice.edgetpu_fixes else 0
    # the run's float-free diagnosis of this format and recipe, whichever calibrated model it read
    family = None if choice.float_nodes else f"{art.format}:{choice.chosen}:{len(x)}"
    reuse = None
    if seen is not None and key in seen:
        reuse = (*seen[key], "quantized from the same calibrated model")
    elif seen is not None and fixes and not options.explain and family in seen:
        reuse = (*seen[family], f"the same network and recipe, {fixes} Edge TPU graph fix(es) apart; --explain "
                                "diagnoses it on its own")
    if reuse is not None:
        first, same, why_same = reuse
        fid.diagnosis = same.to_dict()
        art.diagnosis_run.same_as = first
        if fixes and seen is not None and key not in seen:  # (a reuse was found in seen)
            art.diagnosis_run.note = why_same
        if choice.met is None and choice.float_input_noise_agreement is None:
            _noise_measured(art, choice, x_all, ref, seen)  # the run's figure, into this artifact's record
        progress(f"{art.path}: int8 diagnosis as {first}'s ({why_same})")
        return same
    try:
        with captured_output(), _border(art.format, "The int8 diagnosis"):  # the debugger and LiteRT print on stdout
            diagnose = resolve({art.format: how.diagnose}, art.format, "int8 diagnosis")
            diag = diagnose(choice, Path(inter.path), x, ref.inputs_name)
    except InternalError:  # a bug in edgekit (a TypeError here or in the diagnosis): visible, never a manifest key
        raise
    except EdgekitError as exc:  # advice must not fail an artifact that was made and validated
        art.diagnosis_run.error = f"{type(exc).__name__}: {exc.message}"[:400]
        progress(f"{art.path}: int8 diagnosis could not run ({type(exc).__name__}: {exc.message[:200]})")
        return None
    if choice.met is None and choice.float_input_noise_agreement is None:  # a named recipe: the search did not
        choice = _noise_measured(art, choice, x_all, ref, seen)  # measured where the words below read it
    why = choice.why_words()
    if why:  # the model's own sensitivity, or the float share it needed (issue 9)
        import dataclasses

        diag = dataclasses.replace(diag, summary=f"{diag.summary}; {why}")
    fid.diagnosis = diag.to_dict()
    if seen is not None:
        seen[key] = (art.path, diag)
        if family is not None and not fixes:
            seen.setdefault(family, (art.path, diag))
    progress(f"{art.path}: {diag.lines()[0]}")
    for line in diag.lines()[1:]:
        progress(line)
    if not fid.passed and choice.requested != "auto":
        progress(f"{art.path}: --int8-recipe auto tries the recovery recipes (equalization, bias correction, "
                 "calibration statistics, mixed precision where the target allows float layers)")
    return diag


def _noise_measured(art: Any, choice: Any, x: Any, ref: Any, seen: dict[str, tuple[str, Any]] | None) -> Any:
    """CHOICE with the float model's input-noise agreement (edgekit.quantize.search.twin_noise_agreement), also in
    ART's manifest record; CHOICE itself (the reason noted) where the twin cannot run.

    The figure is the fp32 network's (its top-1 under half an int8 step of input noise), whichever float twin runs
    it: it is measured once a run (100 clean and 100 noisy samples through the float twin of the first int8
    artifact that missed), and the other artifacts' records say where it came from. Only for a model with one
    output of class scores: a map, a sequence or several heads have no top-1 to keep (the twin ran for None).
    """
    import dataclasses

    from edgekit.quantize.search import twin_noise_agreement

    if not _one_class_output(ref):
        return choice
    if seen is not None and NOISE_KEY in seen:
        first, noise = seen[NOISE_KEY]
        measured_on = first
    else:
        try:
            with _border(art.format, "Measuring the float model's input-noise agreement"):
                noise = twin_noise_agreement(art.format, choice.float_model, x)
        except InternalError:  # a bug: visible, as in the diagnosis
            raise
        except EdgekitError as exc:  # advice, as the diagnosis
            art.diagnosis_run.noise_agreement_error = f"{type(exc).__name__}: {exc.message}"[:400]
            return choice
        if noise is None:
            return choice
        noise, measured_on = round(noise, 4), art.path
        if seen is not None:
            seen[NOISE_KEY] = (art.path, noise)
    art.diagnosis_run.noise_agreement = noise  # written into the manifest's `int8_recipe` (DiagnosisRun.write)
    art.diagnosis_run.noise_measured_on = measured_on
    return dataclasses.replace(choice, float_input_noise_agreement=noise)


def _diagnosis_of(fmt: str) -> Any:
    """FMT's Int8Diagnosis (edgekit.core.formats.FORMATS), or None."""
    from edgekit.core.formats import FORMATS

    spec = FORMATS.get(fmt)
    return spec.int8_diagnosis if spec is not None else None


def _border(fmt: str, what: str) -> Any:
    """The vendor border around the diagnosis (the library FMT's Int8Diagnosis drives): what the library raises
    becomes a RuntimeFailure, recorded as advice that could not be given; an exception raised in edgekit's own code
    becomes InternalError (edgekit.core.border), which explain lets through."""
    from edgekit.core.border import vendor_errors

    how = _diagnosis_of(fmt)
    return vendor_errors(how.vendor if how else "numpy", error=RuntimeFailure, what=f"{what} failed")


NOISE_KEY = "float input noise"  # SEEN's entry for the run's one input-noise agreement: (artifact, figure)


def _one_class_output(ref: Any) -> bool:
    """Whether the source has a single output of class scores (N, C >= 2), the only kind with a top-1 to keep."""
    from edgekit.quantize.search import has_classes

    y = getattr(ref, "y_ref", None)
    outputs = getattr(ref, "outputs", None)
    return y is not None and has_classes(y) and (outputs is None or len(outputs) == 1)


def _key(fmt: str, choice: Any, samples: int) -> str:
    """What a diagnosis depends on: the format, the calibrated float model's bytes, the float nodes (a detector's float
    head layers too: the Edge TPU's int8 twin keeps them int8), the samples."""
    import hashlib

    digest = hashlib.sha256(Path(choice.float_model).read_bytes()).hexdigest()
    floats = sorted({*choice.float_nodes, *(choice.config or {}).get("decode_head_nodes", ())})
    return f"{fmt}:{digest}:{','.join(floats)}:{samples}"


__all__ = ["explain"]
