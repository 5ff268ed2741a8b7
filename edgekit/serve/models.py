"""What is served: each PATH (an artifact, or a conversion folder / manifest) to one model with a name.

A conversion folder's manifest lists many artifacts; the one served is the best for the device, by the
ranks each format declares (edgekit.core.formats.FORMATS `serve`): an Edge TPU artifact on the Edge TPU, ONNX
on a GPU, and on a CPU the int8 OpenVINO IR where OpenVINO runs (x86), else the int8 TFLite (as on a Raspberry
Pi), among those that passed validation and whose runtime runs here, or the one `--precision` names. Each model
answers to `<stem>` (while that is unique) and to `<stem>-<precision>`. Nothing is loaded here: the
result is plain data, so the choice can be tested and printed before any runtime starts.

The choice is an ordered list of candidates (`resolve_candidates`): the manifest's artifacts in that rank, each
with its format's runtime, then (where no --runtime is named) the same artifacts on the other runtimes that load
their format (an ONNX on OpenVINO). The server tries them in order (edgekit.serve.served.first_that_runs): a
runtime wheel can crash on a CPU that lacks an instruction it was built with (SIGILL on a Pi 4's Cortex-A72).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edgekit.core.artifact import Artifact, Manifest, Preprocessing, SourceInfo
from edgekit.core.errors import UsageError

if TYPE_CHECKING:
    from edgekit.runtimes.base import Runtime


ARM64 = ("aarch64", "arm64")  # platform.machine() of an Arm64 CPU (Linux, macOS)


def preference(kind: str, machine: str | None = None) -> dict[tuple[str, str], tuple[int, int]]:
    """(format, precision) -> its rank on device KIND, lower first: each format's `serve` ranks in
    edgekit.core.formats.FORMATS (ties go to the table's order). A kind no format names ranks as a CPU; on an Arm64
    CPU (MACHINE, default this one's) a format's "cpu-arm64" ranks stand for its "cpu" ones where it has them."""
    import platform

    from edgekit.core.formats import FORMATS

    if not any(kind in spec.serve for spec in FORMATS.values()):
        kind = "cpu"
    arm = kind == "cpu" and (machine or platform.machine()).lower() in ARM64

    def ranks(serve: Mapping[str, Mapping[str, int]]) -> Mapping[str, int]:
        return serve.get("cpu-arm64", serve.get(kind, {})) if arm else serve.get(kind, {})

    return {(name, precision): (rank, spec.order) for name, spec in FORMATS.items()
            for precision, rank in ranks(spec.serve).items()}

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelChoice:
    """One model to serve: where it is, how it is run, what the manifest says about it."""

    name: str
    aliases: tuple[str, ...]
    path: Path
    format: str
    precision: str | None
    runtime: str  # a runtime name (edgekit.runtimes.runtime_table)
    device: str  # the runtime device
    artifact: Artifact | None  # its manifest record, where there is a manifest
    preprocessing: Preprocessing | None
    threads: int | None = None  # the device profile's (--device NAME or FILE.toml), where --threads is not given
    source: SourceInfo | None = None  # the manifest's source: the tensor names served (edgekit.serve.names)
    chosen_by: str = ""  # why it stands where it does among its PATH's candidates (edgekit.serve.bench_rank)


def _stem(path: Path) -> str:
    stem = path.name.split(".")[0]
    return stem[: -len("_edgetpu")] if stem.endswith("_edgetpu") else stem


def _device_kind(device: str) -> tuple[str, int | None]:
    """(device kind, the device profile's thread count) for a device name, a profile name or a .toml file."""
    from edgekit.runtimes import DEVICE_ALIASES, DEVICES, normalize_device

    key = normalize_device(device)
    if key in DEVICES or key in DEVICE_ALIASES.values():
        return key, None
    from edgekit.measure.devices import load_profile

    profile = load_profile(device)
    return profile.kind, profile.threads


AUTO_KINDS = ("edgetpu", "gpu")  # the accelerators --device auto prefers over the CPU, in this order


def _auto_kind(arts: list[Artifact]) -> str:
    """For --device auto over a manifest: the first accelerator of AUTO_KINDS that some artifact's format is served
    on (its record's serve ranks) and whose runtime finds here; else the CPU."""
    from edgekit.core.formats import FORMATS
    from edgekit.runtimes import pick_runtime

    formats = {a.format for a in arts if a.format in FORMATS}
    for kind in AUTO_KINDS:
        if any(kind in FORMATS[f].serve and pick_runtime(f).available(kind)[0] for f in sorted(formats)):
            return kind
    return "cpu"


def choose_artifact(manifest: Manifest, device: str, precision: str | None, runtime: str | None) -> Artifact:
    """The artifact of MANIFEST to serve on DEVICE (auto, cpu, gpu, edgetpu, a profile): see the module doc."""
    return rank_artifacts(manifest, device, precision, runtime)[0]


def rank_artifacts(manifest: Manifest, device: str, precision: str | None, runtime: str | None) -> list[Artifact]:
    """The artifacts of MANIFEST that may be served on DEVICE, best first (`choose_artifact` takes the first)."""
    from edgekit.core.precisions import get_precision

    ok = [a for a in manifest.artifacts if a.ok and (a.fidelity is None or a.fidelity.passed)]
    if not ok:
        raise UsageError("The manifest lists no artifact that was made and passed validation.",
                         hint="Convert again, or serve one artifact file directly.")
    kind = _auto_kind(ok) if device == "auto" else _device_kind(device)[0]
    wanted = get_precision(precision).name if precision else None
    rank = preference(kind)
    candidates = [a for a in ok if (a.format, a.precision) in rank and (wanted is None or a.precision == wanted)
                  and (runtime is None or _runtime_loads(runtime, a.format))]
    if not candidates:
        have = ", ".join(sorted({f"{a.format} {a.precision}" for a in ok}))
        raise UsageError(f"No artifact in the manifest fits --device {device}"
                         + (f" --precision {precision}" if precision else "") + f" (it has: {have}).",
                         hint="Choose another --precision or --device, or serve an artifact file directly.")
    # an artifact whose runtime runs here before one whose runtime does not (OpenVINO where it is installed, the
    # TFLite where LiteRT is); the int8 TFLite with int8 I/O before the uint8-I/O one: the same model, the common
    # case first
    log.debug("device kind %s: candidates %s", kind, [a.path for a in candidates])
    runs = _runs_here(kind, {a.format for a in candidates})
    return sorted(candidates, key=lambda a: (not runs[a.format], rank[(a.format, a.precision)],
                                             a.extra.get("io_dtype") == "uint8"))


def _runs_here(kind: str, formats: set[str]) -> dict[str, bool]:
    """Whether each format's default runtime is available for device KIND on this machine (installed, and the
    device present); only asked where several formats compete."""
    from edgekit.runtimes import pick_runtime

    if len(formats) < 2:
        return dict.fromkeys(formats, True)
    return {fmt: bool(pick_runtime(fmt).available(kind)[0]) for fmt in formats}


def _runtime_loads(runtime: str, fmt: str) -> bool:
    from edgekit.runtimes import get_runtime

    return fmt in get_runtime(runtime).formats


def _preprocessing(manifest: Manifest | None) -> Preprocessing | None:
    if manifest is None:
        return None
    return manifest.preprocessing or Preprocessing.of_conversion(manifest.options, manifest.source)


def resolve_one(path: Path, device: str, precision: str | None, runtime: str | None) -> ModelChoice:
    """PATH (artifact, folder or manifest.json) to the model served from it (not loaded): its first candidate."""
    return resolve_candidates(path, device, precision, runtime)[0]


def resolve_candidates(path: Path, device: str, precision: str | None, runtime: str | None) -> list[ModelChoice]:
    """PATH to the models that may be served from it, in the order to try them (see the module doc).

    A folder or manifest: its ranked artifacts on their formats' runtimes (or RUNTIME); one artifact file: that file.
    Then, where RUNTIME is None, the same files on each other runtime that loads their format. Nothing is loaded,
    and no runtime's availability is asked here: the server asks only where it comes to a fallback.
    """
    from edgekit.runtimes import detect_format, pick_runtime, runtimes_for_format

    p = Path(path)
    if not p.exists():
        raise UsageError(f"No such file or folder: {p}.",
                         hint="Pass an artifact or an `edgekit convert` output folder.")
    manifest: Manifest | None = None
    files: list[tuple[Path, Artifact | None]] = []
    if p.is_dir() and (p / "manifest.json").is_file() or p.name == "manifest.json":
        manifest = Manifest.read(p)
        mf = p if p.name == "manifest.json" else p / "manifest.json"
        files = [(manifest.resolve(a, mf), a) for a in rank_artifacts(manifest, device, precision, runtime)]
        stem = _stem(Path(manifest.source.path)) if manifest.source.path else _stem(files[0][0])
    else:
        from edgekit.measure.artifact import manifest_for

        art: Artifact | None = None
        found = manifest_for(p)
        if found is not None:
            manifest, art = found
        files = [(p, art)]
        stem = _stem(p)
    kind, threads = _device_kind(device) if device != "auto" else ("auto", None)
    firsts, others = [], []
    for file, art in files:
        fmt = detect_format(file)
        cls = pick_runtime(fmt, runtime)
        choice = _choice(stem, file, fmt, art, cls, kind, threads, manifest)
        firsts.append(choice)
        if runtime is None:
            others += [_choice(stem, file, fmt, art, pick_runtime(fmt, name), kind, threads, manifest)
                       for name in runtimes_for_format(fmt) if name != cls.name]
    return firsts + others


def _choice(stem: str, file: Path, fmt: str, art: Artifact | None, cls: type[Runtime], kind: str, threads: int | None,
            manifest: Manifest | None) -> ModelChoice:
    from edgekit.runtimes import resolve_device

    dev = resolve_device(cls, fmt, kind)
    prec: str | None  # None: neither the manifest nor the file name says
    if art is not None:
        prec = art.precision
    else:
        from edgekit.measure.artifact import guess_precision

        prec = guess_precision(file, None)[0]
    return ModelChoice(name=stem, aliases=(), path=file, format=fmt, precision=prec, runtime=cls.name, device=dev,
                       artifact=art, preprocessing=_preprocessing(manifest), threads=threads,
                       source=manifest.source if manifest is not None else None)


def name_models(choices: list[ModelChoice]) -> list[ModelChoice]:
    """Unique names: `<stem>` where only one model has that stem, else `<stem>-<precision>` (and the format)."""
    from collections import Counter
    from dataclasses import replace

    def long(c: ModelChoice) -> str:
        return f"{c.name}-{c.precision}" if c.precision else c.name

    stems = Counter(c.name for c in choices)
    longs = Counter(long(c) for c in choices)
    out = []
    for c in choices:
        full = long(c)
        if longs[full] > 1:
            full = f"{full}-{c.format}"
        name = c.name if stems[c.name] == 1 else full
        aliases = () if full == name else (full,)
        if not NAME_RE.match(name):
            raise UsageError(f"'{name}' cannot be a model name in a URL.",
                             hint="Rename the file to letters, digits, '_', '-' and '.'.")
        out.append(replace(c, name=name, aliases=aliases))
    names = [n for c in out for n in (c.name, *c.aliases)]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"Several PATHs would be served as {', '.join(dup)}.",
                         hint="Serve each file once, or rename one of them.")
    return out


def resolve_models(paths: list[Path], device: str = "auto", precision: str | None = None,
                   runtime: str | None = None) -> list[ModelChoice]:
    if not paths:
        raise UsageError("Name at least one artifact or conversion folder to serve.")
    return name_models([resolve_one(p, device, precision, runtime) for p in paths])


def resolve_candidate_lists(paths: list[Path], device: str = "auto", precision: str | None = None,
                            runtime: str | None = None) -> list[list[ModelChoice]]:
    """Each PATH's candidates (`resolve_candidates`), not yet named: the names follow the candidate served (the
    server orders them by this machine's bench report where there is one: edgekit.serve.bench_rank)."""
    if not paths:
        raise UsageError("Name at least one artifact or conversion folder to serve.")
    return [resolve_candidates(p, device, precision, runtime) for p in paths]


def read_labels(path: Path | None) -> list[str] | None:
    """Class names, one a line (blank lines kept as empty names so indices stay right; a trailing one dropped)."""
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"Cannot read the labels file {path}: {exc}.",
                         hint="One class name a line, in the order of the model's outputs.") from exc
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise UsageError(f"The labels file {path} is empty.")
    return [ln.strip() for ln in lines]


__all__ = ["ModelChoice", "choose_artifact", "name_models", "preference", "rank_artifacts", "read_labels",
           "resolve_candidate_lists", "resolve_candidates", "resolve_models"]
