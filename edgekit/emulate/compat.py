"""Which artifacts run on which Pi core, and whether they compute what they compute here: the compatibility table.

For every artifact of one or more conversion folders (their manifests), on each emulated core: run it with the
aarch64 runtime that runs its format (onnxruntime, LiteRT) on the same inputs as this host's run of the same
file, and say what happened, one row per core x artifact:
- `agrees`: it ran, and every output is within RELATIVE_TOLERANCE of this host's;
- `differs`: it ran, and an output is further than that (the figures say how far: fp16 arithmetic, other kernels);
- `sigill`: it died on an instruction the core lacks (the instruction and its extension named);
- `crash`: it died of another signal;
- `error`: the runtime refused it with an error.
Each core runs all the artifacts in one emulated process (start-up under emulation costs seconds); where that
process crashes, each artifact is run alone on that core to find which crashed. Timings are never recorded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core.errors import EdgekitError, RuntimeFailure
from edgekit.core.records import Record
from edgekit.emulate.cpus import EmulatedCpu

RELATIVE_TOLERANCE = 1e-3  # ||device - host|| / ||host|| per output: above it, a row "differs"
STATUSES = ("agrees", "differs", "sigill", "crash", "error")


@dataclass
class Row(Record):
    """One artifact on one core."""

    device: str
    core: str
    artifact: str
    format: str
    precision: str
    status: str = "error"  # one of STATUSES
    runtime: str = ""  # "onnxruntime 1.32.0" as the emulated process reported it
    kernels: str | None = None
    detail: str = ""
    relative_difference: float | None = None  # the largest over the outputs
    cosine: float | None = None  # the smallest over the outputs
    instruction: dict[str, str] | None = None  # for sigill: address, word, what, extension


@dataclass(frozen=True)
class RunRequest(Record):
    """What the child running several artifacts gets: each artifact's path, runtime and input names."""

    paths: list[str] = field(default_factory=list)
    runtimes: list[str] = field(default_factory=list)  # "module:Class" per path
    inputs: list[list[str]] = field(default_factory=list)  # per path, its input names (arrays a<i>x<j>)
    options: list[dict[str, Any]] = field(default_factory=list)  # per path, the runtime's load options


