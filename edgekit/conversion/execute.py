"""execute(plan) -> validated artifacts and a manifest, published atomically.

Chains that share a prefix run it once (memoised by step key). Each chain's artifact is read back
through its format's runtime and validated against the source; post-steps (the Edge TPU compiler)
then work on the validated artifact and either derive an artifact of their own or say how to
finish elsewhere. Files are written in a staging folder and published, manifest last, only after
every published file is checked to be the one that was validated.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgekit._version import __version__
from edgekit.conversion.outdir import staging_dir
from edgekit.conversion.plan import Plan, shown_path, stem_of
from edgekit.core._deps import version_of
from edgekit.core.artifact import Artifact, ArtifactFailure, Manifest, Preprocessing, RunFacts
from edgekit.core.errors import EdgekitError, InternalError, UsageError
from edgekit.core.formats import FORMATS, companions
from edgekit.core.fsutil import publish, sha256_path, size_path
from edgekit.measure.machine import release_freed_memory
from edgekit.steps import Intermediate, Step, StepContext

TOOL_DISTS = ("numpy", "torch", "tensorflow", "keras", "onnx", "onnxruntime", "onnxscript", "onnx2tf",
              "tf2onnx", "ai-edge-litert")


@dataclass
class ConvertResult:
    manifest: Manifest
    manifest_path: Path
    not_compiled: bool = False  # a post-step could not run here (no edgetpu_compiler): exit 10
    how_to_finish: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def artifacts(self) -> list[Artifact]:
        return self.manifest.artifacts

    @property
    def failed(self) -> list[Artifact]:
        """Artifacts that could not be made or validated (each with its `failure`)."""
        return [a for a in self.artifacts if not a.ok]

    @property
    def fidelity_failures(self) -> list[Artifact]:
        return [a for a in self.artifacts if a.fidelity is not None and not a.fidelity.passed]


TimelineEntry = dict[str, Any]  # {"step": name, "seconds": float, "shared": bool}: manifest `extra.steps`


class _ChainFailed(Exception):
    """A step of a chain raised an EdgekitError: the error, and the timeline up to and including that step."""

    def __init__(self, error: EdgekitError, timeline: list[TimelineEntry]) -> None:
        super().__init__(error.message)
        self.error, self.timeline = error, timeline


class _Runner:
    """Runs steps once per distinct chain prefix, with progress lines and per-step timings.

    A step that fails is remembered as failed: every chain that shares it fails with the same
    error without running it again, and chains that do not share it go on.
    """

    def __init__(self, plan: Plan, ctx: StepContext, progress: Callable[[str], None]) -> None:
        self.ctx, self.progress = ctx, progress
        self.memo: dict[tuple[Any, ...], tuple[Intermediate | EdgekitError, float]] = {}
        self.total = len({tuple(s.key() for s in c.all_steps[: i + 1]) for c in plan.chains
                          for i in range(len(c.all_steps))})
        self.done = 0

    def run(self, steps: list[Step], start: Intermediate, key: tuple[Any, ...] = ()
            ) -> tuple[Intermediate, tuple[Any, ...], list[TimelineEntry]]:
        cur, timeline = start, []
        for step in steps:
            key = (*key, step.key())
            first = key not in self.memo
            if first:
                self.done += 1
                self.progress(f"[{self.done}/{self.total}] {step.describe()} ...")
                t0 = time.perf_counter()
                try:
                    result: Intermediate | EdgekitError = _run_quietly(step, cur, self.ctx, self.progress)
                except EdgekitError as exc:
                    exc.step = exc.step or step.name
                    result = exc
                release_freed_memory()  # what the step's libraries freed, before the next one grows from it
                self.memo[key] = (result, time.perf_counter() - t0)
                verdict = "failed" if isinstance(result, EdgekitError) else "done"
                self.progress(f"[{self.done}/{self.total}] {step.name} {verdict} in {self.memo[key][1]:.1f}s")
            outcome, secs = self.memo[key]
            # a step shared by several artifacts is charged to the first that needed it
            timeline.append({"step": step.name, "seconds": round(secs, 3), "shared": not first})
            if isinstance(outcome, EdgekitError):
                raise _ChainFailed(outcome, timeline)
            cur = outcome
        return cur, key, timeline


class _Outcomes:
    """The artifacts of a run by file name, failed ones included, and the errors behind the failures."""

    def __init__(self, strict: bool, progress: Callable[[str], None]) -> None:
        self.strict, self.progress = strict, progress
        self.artifacts: dict[str, Artifact] = {}
        self.errors: list[EdgekitError] = []

    def fail(self, name: str, fmt: str, precision: str, error: EdgekitError, timeline: list[TimelineEntry],
             step: str | None = None) -> None:
        """Record artifact NAME as failed; with --strict, stop the run at the first failure instead.

        A bug in edgekit (InternalError) is not an artifact's failure: it stops the run, as bugs do.
        """
        if self.strict or isinstance(error, InternalError):
            raise error
        self.errors.append(error)
        if name in self.artifacts:
            return
        failure = ArtifactFailure.of(error, step)
        self.progress(f"{name}: FAILED at {failure.step or 'an unknown step'}: {failure.message}")
        self.artifacts[name] = Artifact(
            path=name, format=fmt, precision=precision, inputs=[], outputs=[], size_bytes=0, sha256="",
            parent=_parent(timeline), fidelity=None, seconds=round(_own_seconds(timeline), 3),
            extra={"steps": timeline}, status="failed", failure=failure)


def execute(plan: Plan, calib: np.ndarray | dict[str, np.ndarray] | None, ref: Any, progress: Callable[[str], None],
            started: float | None = None) -> ConvertResult:
    """Run every chain (shared prefixes once), validate each artifact, publish, write the manifest.

    Each artifact succeeds or fails on its own: a failed step or validation is recorded as that
    artifact's failure (with the step, the op where known, the message and the hint) and the
    others are published. Only when no artifact could be made does the run raise, with the first
    failure's error; --strict stops at the first failure. The caller holds the output folder's lock and has
    refused earlier outputs (edgekit.conversion.pipeline.run: one lock and one check for the whole run).
    """
    started = time.perf_counter() if started is None else started
    options, source = plan.options, plan.source
    if options.out_dir is None:  # pipeline.run names the folder (after the source) before it plans
        raise InternalError("execute() was given a plan without an output folder.")
    out_dir = Path(options.out_dir)
    stem = stem_of(source)

    def calibration() -> np.ndarray:
        if calib is None:
            raise UsageError("This step needs calibration data (--calib).")
        return next(iter(calib.values())) if isinstance(calib, dict) else calib  # a dict: one array per input

    on_cpus: list[Any] = []
    if options.validate_on:  # the emulated cores, checked runnable here before any step runs
        from edgekit.emulate.validate import prepare

        on_cpus = prepare(options.validate_on)
    done = _Outcomes(options.strict, progress)
    artifacts = done.artifacts
    extra_files: list[str] = []
    unfinished: list[str] = []
    with staging_dir(out_dir) as work:
        ctx = StepContext(work=work, stem=stem, source=source, options=options, calibration=calibration,
                          log=progress, calibration_feeds=(lambda: dict(calib)) if isinstance(calib, dict) else None)
        start = Intermediate(kind=source.family, path=source.path, obj=source.model, layout=source.layout,
                             signature=source.signature)
        runner = _Runner(plan, ctx, progress)
        diagnosed: dict[str, Any] = {}  # int8 diagnoses of this run, by what determines them (quantize.explain)
        for chain in plan.chains:
            name = (chain.steps[-1].outputs(stem) or [f"{stem}.{chain.precision}.{chain.target}"])[0]
            try:
                cur, key, timeline = runner.run(chain.steps, start)
            except _ChainFailed as failed:
                done.fail(name, chain.format, chain.precision, failed.error, failed.timeline)
                continue
            if cur.path is None:
                raise InternalError(f"The {chain.label} chain's last step returned no file.")
            art = artifacts.get(cur.path.name)
            if art is None:
                try:
                    art = artifacts[cur.path.name] = _artifact(cur.path, chain.format, cur, timeline, ref, progress,
                                                               on_cpus)
                except EdgekitError as exc:
                    done.fail(cur.path.name, chain.format, chain.precision, exc, timeline, step="validate")
                    continue
                from edgekit.quantize.explain import explain  # int8 that missed (or --explain): layer by layer

                t_diag = time.perf_counter()
                if explain(art, cur, ref, options, progress, diagnosed) is not None:  # the artifact's time too
                    art.diagnosis_run.seconds = round(time.perf_counter() - t_diag, 3)
                    art.seconds = round(art.seconds + art.diagnosis_run.seconds, 3)
            if not art.ok:
                continue
            for post in chain.post_steps:
                post_name = (post.outputs(stem) or [f"{stem}.{post.produces}"])[0]
                try:
                    derived, key, post_timeline = runner.run([post], cur, key)
                except _ChainFailed as failed:
                    done.fail(post_name, post.produces, chain.precision, failed.error, [*timeline, *failed.timeline])
                    continue
                if derived.path is None:  # could not run here: say how to finish, with the published path
                    finish = post.how_to_finish(shown_path(out_dir / art.path), options)
                    if derived.report is not None:
                        derived.report.how_to_finish = finish  # on the record, before it is serialized
                    unfinished.append(finish)
                if derived.report is not None and derived.report_key:
                    art.extra[derived.report_key] = derived.report.to_dict()
                if derived.path is None:
                    continue
                try:
                    made = _derived(derived, post.produces, art, [*timeline, *post_timeline], ref, progress)
                except EdgekitError as exc:
                    done.fail(derived.path.name, post.produces, chain.precision, exc, [*timeline, *post_timeline],
                              step="validate")
                    continue
                artifacts[derived.path.name] = made
                for role, side in derived.side_files.items():
                    extra_files.append(side.name)
                    made.extra[role] = side.name
        made_ok = [name for name, art in artifacts.items() if art.ok]
        if not made_ok:  # nothing to publish: the run failed, as the first failure says
            raise done.errors[0]
        warnings = _warnings(artifacts.values())
        # publish: every file first, the manifest last, each with an atomic rename
        for name in made_ok:  # what is published must be what was validated
            if sha256_path(work / name) != artifacts[name].sha256:
                raise RuntimeError(f"{name} changed after it was validated; nothing was published")
        # an artifact's companions (an IR's .bin) go before it: whoever finds the artifact finds them too
        files = [*(c.name for name in made_ok for c in companions(work / name)), *made_ok, *extra_files]
        for name in files:
            publish(work / name, out_dir / name)
    manifest = Manifest(
        source=source.describe(),
        artifacts=list(artifacts.values()),
        options=options.to_dict(),
        tool_versions={d: version_of(d) for d in tool_dists(plan)},
        edgekit_version=__version__,
        warnings=warnings,
        run=_run_facts(started),
    )
    manifest.preprocessing = Preprocessing.of_conversion(manifest.options, manifest.source)
    manifest_path = manifest.write(out_dir / "manifest.json")
    return ConvertResult(manifest, manifest_path, bool(unfinished), unfinished[0] if unfinished else None, warnings)


def tool_dists(plan: Plan) -> list[str]:
    """The distributions whose versions the manifest records: TOOL_DISTS, then each requested target's own (its
    dists, its libraries' and its format's libraries')."""
    from edgekit.targets import get_target

    extra = [d for name in dict.fromkeys(c.target for c in plan.chains) for d in get_target(name).all_dists()]
    return list(dict.fromkeys([*TOOL_DISTS, *extra]))


