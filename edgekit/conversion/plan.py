"""plan(source, options) -> the chains of steps, or the reason the request cannot run, before any step runs.

Everything here reads the tables (targets, precisions, steps, routes): names are checked with a
did-you-mean, calibration needs, option values (each step's `check_options`), missing optional
packages and files an earlier run left are all refused here, in under a second, so a run that
starts does not die an hour later on something that could have been known up front.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from edgekit.conversion.options import IO_DTYPES, ConvertOptions
from edgekit.core._deps import available, install_line
from edgekit.core.errors import MissingDependency, UsageError
from edgekit.core.precisions import PRECISION_NAMES, PRECISIONS, get_precision
from edgekit.core.registry import check_choice
from edgekit.core.vendor import Vendor
from edgekit.sources.base import Source
from edgekit.steps import CONVERSIONS, Step, StepParams, get_step
from edgekit.targets import TargetSpec, get_target, target_names


@dataclass
class Chain:
    """One requested artifact: the steps that make it, and the post-steps that work on it once validated."""

    target: str
    precision: str
    steps: list[Step]
    io_dtype: str | None = None
    post_steps: list[Step] = field(default_factory=list)
    format: str = ""  # the format of the artifact `steps` write

    @property
    def label(self) -> str:
        return f"{self.target} {self.precision}"

    @property
    def all_steps(self) -> list[Step]:
        return [*self.steps, *self.post_steps]


@dataclass
class Plan:
    source: Source
    options: ConvertOptions
    chains: list[Chain]
    outputs: list[str]  # file names the run will publish (besides manifest.json)

    def describe(self) -> list[str]:
        return [f"{c.label}: {' -> '.join(s.describe() for s in c.all_steps)}" for c in self.chains]


def parse_list(value: str | list[str], choices: tuple[str, ...] | list[str], what: str) -> list[str]:
    items = value if isinstance(value, list) else [v for v in value.replace(" ", "").split(",") if v]
    if not items:
        raise UsageError(f"No {what} given.", hint=f"Choose from: {', '.join(choices)}.")
    out: list[str] = []
    for item in items:
        c = check_choice(item, choices, what)
        if c not in out:
            out.append(c)
    return out


def parse_precisions(value: str | list[str]) -> list[str]:
    """Precision names (aliases such as float16 accepted) in the order given, without repeats."""
    items = value if isinstance(value, list) else [v for v in value.replace(" ", "").split(",") if v]
    if not items:
        raise UsageError("No precision given.", hint=f"Choose from: {', '.join(PRECISION_NAMES)}.")
    return list(dict.fromkeys(get_precision(item).name for item in items))


def route(start: str, goal: str) -> list[str]:
    """Shortest chain of CONVERSIONS step names from form START to form GOAL."""
    seen = {start}
    queue: deque[tuple[str, list[str]]] = deque([(start, [])])  # (form, the steps that reach it)
    while queue:
        kind, path = queue.popleft()
        if kind == goal:
            return path
        for (a, b), step in CONVERSIONS.items():
            if a == kind and b not in seen:
                seen.add(b)
                queue.append((b, [*path, step]))
    raise UsageError(f"edgekit has no conversion from a {start} model to {goal}.")


def stem_of(source: Source) -> str:
    """The name artifacts are called after: the file's stem, or the factory's module for a model built in code."""
    if source.kind.endswith("-factory") and not source.path.exists():
        return str(source.path).partition(":")[0].rsplit(".", 1)[-1]
    return source.path.name if source.path.is_dir() else source.path.stem


def check_request(options: ConvertOptions, family: str | None = None) -> list[tuple[str, list[str]]]:
    """Everything about a request that can be judged without the model: names, values, calibration.

    Returns (target, precisions it makes) pairs. Run before the source is loaded, so a mistyped
    option costs the user a second, not a model load and a conversion.
    """
    targets = parse_list(options.targets, target_names(), "target")
    precisions = parse_precisions(options.precisions)
    if options.io_dtype is not None:
        check_choice(options.io_dtype, IO_DTYPES, "--io-dtype")
    wanted: list[tuple[str, list[str]]] = []
    for target in targets:
        spec = get_target(target)
        refused = [p for p in precisions if p in spec.refused]
        if refused:
            raise UsageError(f"Target {target} cannot make {refused[0]}: {spec.refused[refused[0]]}.",
                             hint=f"{target} makes {', '.join(spec.precisions)} only. Convert {refused[0]} in a run of "
                             f"its own: --target {_makers(refused[0])} --quantize {refused[0]}.")
        made = spec.wanted(precisions)
        for precision in made:
            if precision not in spec.precisions:
                raise UsageError(f"Target {target} has no {precision} precision.",
                                 hint=f"It offers {', '.join(spec.precisions)}.")
        wanted.append((target, made))
    adopted = family == "tflite"  # a .tflite is taken as it is (target_steps): nothing to calibrate
    if not options.calib and not adopted and any(PRECISIONS[p].needs_calibration for _, made in wanted for p in made):
        raise UsageError(
            "int8 quantization needs calibration data, and none was given. edgekit never calibrates on random data.",
            hint="Pass --calib with a folder of images, a .npy/.npz array, or 'mnist' for the bundled digits.",
        )
    options.check()
    if any("int8" in made for _, made in wanted):
        check_recipe(options.int8_recipe, [get_target(t) for t, made in wanted if "int8" in made])
    steps = [n for target, _ in wanted for n in (*get_target(target).steps, *get_target(target).post_steps)]
    for name in dict.fromkeys(steps):
        get_step(name).check_options(options)
    return wanted


def check_recipe(name: str, specs: list[TargetSpec]) -> None:
    """--int8-recipe NAME must be a recipe of one of the int8 targets asked for (each notes one it lacks and uses
    auto's order instead); a typo gets a did-you-mean over all of theirs."""
    known = list(dict.fromkeys(r for spec in specs for r in spec.recipe_names()))
    if name not in known:
        check_choice(name, known, "int8 recipe")  # a case slip is accepted by check_choice, but not by the steps
        raise UsageError(f"Unknown int8 recipe '{name}'.", hint=f"Choose one of: {', '.join(known)}.")


def _makers(precision: str) -> str:
    """The targets that offer PRECISION, comma-separated: where a refused one can be asked for."""
    return ",".join(t for t in target_names() if precision in get_target(t).precisions
                    and precision not in get_target(t).refused) or "(none)"


ADOPT_STEP = "tflite_adopt"  # a source already in a target's artifact format that no route reaches (a .tflite)
QUANTIZE_STEP = "tflite_quantize"  # a float .tflite source made int8 / w8a16 with the calibration data


def target_steps(family: str, spec: TargetSpec) -> tuple[list[str], list[str]]:
    """(the route from FAMILY to the target's first step, the target's own steps).

    A source that is already in the target's format, where the target's steps would convert from another
    form (a .tflite source for the tflite or edgetpu target), is adopted as it is: no route, one step.
    """
    consumes = get_step(spec.steps[0]).consumes  # the form its first step reads
    if family == spec.format and consumes != family:
        if family != "tflite":
            raise UsageError(f"edgekit has no way to take a {family} source as a {spec.name} artifact.")
        return [], [ADOPT_STEP]
    if family == "tflite":
        raise UsageError(f"A .tflite cannot be converted to {spec.name}: it is taken as it is, for --target tflite or "
                         "edgetpu (an int8 .tflite is compiled for the Edge TPU).",
                         hint="Convert the original model to this target, or use `edgekit inspect` / `edgekit "
                         "profile` on the .tflite.")
    return route(family, consumes), list(spec.steps)


def check_modules(targets: list[str], family: str) -> None:
    """MissingDependency naming the pip line when a step from FAMILY to TARGETS needs a package not here.

    Needs only the source's family (read from the file's first bytes), so a missing extra is
    reported before the model is loaded.
    """
    names: list[str] = []
    own: dict[str, Vendor] = {}  # the targets' own libraries by module: their install line names their extra
    for target in targets:
        spec = get_target(target)
        names += [*(n for part in target_steps(family, spec) for n in part), *spec.post_steps]
        own |= {m: lib for lib in spec.libraries.values() for m in lib.modules}
    missing = sorted({m for n in dict.fromkeys(names) for m in get_step(n).modules if not available(m)})
    if missing:
        raise MissingDependency(
            f"Converting to {', '.join(targets)} needs {', '.join(missing)}, not installed here.",
            hint=install_line(missing[0], library=own.get(missing[0])),
        )


def quantized_tflite(source: Source, precision: str, options: ConvertOptions) -> list[str]:
    """The step that makes PRECISION from a .tflite source: taken as it is, or a float one quantized (which needs
    the calibration data, refused here where none was given)."""
    have = source.extra.get("precision")
    if have not in ("fp32", "fp16") or have == precision or not PRECISIONS[precision].needs_calibration:
        return [ADOPT_STEP]
    if not options.calib:
        raise UsageError(f"{source.path.name} is a {have} .tflite: making it {precision} needs calibration data, and "
                         "none was given. edgekit never calibrates on random data.",
                         hint="Pass --calib with a folder of images or a .npy/.npz array of the model's inputs.")
    return [QUANTIZE_STEP]


def make_plan(source: Source, options: ConvertOptions, wanted: list[tuple[str, list[str]]] | None = None) -> Plan:
    """Every chain the request needs, or the reason it cannot run, before any step runs.

    WANTED is what `check_request` (and `check_modules`) already judged for this source's family: the pipeline
    judges the request once, before the model is loaded, and hands the result here. Without it (a plan made on its
    own) the request is judged here."""
    chains: list[Chain] = []
    if wanted is None:
        wanted = check_request(options, source.family)
        check_modules([t for t, _ in wanted], source.family)
    for target, precisions in wanted:
        spec = get_target(target)
        route_steps, own_steps = target_steps(source.family, spec)
        prefix = [get_step(n)() for n in route_steps]
        for precision in precisions:
            io = spec.io_dtype(precision, options.io_dtype)
            params = StepParams(precision=precision, io_dtype=io, integer_only=spec.integer_only or None)
            names = quantized_tflite(source, precision, options) if own_steps == [ADOPT_STEP] else own_steps
            chains.append(Chain(target, precision, [*prefix, *(get_step(n)(params) for n in names)], io,
                                [get_step(n)(params) for n in spec.post_steps], spec.format))
    stem = stem_of(source)
    outputs: list[str] = []
    for c in chains:
        names = [*c.steps[-1].outputs(stem), *(n for s in c.post_steps for n in s.outputs(stem))]
        outputs.extend(n for n in names if n not in outputs)
    return Plan(source, options, chains, outputs)


def check_outputs(plan: Plan, out_dir: Path) -> None:
    """Refuse to overwrite earlier outputs unless --force."""
    if plan.options.force or not out_dir.exists():
        return
    clash = [n for n in [*plan.outputs, "manifest.json"] if (out_dir / n).exists()]
    if clash:
        raise UsageError(
            f"{out_dir} already holds {', '.join(clash)} from an earlier run; edgekit does not overwrite outputs.",
            hint="Pass --force to replace them, or --out to write elsewhere.",
        )


def shown_path(path: Path) -> str:
    """PATH relative to the current folder when it lies below it, else absolute."""
    rel = os.path.relpath(path)
    return str(path.resolve()) if rel.startswith("..") else rel


__all__ = ["Chain", "Plan", "check_modules", "check_outputs", "check_request", "make_plan", "parse_list",
           "parse_precisions", "route", "shown_path", "stem_of"]
