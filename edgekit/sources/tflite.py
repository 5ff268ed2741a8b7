""".tflite sources: a model already converted, taken as it is where that makes sense.

A .tflite cannot be turned back into another format, but it can be finished: an int8 .tflite goes
to the Edge TPU (pre-flight and compile, through the `tflite_adopt` step and the edgetpu target's
post-step), and a float one is quantized (`tflite_quantize`). The file is read without TensorFlow
(edgekit.tflite.model); the reference is the file itself run by LiteRT (float in, quantized per the
model's input, dequantized out), every output by its name, so each artifact is validated against the
very model the user gave, output by output.

Custom ops: whether a model with custom ops can be the reference is LiteRT's to say, not a list's. LiteRT
is asked in a child process (a native abort there cannot take edgekit down) to load and run the file; the
model is refused, quoting LiteRT's own message, only where it cannot. MediaPipe's own custom ops
(`Convolution2DTransposeBias`, `MaxPoolingWithArgmax2D`, `MaxUnpooling2D`: XNNPACK runs them, the quantizer
and the Edge TPU compiler do not know them) are rewritten into exact builtins (edgekit.tflite.custom_ops) in
a copy the conversion reads; the reference stays the user's file as LiteRT runs it, so the rewrite is
validated against the original, or is the rewritten copy where LiteRT cannot run the original.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core.errors import RuntimeFailure, UnsupportedModel, UsageError
from edgekit.core.fsutil import sha256_file
from edgekit.core.layout import guess_layout
from edgekit.core.records import Record
from edgekit.core.sniff import EDGETPU_CUSTOM_OP, is_tflite_head
from edgekit.runtimes.litert_errors import custom_op_hint
from edgekit.sources.base import LoadOptions, Source, SourceSpec

_QUANT = ("int8", "uint8")
_EDGE_OPS = ("QUANTIZE", "DEQUANTIZE")
_QUOTE_LIMIT = 400  # characters of LiteRT's message quoted in a refusal
def precision_of(model: Any) -> str:
    """int8 for a full-integer model (float only at its QUANTIZE/DEQUANTIZE edges), else fp16/dynamic/fp32."""
    edge = {i for op in model.ops if op.op in _EDGE_OPS for i in (*op.inputs, *op.outputs)}
    acts = [t for t in model.tensors if not t.const]
    quant_acts = any(t.dtype in _QUANT for t in acts)
    float_acts = [t for t in acts if t.dtype.startswith("float") and t.index not in edge]
    if quant_acts and not float_acts:
        return "int8"
    weights = {t.dtype for t in model.tensors if t.const}
    if weights & set(_QUANT):
        return "dynamic"
    return "fp16" if "float16" in weights else "fp32"


def make_predict(path: Path) -> tuple[Callable[[np.ndarray], dict[str, np.ndarray]], list[str], Any]:
    """(float batch -> every output by name as float32, the output names in the model's order, the runtime), with
    LiteRT's CPU kernels (XNNPACK, else builtin)."""
    from edgekit.runtimes.litert import LiteRT

    rt = LiteRT()
    rt.load(path, device="cpu", kernels="auto")
    spec = rt.inputs[0]
    names = list(dict.fromkeys(o.name for o in rt.outputs))  # a damaged file may name one tensor twice
    static = spec.shape[0] if spec.shape and spec.shape[0] > 0 else 0

    def predict_all(x: np.ndarray) -> dict[str, np.ndarray]:
        parts: dict[str, list[np.ndarray]] = {n: [] for n in names}
        step = static or len(x) or 1
        for i in range(0, len(x), step):
            part = np.asarray(x[i:i + step], dtype=np.float32)
            n = len(part)
            if static and n < static:  # pad the last chunk up to the model's batch
                part = np.concatenate([part, np.repeat(part[-1:], static - n, axis=0)])
            got = rt.run_float({spec.name: part})
            for name in names:
                parts[name].append(np.asarray(got[name], dtype=np.float32)[:n])
        return {name: np.concatenate(p) for name, p in parts.items()}

    return predict_all, names, rt


@dataclass(frozen=True)
class RunsRequest(Record):
    """What `_runs_in_child` is sent: the .tflite LiteRT is asked to load and run once."""

    path: str


def _runs_in_child(request: RunsRequest, arrays: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """In the child (edgekit.core.isolate): load the file with LiteRT and run it once on zeros; LiteRT's own words
    where it cannot."""
    from edgekit.core.border import all_text
    from edgekit.runtimes.litert import LiteRT

    try:
        with LiteRT() as rt:
            rt.load(Path(request.path), device="cpu", kernels="auto")
            spec = rt.inputs[0]
            rt.run_float({spec.name: np.zeros([d if d > 0 else 1 for d in spec.shape], np.float32)})
    except RuntimeFailure as exc:  # LiteRT's load/run failures; a missing LiteRT (MissingDependency) is raised as it is
        said = all_text(exc.__cause__) if exc.__cause__ is not None else exc.message
        return {"runs": False, "said": _quoted(said)}, {}
    return {"runs": True, "said": ""}, {}


def _quoted(text: str) -> str:
    """LiteRT's message on one line, without its pointer to the custom-op guide, capped."""
    import re

    said = re.sub(r"See instructions:\s*\S+", "", text)
    said = " ".join(said.split())
    return said if len(said) <= _QUOTE_LIMIT else said[:_QUOTE_LIMIT - 3] + "..."


def litert_refusal(path: Path) -> str | None:
    """None where LiteRT loads and runs PATH (asked in a child process), else what LiteRT said (or how it died)."""
    from edgekit.core.isolate import isolation_enabled, run_isolated

    request = RunsRequest(path=str(path))
    if not isolation_enabled():
        answer, _ = _runs_in_child(request, {})
    else:
        try:
            answer, _ = run_isolated("edgekit.sources.tflite:_runs_in_child", request, who="LiteRT",
                                     doing=f"loading and running {path.name}")
        except RuntimeFailure as exc:  # a native abort in the child: LiteRT cannot run it either
            return _quoted(exc.message)
    return None if answer.get("runs") else str(answer.get("said") or "it gave no reason")


@dataclass
class _Reading:
    """How a .tflite with custom ops is read: the file the conversion reads, the file the reference runs, what
    changed, and the folder holding edgekit's rewritten copy (kept alive by the Source, removed with it)."""

    convert_from: Path
    reference: Path
    changes: list[str]
    folder: Any = None


def _with_custom_ops(path: Path, custom: list[str]) -> _Reading:
    """MediaPipe's custom ops rewritten into a copy; LiteRT asked whether it runs the original; refused where neither
    gives a reference, quoting LiteRT."""
    from edgekit.tflite.custom_ops import MEDIAPIPE_OPS, rewrite_custom_ops

    said = litert_refusal(path)
    rewritten = rewrite_custom_ops(path.read_bytes())
    if rewritten.refused:
        raise UnsupportedModel(
            f"{path.name} uses MediaPipe custom op(s) that edgekit cannot rewrite into exact builtins: "
            f"{'; '.join(rewritten.refused)}." + (f" LiteRT cannot run it either: {said}" if said else ""),
            hint="edgekit rewrites MaxPoolingWithArgmax2D / MaxUnpooling2D only where their windows tile the input "
            "(stride = window, square, no padding). Run the file with MediaPipe, or re-export the model with "
            "builtin ops (a plain MAX_POOL_2D and RESIZE in place of the argmax unpooling).")
    if said is not None and rewritten.others:
        raise UnsupportedModel(f"LiteRT cannot run {path.name}, which uses custom op(s) "
                               f"{', '.join(rewritten.others)}; LiteRT said: {said}",
                               hint=custom_op_hint(rewritten.others))
    if not rewritten.changes:  # custom ops of another kind, which LiteRT runs: the file as it is
        return _Reading(path, path, [f"custom op(s) {', '.join(custom)} kept: LiteRT runs them"])
    folder = tempfile.TemporaryDirectory(prefix="edgekit-tflite-")
    copy = Path(folder.name) / path.name
    copy.write_bytes(rewritten.blob)
    changes = list(rewritten.changes)
    mediapipe = [op for op in custom if op in MEDIAPIPE_OPS]
    if said is None:
        changes.append(f"the conversion reads the rewritten graph; the reference stays {path.name} as LiteRT runs "
                       f"it ({', '.join(mediapipe)} by XNNPACK), so the rewrite is validated against the original")
    else:
        changes.append(f"LiteRT cannot run {path.name} itself ({said}): the reference is the rewritten graph")
    return _Reading(copy, path if said is None else copy, changes, folder)


def load(path: Path | None, opts: LoadOptions, kind: str = "tflite") -> Source:
    """Read the .tflite at PATH (its I/O, precision and ops) and make LiteRT running it the reference."""
    from edgekit.tflite.model import read_tflite

    if path is None:
        raise UsageError("A .tflite source needs the path of the file.")
    path = Path(path)
    model = read_tflite(path)
    custom = list(dict.fromkeys(op.op for op in model.ops if op.custom))
    if EDGETPU_CUSTOM_OP in custom:  # compiled for the Edge TPU: not a model to convert, whatever LiteRT says
        raise UnsupportedModel(f"{path} is compiled for the Edge TPU (it holds {EDGETPU_CUSTOM_OP}); a compiled "
                               "model is not a source edgekit converts.", hint=custom_op_hint([EDGETPU_CUSTOM_OP]))
    if len(model.inputs) != 1:
        raise UnsupportedModel(f"{path} takes {len(model.inputs)} inputs; a .tflite source must take one.",
                               hint="Profile it with `edgekit profile` instead; conversion needs a single input.")
    first = model.tensor(model.inputs[0])
    if first is None:
        raise UnsupportedModel(f"{path}: its input names a tensor the file does not define; the file is damaged.",
                               hint="Check that the file was copied completely, or re-export it.")
    shape = [int(d) for d in first.shape]
    if opts.input_shape and [int(d) for d in opts.input_shape] != shape:
        raise UsageError(f"--input-shape {opts.input_shape} does not fit {path}, which takes {shape}.",
                         hint="A .tflite is taken as it is: leave --input-shape out.")
    if any(d <= 0 for d in shape[1:]):
        raise UnsupportedModel(f"{path} has dynamic dimensions besides the batch: {shape}.",
                               hint="The Edge TPU needs static shapes: re-convert the model with a fixed input shape.")
    reading = _with_custom_ops(path, custom) if custom else _Reading(path, path, [])
    predict_all, names, rt = make_predict(reading.reference)
    predict_all(np.zeros([1, *shape[1:]], dtype=np.float32))  # in the probe's child first: a crash stays there
    first_out = names[0]

    def predict(x: np.ndarray) -> np.ndarray:
        return predict_all(x)[first_out]

    def predict_outputs(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return predict_all(feeds[first.name] if first.name in feeds else next(iter(feeds.values())))

    converted = reading.convert_from
    return Source(
        path=converted, kind="tflite", family="tflite", layout=guess_layout(shape), input_name=first.name,
        input_shape=shape, input_dtype=first.dtype, predict=predict, model=converted, sha256=sha256_file(path),
        output_names=names, predict_outputs=predict_outputs, changes=reading.changes,
        origin=path if converted != path else None,
        # runtime: kept alive as long as predict; the precision is the user's file's (a rewrite keeps it)
        extra={"runtime": rt, "precision": precision_of(model),
               **({"rewritten_dir": reading.folder} if reading.folder is not None else {})},
    )


def sniff(path: Path, head: bytes) -> str | None:
    """tflite for a TFLite flatbuffer ('TFL3' at byte 4)."""
    return "tflite" if is_tflite_head(head) else None


SOURCE = SourceSpec(name="tflite", family="tflite", kinds=("tflite",), sniff=sniff, load=load, files=".tflite",
                    dists=("ai-edge-litert",))
