"""plan(source, options) -> the chains of steps, rejected before anything runs if impossible;
execute(plan) -> validated artifacts and a manifest, published atomically.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgekit import __version__
from edgekit._deps import available, install_line, version_of
from edgekit.artifact import Artifact, Manifest
from edgekit.errors import MissingDependency, UsageError
from edgekit.fsutil import publish, sha256_file, staging_dir
from edgekit.precisions import PRECISION_NAMES as PRECISIONS
from edgekit.registry import check_choice
from edgekit.sources.base import Source
from edgekit.steps import CONVERSIONS, ConvertOptions, Intermediate, Step, StepContext, get_step
from edgekit.steps.tflite_convert import artifact_name

# target -> (the form its final step consumes, the final step, precisions it offers)
TARGETS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "onnx": ("onnx", "onnx_quantize", PRECISIONS),
    "tflite": ("savedmodel", "tflite_convert", PRECISIONS),
    "edgetpu": ("savedmodel", "tflite_convert", ("int8",)),
}
EDGETPU_DEFAULT_IO = "uint8"  # Coral's convention; int8 I/O also compiles with current compilers
TOOL_DISTS = ("numpy", "torch", "tensorflow", "keras", "onnx", "onnxruntime", "onnxscript", "onnx2tf",
              "tf2onnx", "ai-edge-litert")


@dataclass
class Chain:
    target: str
    precision: str
    steps: list[Step]
    io_dtype: str | None = None

    @property
    def label(self) -> str:
        return f"{self.target} {self.precision}"


@dataclass
class Plan:
    source: Source
    options: ConvertOptions
    chains: list[Chain]
    outputs: list[str]  # file names the run will publish (besides manifest.json)

    def describe(self) -> list[str]:
        return [f"{c.label}: {' -> '.join(s.describe() for s in c.steps)}" for c in self.chains]


@dataclass
class ConvertResult:
    manifest: Manifest
    manifest_path: Path
    not_compiled: bool = False
    how_to_finish: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def artifacts(self) -> list[Artifact]:
        return self.manifest.artifacts

    @property
    def fidelity_failures(self) -> list[Artifact]:
        return [a for a in self.artifacts if a.fidelity is not None and not a.fidelity.passed]


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


def route(start: str, goal: str) -> list[str]:
    """Shortest chain of CONVERSIONS step names from form START to form GOAL."""
    seen, queue = {start}, deque([(start, [])])
    while queue:
        kind, path = queue.popleft()
        if kind == goal:
            return path
        for (a, b), step in CONVERSIONS.items():
            if a == kind and b not in seen:
                seen.add(b)
                queue.append((b, [*path, step]))
    raise UsageError(f"edgekit has no conversion from a {start} model to {goal}.")


def make_plan(source: Source, options: ConvertOptions) -> Plan:
    """Every chain the request needs, or the reason it cannot run, before any step runs."""
    targets = parse_list(options.targets, list(TARGETS), "target")
    precisions = parse_list(options.precisions, PRECISIONS, "precision")
    if options.io_dtype is not None:
        check_choice(options.io_dtype, ("int8", "uint8", "float32"), "--io-dtype")
    chains: list[Chain] = []
    for target in targets:
        consumes, final, offered = TARGETS[target]
        prefix = [get_step(n)() for n in route(source.family, consumes)]
        wanted = ["int8"] if target == "edgetpu" else precisions
        for precision in wanted:
            if precision not in offered:
                raise UsageError(f"Target {target} has no {precision} precision.",
                                 hint=f"It offers {', '.join(offered)}.")
            params: dict[str, Any] = {"precision": precision}
            io = None
            if final == "tflite_convert" and precision == "int8":
                io = options.io_dtype or (EDGETPU_DEFAULT_IO if target == "edgetpu" else "int8")
                params["io_dtype"] = io
            steps = [*prefix, get_step(final)(**params)]
            if target == "edgetpu":
                steps.append(get_step("edgetpu_compile")())
            chains.append(Chain(target, precision, steps, io))
    if any(c.precision == "int8" for c in chains) and not options.calib:
        raise UsageError(
            "int8 quantization needs calibration data, and none was given. edgekit never calibrates on random data.",
            hint="Pass --calib with a folder of images, a .npy/.npz array, or 'mnist' for the bundled digits.",
        )
    missing = sorted({m for c in chains for s in c.steps for m in s.modules if not available(m)})
    if missing:
        raise MissingDependency(
            f"Converting to {', '.join(targets)} needs {', '.join(missing)}, not installed here.",
            hint=install_line(missing[0], "convert"),
        )
    outputs = []
    for c in chains:
        ext = "onnx" if c.target == "onnx" else "tflite"
        name = artifact_name(_stem(source), c.precision, c.io_dtype, ext)
        names = [name]
        if c.target == "edgetpu":  # what the compiler writes, where it runs
            names += [f"{_stem(source)}_edgetpu.tflite", f"{_stem(source)}_edgetpu.log"]
        outputs.extend(n for n in names if n not in outputs)
    return Plan(source, options, chains, outputs)


def _shown_path(path: Path) -> str:
    """PATH relative to the current folder when it lies below it, else absolute."""
    rel = os.path.relpath(path)
    return str(path.resolve()) if rel.startswith("..") else rel


def _stem(source: Source) -> str:
    if source.kind.endswith("-factory") and not source.path.exists():  # built in code: name it after its module
        return str(source.path).partition(":")[0].rsplit(".", 1)[-1]
    return source.path.name if source.path.is_dir() else source.path.stem


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


def execute(plan: Plan, calib: np.ndarray | None, ref: Any, progress: Callable[[str], None]) -> ConvertResult:
    """Run every chain (shared prefixes once), validate each artifact, publish, write the manifest."""
    options, source = plan.options, plan.source
    out_dir = Path(options.out_dir)
    check_outputs(plan, out_dir)
    stem = _stem(source)

    def calibration() -> np.ndarray:
        if calib is None:
            raise UsageError("This step needs calibration data (--calib).")
        return calib

    artifacts: dict[str, Artifact] = {}
    extra_files: list[str] = []
    warnings: list[str] = []
    not_compiled, how_to_finish = False, None
    with staging_dir(out_dir) as work:
        ctx = StepContext(work=work, stem=stem, source=source, options=options, calibration=calibration, log=progress)
        start = Intermediate(kind=source.family, path=source.path, obj=source.model, layout=source.layout,
                             meta=dict(source.extra.get("meta", {})))
        memo: dict[tuple[Any, ...], tuple[Intermediate, float]] = {}
        total = len({tuple(s.key() for s in c.steps[: i + 1]) for c in plan.chains for i in range(len(c.steps))})
        done = 0
        for chain in plan.chains:
            cur, key, timeline = start, (), []
            for step in chain.steps:
                key = (*key, step.key())
                first = key not in memo
                if first:
                    done += 1
                    progress(f"[{done}/{total}] {step.describe()} ...")
                    t0 = time.perf_counter()
                    nxt = _run_quietly(step, cur, ctx, progress)
                    memo[key] = (nxt, time.perf_counter() - t0)
                    progress(f"[{done}/{total}] {step.name} done in {memo[key][1]:.1f}s")
                cur, secs = memo[key]
                # a step shared by several artifacts is charged to the first that needed it
                timeline.append({"step": step.name, "seconds": round(secs, 3), "shared": not first})
            if cur.kind == "edgetpu":
                ready = Path(cur.meta["ready_model"])
                report = cur.meta.get("edgetpu", {})
                if ready.name not in artifacts:
                    artifacts[ready.name] = _artifact(ready, "tflite", cur, timeline[:-1], ref, progress)
                artifacts[ready.name].extra["edgetpu"] = report
                if cur.path is None:
                    # say it with the path the user will see once published, not the staging name
                    from edgekit.edgetpu import how_to_finish as finish_text

                    min_rt = int(options.edgetpu_min_runtime) if options.edgetpu_min_runtime else None
                    how_to_finish = finish_text(_shown_path(out_dir / ready.name), min_rt)
                    report["how_to_finish"] = how_to_finish
                    not_compiled = True
                else:
                    art = _describe_compiled(cur, artifacts[ready.name], timeline)
                    artifacts[cur.path.name] = art
                    for side in cur.path.parent.glob(f"{cur.path.stem}.log"):
                        extra_files.append(side.name)
                        art.extra["compiler_log"] = side.name
            else:
                if cur.path is None:
                    raise UsageError(f"The {chain.label} chain produced no file.")
                if cur.path.name not in artifacts:
                    artifacts[cur.path.name] = _artifact(cur.path, chain.target, cur, timeline, ref, progress)
        for art in artifacts.values():
            if art.fidelity is not None and not art.fidelity.passed:
                warnings.append(f"{art.path}: fidelity below threshold: {'; '.join(art.fidelity.failures)}")
            if art.extra.get("dynamic_shape_ops"):
                warnings.append(f"{art.path}: contains dynamic-shape ops {art.extra['dynamic_shape_ops']}")
        # publish: every file first, the manifest last, each with an atomic rename
        for name, art in artifacts.items():  # what is published must be what was validated
            if sha256_file(work / name) != art.sha256:
                raise RuntimeError(f"{name} changed after it was validated; nothing was published")
        for name in [*artifacts, *extra_files]:
            publish(work / name, out_dir / name)
    manifest = Manifest(
        source=source.describe(),
        artifacts=list(artifacts.values()),
        options=options.to_dict(),
        tool_versions={d: version_of(d) for d in TOOL_DISTS},
        edgekit_version=__version__,
        warnings=warnings,
    )
    manifest_path = manifest.write(out_dir / "manifest.json")
    return ConvertResult(manifest, manifest_path, not_compiled, how_to_finish, warnings)


def _run_quietly(step: Step, inp: Intermediate, ctx: StepContext, progress: Callable[[str], None]) -> Intermediate:
    """Run STEP with the converters' terminal output captured; show it only if the step fails."""
    from edgekit.console import captured_output
    from edgekit.errors import EdgekitError

    notes: list[str] = []
    ctx.log = notes.append  # the step's own notes are shown after it, outside the capture
    cap = captured_output()
    try:
        with cap:
            return step.run(inp, ctx)
    except EdgekitError as exc:
        if cap.tail():
            exc.hint = f"{exc.hint or ''}\nlast output of the converter:\n{cap.tail()}".strip()
        raise
    finally:
        for note in notes:
            progress(note)