def _run_in_child(request: RunRequest, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """In the child (host or emulated): every artifact on its inputs; outputs a<i>y<k>, runtime facts per artifact."""
    from edgekit.core.registry import resolve
    from edgekit.validation.artifact import _outputs

    facts: list[dict[str, Any]] = []
    out: dict[str, np.ndarray] = {}
    for i, (path, runtime, names, options) in enumerate(zip(request.paths, request.runtimes, request.inputs,
                                                             request.options, strict=True)):
        cls = resolve({"runtime": runtime}, "runtime", "runtime")
        rt = cls()
        rt.load(Path(path), **options)
        try:
            feeds = {name: arrays[f"a{i}x{j}"] for j, name in enumerate(names)}
            layout = "NCHW"  # the arrays are already in the artifact's own layout: no rearranging
            ys = _outputs(rt, feeds, layout, layout)
            facts.append({"runtime": f"{cls.name} {cls.version() or ''}".strip(), "kernels": rt.info().get("kernels"),
                          "outputs": [o.name for o in rt.outputs]})
            for k, o in enumerate(rt.outputs):
                out[f"a{i}y{k}"] = ys[o.name]
        finally:
            rt.close()
    return {"artifacts": facts}, out


@dataclass
class _Item:
    """One artifact to run: its file, record and inputs (in its own layout and input order)."""

    path: Path
    name: str
    format: str
    precision: str
    runtime: str
    inputs: dict[str, np.ndarray]
    options: dict[str, Any] = field(default_factory=dict)  # the runtime's load options: LiteRT's kernels

    @property
    def key(self) -> str:
        """The row's name: the file, and the kernels where the runtime has several paths."""
        return self.name + (f" ({self.options['kernels']})" if "kernels" in self.options else "")


def items_of(folder: Path, inputs: str | None = None, samples: int = 8) -> list[_Item]:
    """The runnable artifacts of the conversion in FOLDER, each with SAMPLES inputs (INPUTS: a sample spec such as
    "mnist" or a .npz, else uniform random in [0, 1)), in its own layout."""
    from edgekit.core.artifact import Manifest
    from edgekit.runtimes import default_runtimes, runtime_for_format

    manifest_path = Path(folder) / "manifest.json" if Path(folder).is_dir() else Path(folder)
    manifest = Manifest.read(manifest_path)
    runnable = default_runtimes()
    items = []
    for art in manifest.artifacts:
        if not art.ok or art.format not in runnable or not art.inputs:
            continue
        cls = runtime_for_format(art.format)
        feeds = {}
        for j, spec in enumerate(art.inputs):
            shape = [samples, *[d if d > 0 else 1 for d in spec.shape[1:]]]
            feeds[spec.name] = _samples(inputs, shape, spec.layout, seed=j)
        # a runtime with several CPU kernel paths (LiteRT: XNNPACK, its builtin kernels) gets a row per path
        for kernels in getattr(cls, "kernel_paths", None) or (None,):
            items.append(_Item(path=manifest.resolve(art, manifest_path), name=art.path, format=art.format,
                               precision=art.precision, runtime=f"{cls.__module__}:{cls.__qualname__}", inputs=feeds,
                               options={"kernels": kernels} if kernels else {}))
    return items


def _samples(spec: str | None, shape: list[int], layout: str | None, seed: int) -> np.ndarray:
    if spec and len(shape) == 4:
        from edgekit.data.calibration import load_samples

        x = np.asarray(load_samples(spec, shape, layout or "NCHW").x, dtype=np.float32)
        if len(x):
            return x[np.arange(shape[0]) % len(x)]
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


def _request(items: list[_Item]) -> tuple[RunRequest, dict[str, np.ndarray]]:
    arrays = {f"a{i}x{j}": x for i, it in enumerate(items) for j, x in enumerate(it.inputs.values())}
    req = RunRequest(paths=[str(it.path.resolve()) for it in items], runtimes=[it.runtime for it in items],
                     inputs=[list(it.inputs) for it in items], options=[dict(it.options) for it in items])
    return req, arrays


def _run(items: list[_Item], on: Any = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    from edgekit.core.isolate import run_isolated

    req, arrays = _request(items)
    where = f" on {on.cpu.label}" if on is not None else ""
    return run_isolated("edgekit.emulate.compat:_run_in_child", req, arrays, who=f"the runtime{where}",
                        doing=f"running {', '.join(it.key for it in items)}", launcher=on,
                        binds=sorted({it.path.resolve().parent for it in items}))


def _compare(host: dict[str, np.ndarray], dev: dict[str, np.ndarray], i: int) -> tuple[float, float]:
    """(largest relative difference, smallest cosine) over artifact I's outputs."""
    rel, cos = 0.0, 1.0
    for key, a in host.items():
        if not key.startswith(f"a{i}y"):
            continue
        b = dev.get(key)
        if b is None or b.shape != a.shape:
            return float("inf"), 0.0
        a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
        na, nb = np.linalg.norm(a64), np.linalg.norm(b64)
        rel = max(rel, float(np.linalg.norm(a64 - b64) / na) if na else float(nb > 0))
        cos = min(cos, float(a64 @ b64 / (na * nb)) if na and nb else float(na == nb))
    return rel, cos


def _failed_row(base: Row, exc: EdgekitError) -> Row:
    from edgekit.core.sigill import parse_report

    message = exc.message
    if "SIGILL" in message:
        found = parse_report(message)
        return dataclasses.replace(base, status="sigill", detail=message, instruction=found)
    if "crashed" in message:
        return dataclasses.replace(base, status="crash", detail=message)
    return dataclasses.replace(base, status="error", detail=message)


def check(folders: list[Path], cpus: list[EmulatedCpu], inputs: str | None = None, samples: int = 8,
          progress: Callable[[str], None] = lambda s: None, land: Any = None) -> list[Row]:
    """The compatibility rows of every runnable artifact in FOLDERS on each of CPUS (in the userland LAND)."""
    from edgekit.emulate.launch import Emulator

    items = [it for folder in folders for it in items_of(Path(folder), inputs, samples)]
    if not items:
        return []
    progress(f"this host: {len(items)} artifact runs")
    host_facts, host = _run(items)
    rows: list[Row] = []
    for cpu in cpus:
        emu = Emulator(cpu, land)
        progress(f"{cpu.label}: {len(items)} artifact runs in one emulated process ...")
        # (the artifacts of one child, its facts or the error it ended with, their outputs)
        answers: list[tuple[list[_Item], dict[str, Any] | EdgekitError, dict[str, np.ndarray]]]
        try:
            answers = [(items, *_run(items, emu))]
        except RuntimeFailure as exc:  # find which artifact: each alone
            progress(f"{cpu.label}: {exc.message.splitlines()[0][:160]}; each artifact alone ...")
            answers = []
            for it in items:
                try:
                    answers.append(([it], *_run([it], emu)))
                except EdgekitError as one:
                    answers.append(([it], one, {}))
        by_key = {}
        for group, facts, arrays in answers:
            for k, it in enumerate(group):
                by_key[it.key] = (facts, arrays, k)
        for i, it in enumerate(items):
            base = Row(device=cpu.device, core=cpu.core, artifact=it.name, format=it.format, precision=it.precision,
                       kernels=it.options.get("kernels"))
            facts, arrays, k = by_key[it.key]
            if isinstance(facts, EdgekitError):
                rows.append(_failed_row(base, facts))
                continue
            fact = facts["artifacts"][k]
            dev = {f"a{i}y{j}": arrays[f"a{k}y{j}"] for j in range(len(fact["outputs"]))}
            rel, cos = _compare({key: v for key, v in host.items() if key.startswith(f"a{i}y")}, dev, i)
            status = "agrees" if rel <= RELATIVE_TOLERANCE else "differs"
            rows.append(dataclasses.replace(base, status=status, runtime=fact["runtime"],
                                            kernels=fact.get("kernels") or base.kernels,
                                            relative_difference=rel, cosine=cos,
                                            detail="identical" if rel == 0 else ""))
        progress(f"{cpu.label}: " + ", ".join(f"{s} {sum(r.status == s for r in rows if r.device == cpu.device)}"
                                              for s in STATUSES if any(r.status == s and r.device == cpu.device
                                                                       for r in rows)))
    del host_facts
    return rows


def markdown(rows: list[Row]) -> str:
    """The table: one line per artifact, one column per core."""
    cores = list(dict.fromkeys((r.device, r.core) for r in rows))
    lines = ["| artifact | runtime | " + " | ".join(f"{d} ({c})" for d, c in cores) + " |",
             "|---|---|" + "---|" * len(cores)]
    for name, kernels in dict.fromkeys((r.artifact, r.kernels) for r in rows):
        mine = {r.device: r for r in rows if r.artifact == name and r.kernels == kernels}
        runtime = next((r.runtime for r in mine.values() if r.runtime), "")
        runtime += f" ({kernels})" if kernels else ""
        lines.append(f"| {name} | {runtime} | " + " | ".join(_cell(mine.get(d)) for d, _ in cores) + " |")
    return "\n".join(lines)


def _cell(row: Row | None) -> str:
    if row is None:
        return "-"
    if row.status in ("agrees", "differs"):
        figure = "identical" if row.relative_difference == 0 else f"rel. diff {row.relative_difference:.1e}"
        return f"{'runs, agrees' if row.status == 'agrees' else '**runs, differs**'} ({figure})"
    if row.status == "sigill" and row.instruction:
        return f"**SIGILL**: {row.instruction.get('what')} ({row.instruction.get('extension')})"
    return f"**{row.status}**: {row.detail[:120]}"


__all__ = ["RELATIVE_TOLERANCE", "STATUSES", "Row", "RunRequest", "check", "items_of", "markdown"]