def _run_facts(started: float) -> RunFacts:
    """Wall time since STARTED (perf_counter), peak memory so far, and the phases the run meter timed."""
    from edgekit.measure import run_meter
    from edgekit.measure.machine import peak_rss, peak_rss_children

    meter = run_meter.current()
    if meter is not None:
        meter.sample()
    return RunFacts(seconds=round(time.perf_counter() - started, 3),
                    peak_rss_bytes=peak_rss(), peak_rss_children_bytes=peak_rss_children(),
                    peak_tree_rss_bytes=(meter.peak_tree_rss or None) if meter is not None else None,
                    phases=dict(meter.phases) if meter is not None else {})


def _warnings(artifacts: Any) -> list[str]:
    out = []
    for art in artifacts:
        if art.failure is not None:
            f = art.failure
            out.append(f"{art.path}: not made: {f.step or 'a step'} failed: {f.message}"
                       + (f" (op {f.op})" if f.op else "") + (f" hint: {f.hint}" if f.hint else ""))
        if art.fidelity is not None and not art.fidelity.passed:
            out.append(f"{art.path}: fidelity below threshold: {'; '.join(art.fidelity.failures)}")
        if art.extra.get("dynamic_shape_ops"):
            out.append(f"{art.path}: contains dynamic-shape ops {art.extra['dynamic_shape_ops']}")
    return out