def _artifact(path: Path, fmt: str, inter: Intermediate, timeline: list[dict[str, Any]], ref: Any,
              progress: Callable[[str], None]) -> Artifact:
    """Read the artifact's I/O from its runtime, validate it against the reference, describe it."""
    from edgekit.console import captured_output
    from edgekit.runtimes import runtime_for_format
    from edgekit.validate import validate

    t0 = time.perf_counter()
    progress(f"validating {path.name} on {len(ref.x)} {ref.inputs_name} samples ...")
    with captured_output():  # LiteRT announces its XNNPACK delegate on every load
        rt = runtime_for_format(fmt)()
        rt.load(path)
        inputs, outputs = rt.inputs, rt.outputs
        rt.close()
        fidelity = validate(path, fmt, inter.layout, inter.precision, ref)
    for spec in inputs:
        spec.layout = inter.layout if len(spec.shape) == 4 else None
    extra: dict[str, Any] = {"steps": timeline, "validation_seconds": round(time.perf_counter() - t0, 3)}
    for k in ("io_dtype", "dynamic_shape_ops", "exporter", "opset"):
        if k in inter.meta:
            extra[k] = inter.meta[k]
    return Artifact(
        path=path.name, format=fmt, precision=inter.precision, inputs=inputs, outputs=outputs,
        size_bytes=path.stat().st_size, sha256=sha256_file(path), parent=_parent(timeline), fidelity=fidelity,
        seconds=round(_own_seconds(timeline) + extra["validation_seconds"], 3), extra=extra,
    )


