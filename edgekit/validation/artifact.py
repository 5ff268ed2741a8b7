"""Reference vs artifact on the same held-out inputs.

`check_artifact` is what conversion calls: it reads the artifact's I/O and runs it in ONE child
process (edgekit.core.isolate), so a runtime that aborts natively on a freshly written model fails that
artifact, not edgekit; where a runtime has several CPU kernel paths (LiteRT: XNNPACK, then its
builtin kernels) the next is tried when one fails, and the record says which one validated it.

Every artifact, quantized ones included (unlike Optimum, which skips quantized exports), is run
through its real runtime on held-out samples and compared with the source model, EVERY output:
each artifact output is matched to the source's by name (edgekit.fidelity.matching: names, signature
keys, and only where names are lost shape and values; never position) and judged by the measures of
its kind (edgekit.fidelity.kinds: top-1 agreement for class scores, per-pixel argmax agreement for
dense maps, per-step agreement for sequences, cosine and relative error for the rest), with accuracy
and mIoU where labels exist. NaN or inf outputs always fail (some converter paths produce them
silently). The artifact's record is its worst output's, with every output's own beside it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core.artifact import Fidelity, OutputFidelity, TensorSpec
from edgekit.core.batching import rows_per_chunk
from edgekit.core.border import vendor_errors
from edgekit.core.errors import RuntimeFailure
from edgekit.core.formats import FORMATS
from edgekit.core.isolate import Launcher
from edgekit.core.layout import to_layout
from edgekit.core.records import Record
from edgekit.fidelity.kinds import thresholds as kind_thresholds
from edgekit.fidelity.landmarks import CUT, is_logit, score_of
from edgekit.fidelity.matching import match_outputs, normalized
from edgekit.fidelity.metrics import judge, judge_detection, worst
from edgekit.runtimes import Runtime, runtime_for_format


@dataclass
class Reference:
    """Held-out inputs (in the source's layout), the source model's outputs on them, and labels.

    X and Y_REF are the first input and output; FEEDS and OUTPUTS hold every input and output by the
    source's names (None: a single input / output, X and Y_REF). KINDS overrides the kind an output is
    judged as (edgekit.fidelity.kinds), MASKS are (N, H, W) label masks for dense outputs.
    """

    x: np.ndarray
    y_ref: np.ndarray
    labels: np.ndarray | None
    layout: str
    inputs_name: str  # where the inputs came from: "mnist-test", "random", ...
    outputs: dict[str, np.ndarray] | None = None
    feeds: dict[str, np.ndarray] | None = None
    masks: np.ndarray | None = None
    kinds: dict[str, str] = field(default_factory=dict)
    # how each output is judged and why (edgekit.fidelity.decide.KindChoice); empty: decided from KINDS and the
    # outputs when first compared. BOXES: labelled boxes of the held-out inputs, (M, 6) [image, class, x1, y1, x2, y2]
    choices: dict[str, Any] = field(default_factory=dict)
    boxes: np.ndarray | None = None
    # where each `mask` output is cut, by source output name ("*": every one; --mask-threshold), default 0.5
    mask_thresholds: dict[str, float] = field(default_factory=dict)

    def mask_threshold(self, name: str) -> float | None:
        return self.mask_thresholds.get(name, self.mask_thresholds.get("*"))

    def input_arrays(self, name: str = "input") -> dict[str, np.ndarray]:
        return dict(self.feeds) if self.feeds else {name: self.x}

    def output_arrays(self) -> dict[str, np.ndarray]:
        return dict(self.outputs) if self.outputs else {"output": self.y_ref}


def _feed_for(spec_name: str, feeds: dict[str, np.ndarray], n_specs: int) -> np.ndarray:
    """The source input that feeds the artifact input SPEC_NAME: the same name (normalised), or the only one."""
    if spec_name in feeds:
        return feeds[spec_name]
    same = [k for k in feeds if normalized(k) == normalized(spec_name)]
    if len(same) == 1:
        return feeds[same[0]]
    if len(feeds) == 1 and n_specs == 1:
        return next(iter(feeds.values()))
    raise RuntimeFailure(f"The artifact's input '{spec_name}' matches none of the source's inputs {list(feeds)}.")


def _outputs(runtime: Runtime, feeds: dict[str, np.ndarray], layout_from: str, layout_to: str
             ) -> dict[str, np.ndarray]:
    """Every output of a loaded RUNTIME (by its own names) on every sample of FEEDS (source input name -> batch).

    Image-shaped inputs go in, and outputs come back, in FEEDS' layout.
    """
    specs = runtime.inputs
    xs = {s.name: to_layout(_feed_for(s.name, feeds, len(specs)), layout_from, layout_to).astype(np.float32)
          for s in specs}
    first = specs[0]
    batch = first.shape[0] if first.shape and first.shape[0] > 0 else rows_per_chunk(xs.values(), 64)
    total = len(next(iter(xs.values())))
    outs: dict[str, list[np.ndarray]] = {o.name: [] for o in runtime.outputs}
    for i in range(0, total, batch):
        chunk = {k: v[i:i + batch] for k, v in xs.items()}
        n = len(next(iter(chunk.values())))
        if n < batch and first.shape and first.shape[0] > 0:  # static batch: pad the last chunk
            chunk = {k: np.concatenate([v, np.repeat(v[-1:], batch - n, axis=0)]) for k, v in chunk.items()}
        got = runtime.run_float(chunk)
        for name in outs:
            outs[name].append(np.asarray(got[name], dtype=np.float32)[:n])
    result = {}
    for name, parts in outs.items():
        y_all = np.concatenate(parts)
        if y_all.ndim == 4 and layout_from != layout_to:  # image-shaped outputs come back in the artifact's layout
            y_all = to_layout(y_all, layout_to, layout_from)
        result[name] = y_all
    return result


def compare(ref: Reference, y: np.ndarray | dict[str, np.ndarray], precision: str,
            thresholds: dict[str, float] | None = None, signature: dict[str, str] | None = None,
            specs: dict[str, TensorSpec] | None = None) -> Fidelity:
    """Fidelity of the artifact's outputs Y against the reference, each output judged as its kind.

    Y: the artifact's outputs by its own names (matched to the source's by edgekit.fidelity.matching,
    SIGNATURE: tensor name -> signature key), or one array for a single-output source. The record
    returned is the worst output's, with every output's own in `outputs`.
    """
    source = ref.output_arrays()
    got = y if isinstance(y, dict) else {next(iter(source)): y}
    matches = match_outputs(source, got, signature, list(source))
    several = len(source) > 1
    per: list[OutputFidelity] = []
    choices = decided(ref)
    first_classes = next((n for n in source if choices[n].kind == "classes"), None)
    by_source = {m.source: m for m in matches}
    groups: dict[int, Fidelity] = {}  # a multi-output detector head is judged once, for all its outputs
    present = _present(source, choices)
    for m in matches:
        a = source[m.source]
        choice = choices[m.source]
        kind = choice.kind
        head = choice.head
        if kind == "detection" and head is not None and all(by_source[o].artifact for o in head.outputs):
            if id(head) not in groups:
                arts = [by_source[o].artifact for o in head.outputs]  # every one named: checked above
                groups[id(head)] = judge_detection([source[o] for o in head.outputs],
                                                   [got[a] for a in arts if a is not None], head,
                                                   precision=precision, boxes=ref.boxes, thresholds=thresholds,
                                                   inputs=ref.inputs_name, name=head.outputs[0])
            fid = dataclasses.replace(groups[id(head)], failures=list(groups[id(head)].failures))
        elif m.artifact is None:
            fid = Fidelity(samples=len(a), top1_agreement=None, cosine=float("nan"), max_abs_error=float("nan"),
                           passed=False, thresholds=kind_thresholds(kind, precision), inputs=ref.inputs_name,
                           failures=[f"the artifact has no output matching the source's '{m.source}' "
                                     f"(shape {list(a.shape)}); it returns {sorted(got)}"], output=m.source, kind=kind)
        elif kind == "landmarks" and present is not None and 0 < int(present[1].sum()) < len(a):
            gate, keep = present
            fid = judge(a[keep], got[m.artifact][keep], kind=kind, precision=precision, thresholds=thresholds,
                        inputs=ref.inputs_name, name=m.source, landmarks=getattr(choice, "landmarks", None))
            fid.notes.append(f"judged on the {int(keep.sum())} of {len(a)} samples where the source's presence "
                             f"'{gate}' is at least {CUT}: a pipeline drops the others (MediaPipe's does), so their "
                             "points are never used")
        else:
            fid = judge(a, got[m.artifact], kind=kind, precision=precision, channel_axis=-1 if ref.layout == "NHWC"
                        else 1, labels=ref.labels if m.source == first_classes else None,
                        masks=ref.masks if kind == "dense" else None, thresholds=thresholds, inputs=ref.inputs_name,
                        name=m.source, mask_threshold=ref.mask_threshold(m.source) if kind == "mask" else None,
                        landmarks=getattr(choice, "landmarks", None))
            if kind == "landmarks" and present is not None and not present[1].any():
                fid.notes.append(f"the source's presence '{present[0]}' is under {CUT} on every sample: the "
                                 "landmarks are judged on all of them, though a pipeline would use none")
        if several:
            fid.failures = [f"output '{m.source}': {f}" for f in fid.failures]
        spec = (specs or {}).get(m.artifact or "")
        per.append(OutputFidelity(name=m.source, shape=list(a.shape[1:]) if spec is None else list(spec.shape),
                                  dtype=spec.dtype if spec is not None else "float32", kind=kind,
                                  artifact_name=m.artifact, matched_by=m.by, fidelity=fid,
                                  kind_reason=choice.reason))
    top = dataclasses.replace(worst([p.fidelity for p in per if p.fidelity is not None]))
    # a detector group's failures once, not once per output of the group (in their first order)
    top.failures = list(dict.fromkeys(f for p in per if p.fidelity is not None for f in p.fidelity.failures))
    top.passed = not top.failures
    top.outputs = per
    return top


def _present(source: dict[str, np.ndarray], choices: dict[str, Any]) -> tuple[str, np.ndarray] | None:
    """(the presence score's name, the samples where the source's is at least CUT) where an output gates the
    landmarks (edgekit.fidelity.decide: a face mesh's one score, or one asked for as `presence`); else None."""
    gate = next((n for n, c in choices.items() if getattr(c, "gates", False) and n in source), None)
    if gate is None:
        return None
    y = source[gate].reshape(len(source[gate]), -1)[:, 0]
    return gate, score_of(y, is_logit(y)) >= CUT


def decided(ref: Reference) -> dict[str, Any]:
    """REF's KindChoice per source output, decided (and kept on REF) the first time it is asked for."""
    if not ref.choices:
        from edgekit.fidelity.decide import decide_kinds
        from edgekit.fidelity.landmarks import image_size

        ref.choices = decide_kinds(ref.output_arrays(), ref.layout, ref.kinds, input_size=image_size(ref.x, ref.layout))
    return ref.choices


def validate(path: Path, fmt: str, layout: str, precision: str, ref: Reference,
             thresholds: dict[str, float] | None = None) -> Fidelity:
    """Run the artifact on the reference inputs and judge it."""
    return check_artifact(path, fmt, layout, precision, ref, isolate=False, thresholds=thresholds).fidelity


@dataclass
class ArtifactCheck:
    """What checking an artifact found: its I/O as its runtime reads them, its fidelity, the kernels that ran it."""

    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    fidelity: Fidelity
    kernels: str | None = None  # LiteRT on the CPU: "xnnpack" or "builtin"; None for other runtimes
    notes: list[str] = field(default_factory=list)  # e.g. why the builtin kernels validated it, not XNNPACK
    outputs_got: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # the artifact's outputs, by name


def check_artifact(path: Path, fmt: str, layout: str, precision: str, ref: Reference, *, isolate: bool = True,
                   thresholds: dict[str, float] | None = None, on: Launcher | None = None) -> ArtifactCheck:
    """Read PATH's I/O specs and validate it against REF, in one child process unless ISOLATE is False.

    A runtime that crashes (a signal) or fails on the artifact raises RuntimeFailure naming the runtime,
    the file and what it said: a clean error the caller records as this artifact's failure. Where the
    runtime has more than one CPU kernel path (`kernel_paths`: LiteRT's XNNPACK, then its builtin kernels)
    a path that fails is noted and the next one tried, each in its own child.
    EDGEKIT_NO_ISOLATION=1 runs it in this process, as isolate=False does. ON runs the child under another
    CPU (edgekit.emulate: a Raspberry Pi's core under qemu, its aarch64 runtimes), always in a child.
    """
    from edgekit.core.isolate import isolation_enabled, run_isolated

    cls = runtime_for_format(fmt)
    paths: tuple[str | None, ...] = getattr(cls, "kernel_paths", None) or (None,)
    isolate = (isolate and isolation_enabled()) or on is not None
    path = Path(path).resolve() if on is not None else path  # the same absolute path inside the emulated userland
    # the child finds the runtime by "module:Class" (one registered at run time is not in its own tables)
    feeds = ref.input_arrays()
    request = CheckRequest(path=str(path), runtime=f"{cls.__module__}:{cls.__qualname__}", layout_from=ref.layout,
                           layout_to=layout, inputs=list(feeds), format=fmt)
    sent = {f"x{i}": x for i, x in enumerate(feeds.values())}  # file names from indices: tensor names hold ':' '/'

    notes: list[str] = []
    refused: list[tuple[str, str]] = []  # (what the runtime said, the kernel path) for each path that failed
    for i, kernels in enumerate(paths):
        req = dataclasses.replace(request, options={"kernels": kernels} if kernels else {})
        words = f" with {_kernel_words(kernels)}" if kernels else ""
        try:
            if isolate:
                answer, arrays = run_isolated("edgekit.validation.artifact:_check_in_child", req, sent, who=cls.label(),
                                              doing=f"validating {path.name}{words}", hint=cls.hint_for,
                                              launcher=on, binds=[path.parent])
            else:
                answer, arrays = _check_in_child(req, sent)
        except RuntimeFailure as exc:
            exc.message = _named(exc.message, path)
            if i + 1 == len(paths):
                if refused:  # what an earlier path said as the last one did is said once, in the message
                    said = [f"{cls.label()} failed the same way with {k}" if m == exc.message
                            else f"{cls.label()} could not run {path.name} with {k}: {m}" for m, k in refused]
                    exc.hint = "\n".join([*said, exc.hint or ""]).strip()
                raise
            refused.append((exc.message, _kernel_words(kernels)))
            notes.append(f"{cls.label()} could not run {path.name}{words}: {exc.message}")
            continue
        if notes:
            notes.append(f"validated with {_kernel_words(kernels)}")
        outputs = [TensorSpec.from_dict(d) for d in answer["outputs"]]
        got = {o.name: arrays[f"y{i}"] for i, o in enumerate(outputs)}
        fidelity = compare(ref, got, precision, thresholds, answer.get("signature"), {o.name: o for o in outputs})
        return ArtifactCheck(inputs=[TensorSpec.from_dict(d) for d in answer["inputs"]], outputs=outputs,
                             fidelity=fidelity, kernels=answer.get("kernels"), notes=notes, outputs_got=got)
    raise AssertionError("unreachable: the last kernel path returns or raises")  # pragma: no cover


def _named(message: str, path: Path) -> str:
    """MESSAGE with PATH's folder left out: a failed artifact is validated in the run's staging folder, which is gone
    when the manifest is read (its name is the artifact's record)."""
    for shown in sorted({str(path), str(Path(path).resolve())}, key=len, reverse=True):
        message = message.replace(shown, path.name)
    return message


def _kernel_words(kernels: str | None) -> str:
    return {"xnnpack": "XNNPACK", "builtin": "its builtin kernels (no delegate)"}.get(kernels or "", str(kernels))


@dataclass(frozen=True)
class CheckRequest(Record):
    """What the validation child (`_check_in_child`) is sent: the artifact, its runtime, the layouts, the inputs.

    A record rather than a dict so a renamed key fails at the call, not as a KeyError inside the child.
    """

    path: str
    runtime: str  # "module:Class": the child finds the runtime by it (one registered at run time is not in its tables)
    layout_from: str  # the reference inputs' layout ...
    layout_to: str  # ... and the artifact's
    inputs: list[str] = field(default_factory=list)  # the input names, in the order of arrays x0, x1 ...
    format: str | None = None
    options: dict[str, Any] = field(default_factory=dict)  # the runtime's load options: {"kernels": "builtin"}


def _check_in_child(request: CheckRequest, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any],
                                                                                  dict[str, np.ndarray]]:
    """In the child (edgekit.core.isolate): load the artifact, read its I/O, run it on arrays["x"]."""
    from edgekit.core.cores import usable_cores
    from edgekit.core.registry import resolve

    cls: type[Runtime] = resolve({"runtime": request.runtime}, "runtime", "runtime")
    runtime = cls()
    # every core: LiteRT's Interpreter runs on one thread unless told (a ConvNeXt-T at 160: 70 -> 39 ms an invoke)
    runtime.load(Path(request.path), threads=usable_cores(), **request.options)
    try:
        names = request.inputs or ["input"]  # a request without names holds one array, "x"
        feeds = {name: arrays[f"x{i}"] if f"x{i}" in arrays else arrays["x"] for i, name in enumerate(names)}
        ys = _outputs(runtime, feeds, request.layout_from, request.layout_to)
        answer: dict[str, Any] = {"inputs": [s.to_dict() for s in runtime.inputs],
                                  "outputs": [s.to_dict() for s in runtime.outputs],
                                  "kernels": runtime.info().get("kernels")}
    finally:
        runtime.close()
    spec = FORMATS.get(request.format or "")
    if spec and spec.signature and len(ys) > 1:  # which tensor is which output of the model's own order
        with vendor_errors(runtime.vendor, error=RuntimeFailure,
                           what=f"Reading the output order of {request.path} failed"):
            answer["signature"] = resolve({spec.name: spec.signature}, spec.name, "output order")(request.path)
    return answer, {f"y{i}": ys[o["name"]] for i, o in enumerate(answer["outputs"])}