def _run_quietly(step: Step, inp: Intermediate, ctx: StepContext, progress: Callable[[str], None]) -> Intermediate:
    """Run STEP with the converters' terminal output captured; show it only if the step fails."""
    from edgekit.core.console import captured_output
    from edgekit.core.errors import EdgekitError

    cap = captured_output()
    # the step's own notes are shown as they come, past the capture: a search of minutes says each candidate's verdict
    ctx.log = cap.shown(progress)
    try:
        with cap:
            return step.run(inp, ctx)
    except EdgekitError as exc:
        if cap.tail():
            exc.hint = f"{exc.hint or ''}\nlast output of the converter:\n{cap.tail()}".strip()
        raise


def _artifact(path: Path, fmt: str, inter: Intermediate, timeline: list[TimelineEntry], ref: Any,
              progress: Callable[[str], None], on_cpus: list[Any] | None = None) -> Artifact:
    """Read the artifact's I/O and validate it against the reference, in a child process, and describe it.

    A freshly written file may make a runtime abort natively (an int8 model LiteRT's kernels cannot
    run): `check_artifact` loads it where that cannot take edgekit down, falls back from XNNPACK to
    LiteRT's builtin kernels, and turns a crash into a RuntimeFailure, which the caller records as
    this artifact's failure. ON_CPUS (`--validate-on`): the emulated cores it is validated on too.
    """
    from edgekit.core.console import captured_output
    from edgekit.validation.artifact import check_artifact

    t0 = time.perf_counter()
    progress(f"validating {path.name} on {len(ref.x)} {ref.inputs_name} samples ...")
    with captured_output():  # in-process (EDGEKIT_NO_ISOLATION=1), LiteRT announces its delegate on every load
        check = check_artifact(path, fmt, inter.layout, inter.precision, ref)
    inputs, outputs = check.inputs, check.outputs
    for spec in inputs:
        spec.layout = inter.layout if len(spec.shape) == 4 else None
    extra: dict[str, Any] = {"steps": timeline, "validation_seconds": round(time.perf_counter() - t0, 3),
                             **inter.manifest_facts()}
    if check.kernels is not None:  # which LiteRT kernels validated it: "xnnpack", or "builtin" after a refusal
        extra["kernels"] = check.kernels
    if check.notes:
        extra["validation_notes"] = list(check.notes)
        for note in check.notes:
            progress(f"{path.name}: {note}")
    art = Artifact(
        path=path.name, format=fmt, precision=inter.precision, inputs=inputs, outputs=outputs,
        size_bytes=size_path(path), sha256=sha256_path(path), parent=_parent(timeline), fidelity=check.fidelity,
        seconds=round(_own_seconds(timeline) + extra["validation_seconds"], 3), extra=extra,
    )
    if on_cpus:
        from edgekit.emulate.validate import validate_on

        t1 = time.perf_counter()
        validate_on(art, path, inter.layout, ref, check.outputs_got, on_cpus, progress)
        art.seconds = round(art.seconds + time.perf_counter() - t1, 3)
    return art


