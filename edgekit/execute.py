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

from edgekit._deps import version_of
from edgekit._version import __version__
from edgekit.artifact import Artifact, Manifest
from edgekit.errors import UsageError
from edgekit.formats import FORMATS
from edgekit.fsutil import publish, sha256_file, staging_dir
from edgekit.plan import Plan, check_outputs, shown_path, stem_of
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
    def fidelity_failures(self) -> list[Artifact]:
        return [a for a in self.artifacts if a.fidelity is not None and not a.fidelity.passed]


TimelineEntry = dict[str, Any]  # {"step": name, "seconds": float, "shared": bool}: manifest `extra.steps`


class _Runner:
    """Runs steps once per distinct chain prefix, with progress lines and per-step timings."""

    def __init__(self, plan: Plan, ctx: StepContext, progress: Callable[[str], None]) -> None:
        self.ctx, self.progress = ctx, progress
        self.memo: dict[tuple[Any, ...], tuple[Intermediate, float]] = {}
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
                nxt = _run_quietly(step, cur, self.ctx, self.progress)
                self.memo[key] = (nxt, time.perf_counter() - t0)
                self.progress(f"[{self.done}/{self.total}] {step.name} done in {self.memo[key][1]:.1f}s")
            cur, secs = self.memo[key]
            # a step shared by several artifacts is charged to the first that needed it
            timeline.append({"step": step.name, "seconds": round(secs, 3), "shared": not first})
        return cur, key, timeline


def execute(plan: Plan, calib: np.ndarray | None, ref: Any, progress: Callable[[str], None]) -> ConvertResult:
    """Run every chain (shared prefixes once), validate each artifact, publish, write the manifest."""
    options, source = plan.options, plan.source
    out_dir = Path(options.out_dir)
    check_outputs(plan, out_dir)

    def calibration() -> np.ndarray:
        if calib is None:
            raise UsageError("This step needs calibration data (--calib).")
        return calib

    artifacts: dict[str, Artifact] = {}
    extra_files: list[str] = []
    unfinished: list[str] = []
    with staging_dir(out_dir) as work:
        ctx = StepContext(work=work, stem=stem_of(source), source=source, options=options, calibration=calibration,
                          log=progress)
        start = Intermediate(kind=source.family, path=source.path, obj=source.model, layout=source.layout,
                             signature=source.signature)
        runner = _Runner(plan, ctx, progress)
        for chain in plan.chains:
            cur, key, timeline = runner.run(chain.steps, start)
            if cur.path is None:
                raise UsageError(f"The {chain.label} chain produced no file.")
            art = artifacts.get(cur.path.name)
            if art is None:
                art = artifacts[cur.path.name] = _artifact(cur.path, chain.format, cur, timeline, ref, progress)
            for post in chain.post_steps:
                derived, key, post_timeline = runner.run([post], cur, key)
                if derived.report is not None and derived.report_key:
                    art.extra[derived.report_key] = derived.report
                if derived.path is None:  # could not run here: say how to finish, with the published path
                    finish = post.how_to_finish(shown_path(out_dir / art.path), options)
                    if derived.report is not None:
                        derived.report["how_to_finish"] = finish
                    unfinished.append(finish)
                    continue
                made = _derived(derived, post.produces, art, [*timeline, *post_timeline], ref, progress)
                artifacts[derived.path.name] = made
                for role, side in derived.side_files.items():
                    extra_files.append(side.name)
                    made.extra[role] = side.name
        warnings = _warnings(artifacts.values())
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
    return ConvertResult(manifest, manifest_path, bool(unfinished), unfinished[0] if unfinished else None, warnings)


def _warnings(artifacts: Any) -> list[str]:
    out = []
    for art in artifacts:
        if art.fidelity is not None and not art.fidelity.passed:
            out.append(f"{art.path}: fidelity below threshold: {'; '.join(art.fidelity.failures)}")
        if art.extra.get("dynamic_shape_ops"):
            out.append(f"{art.path}: contains dynamic-shape ops {art.extra['dynamic_shape_ops']}")
    return out


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


def _artifact(path: Path, fmt: str, inter: Intermediate, timeline: list[TimelineEntry], ref: Any,
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
    extra: dict[str, Any] = {"steps": timeline, "validation_seconds": round(time.perf_counter() - t0, 3),
                             **inter.manifest_facts()}
    return Artifact(
        path=path.name, format=fmt, precision=inter.precision, inputs=inputs, outputs=outputs,
        size_bytes=path.stat().st_size, sha256=sha256_file(path), parent=_parent(timeline), fidelity=fidelity,
        seconds=round(_own_seconds(timeline) + extra["validation_seconds"], 3), extra=extra,
    )


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
            size_bytes=inter.path.stat().st_size, sha256=sha256_file(inter.path), parent=parent.path, fidelity=None,
            seconds=round(_own_seconds(timeline[-1:]), 3),
            extra={"steps": timeline, "validation": f"not run here: needs {_device_words(spec.devices)}; "
                                                    f"{parent.path}, which it was compiled from, was validated"},
        )
    if inter.report is not None and inter.report_key:
        made.extra = {inter.report_key: inter.report, **made.extra}
    return made


def _device_words(devices: tuple[str, ...]) -> str:
    from edgekit.devices import KIND_WORDS

    return " or ".join(f"an {KIND_WORDS[d]}" if d == "edgetpu" else f"a {KIND_WORDS.get(d, d)}" for d in devices)


def _parent(timeline: list[TimelineEntry]) -> str | None:
    return " -> ".join(t["step"] for t in timeline[:-1]) or "source"


__all__ = ["ConvertResult", "TOOL_DISTS", "execute"]