def _own_seconds(timeline: list[dict[str, Any]]) -> float:
    """Seconds of the steps first run for this artifact: the column sums to the whole run."""
    return sum(t["seconds"] for t in timeline if not t.get("shared"))


def _describe_compiled(inter: Intermediate, ready: Artifact, timeline: list[dict[str, Any]]) -> Artifact:
    """The compiled Edge TPU model: same I/O as the int8 model it came from; it runs only on a TPU."""
    assert inter.path is not None
    return Artifact(
        path=inter.path.name, format="edgetpu", precision="int8", inputs=ready.inputs, outputs=ready.outputs,
        size_bytes=inter.path.stat().st_size, sha256=sha256_file(inter.path), parent=ready.path, fidelity=None,
        seconds=round(_own_seconds(timeline[-1:]), 3),
        extra={"edgetpu": inter.meta.get("edgetpu", {}), "steps": timeline,
               "validation": f"not run here: needs an Edge TPU; {ready.path}, which it was compiled from, "
                             "was validated"},
    )


def _parent(timeline: list[dict[str, Any]]) -> str | None:
    return " -> ".join(t["step"] for t in timeline[:-1]) or "source"


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
    targets: str | list[str] = "onnx",
    quantize: str | list[str] = "fp32",
    *,
    out: str | Path | None = None,
    calib: str | None = None,
    calib_size: int = 200,
    val_size: int = 1000,
    input_shape: list[int] | None = None,
    batch: int = 1,
    io_dtype: str | None = None,
    mean: list[float] | None = None,
    std: list[float] | None = None,
    model: str | None = None,
    trust_model: bool = False,
    signature: str = "serving_default",
    opset: int = 18,
    force: bool = False,
    strict: bool = False,
    edgetpu_compiler: str | None = None,
    edgetpu_min_runtime: str | None = None,
    edgetpu_timeout: float = 180.0,
    progress: Callable[[str], None] | None = None,
) -> ConvertResult:
    """Convert SOURCE to every (target, precision) asked for; validate each artifact; write the manifest.

    Raises EdgekitError subclasses for bad input (before anything is written), FidelityError when
    STRICT and an artifact misses its thresholds (after the outputs are written, so they can be
    inspected). The Edge TPU "written but not compiled" outcome is `result.not_compiled`.
    """
    from edgekit.calibration import random_samples, split_for_conversion
    from edgekit.errors import FidelityError
    from edgekit.registry import resolve
    from edgekit.sources import LOADERS, LoadOptions
    from edgekit.sources.detect import FAMILY, detect
    from edgekit.validate import Reference

    say = progress or (lambda _m: None)
    if batch < 1:
        raise UsageError(f"--batch must be at least 1, got {batch}.")
    if calib_size < 1 or val_size < 1:
        raise UsageError("--calib-size and --val-size must be at least 1.")
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
    loader = resolve(LOADERS, family, "source family")
    load_opts = LoadOptions(factory=model, trust_model=trust_model, input_shape=input_shape, signature=signature)
    if path is not None:
        from edgekit.sources.probe import probe

        probe(path, kind, family, load_opts)  # a malformed file may crash a native reader: not in this process
    src: Source = loader(path, load_opts, kind)
    options = ConvertOptions(
        targets=targets if isinstance(targets, list) else [t for t in targets.split(",") if t.strip()],
        precisions=quantize if isinstance(quantize, list) else [q for q in quantize.split(",") if q.strip()],
        out_dir=Path(out) if out else Path("edgekit-out") / _stem(src),
        calib=calib, calib_size=calib_size, val_size=val_size, input_shape=input_shape, batch=batch,
        io_dtype=io_dtype, mean=mean, std=std, strict=strict, force=force, factory=model, trust_model=trust_model,
        signature=signature, opset=opset, edgetpu_compiler=edgetpu_compiler,
        edgetpu_min_runtime=edgetpu_min_runtime, edgetpu_timeout=edgetpu_timeout,
    )
    plan = make_plan(src, options)
    check_outputs(plan, options.out_dir)
    for line in plan.describe():
        say(f"plan: {line}")
    shape = [batch if d <= 0 else d for d in src.input_shape]
    calib_x = None
    if calib:
        cal, val = split_for_conversion(calib, shape, src.layout, calib_size=calib_size, val_size=val_size,
                                        mean=mean, std=std)
        calib_x = cal.x
        say(f"calibration: {len(cal.x)} samples of {cal.name}; validation: {len(val.x)} held-out samples")
    else:
        val = random_samples(shape, min(val_size, 100))
        say(f"validation: {len(val.x)} random samples (pass --calib for real data and accuracy)")
    ref = Reference(x=val.x, y_ref=src.predict(val.x), labels=val.y, layout=src.layout, inputs_name=val.name)
    result = execute(plan, calib_x, ref, say)
    if strict and result.fidelity_failures:
        names = ", ".join(a.path for a in result.fidelity_failures)
        err = FidelityError(
            f"{names} missed the fidelity thresholds (--strict); outputs and manifest were written to "
            f"{result.manifest_path.parent} for inspection.",
            hint="See each artifact's fidelity.failures in manifest.json; try more or better --calib data, or a "
            "higher precision.",
        )
        err.result = result  # type: ignore[attr-defined]  (the CLI still prints the table)
        raise err
    return result