def _own_seconds(timeline: list[TimelineEntry]) -> float:
    """Seconds of the steps first run for this artifact: the column sums to the whole run."""
    return sum(t["seconds"] for t in timeline if not t.get("shared"))


def _derived(inter: Intermediate, fmt: str, parent: Artifact, timeline: list[TimelineEntry], ref: Any,
             progress: Callable[[str], None]) -> Artifact:
    """An artifact a post-step made from PARENT (the compiled Edge TPU model).

    A format that runs on this machine's CPU is validated like any artifact; one tied to other
    hardware (FormatSpec.devices) keeps its parent's I/O and is recorded as not validated here,
    its parent having been.
    """
    assert inter.path is not None
    spec = FORMATS.get(fmt)
    if spec is None or spec.devices is None or "cpu" in spec.devices:
        made = _artifact(inter.path, fmt, inter, timeline, ref, progress)
        made.parent = parent.path  # its own time is the post-step's and its validation, not the parent's steps
        made.seconds = round(_own_seconds(timeline[-1:]) + made.extra["validation_seconds"], 3)
    else:
        made = Artifact(
            path=inter.path.name, format=fmt, precision=inter.precision, inputs=parent.inputs, outputs=parent.outputs,
            size_bytes=size_path(inter.path), sha256=sha256_path(inter.path), parent=parent.path, fidelity=None,
            seconds=round(_own_seconds(timeline[-1:]), 3),
            extra={"steps": timeline, "validation": f"not run here: needs {_device_words(spec.devices)}; "
                                                    f"{parent.path}, which it was compiled from, was validated"},
        )
    if inter.report is not None and inter.report_key:
        made.extra = {inter.report_key: inter.report.to_dict(), **made.extra}
    return made


def _device_words(devices: tuple[str, ...]) -> str:
    from edgekit.measure.devices import KIND_WORDS

    return " or ".join(f"an {KIND_WORDS[d]}" if d == "edgetpu" else f"a {KIND_WORDS.get(d, d)}" for d in devices)


def _parent(timeline: list[TimelineEntry]) -> str | None:
    return " -> ".join(t["step"] for t in timeline[:-1]) or "source"


__all__ = ["ConvertResult", "TOOL_DISTS", "execute", "tool_dists"]
