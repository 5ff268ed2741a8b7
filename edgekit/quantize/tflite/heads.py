"""What a detector changes in the TFLite int8 search (edgekit.quantize.tflite.search): the kind of the output it
judges, decided with the model's other outputs beside it as validation decides it; the decode kept float
(edgekit.quantize.detect_decode), over every output of the head (a raw-anchor head's regressors and score logits);
the tensors that hold a raw-anchor head's score logits, whose int8 range is cut where the sigmoid is flat
(edgekit.quantize.tflite.ranges.cut_logit_ranges); and those that hold its regressors, whose range is cut to what
the anchors that can become boxes hold (edgekit.quantize.tflite.ranges.regressor_bound).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from edgekit.quantize.tflite.recipes import TfliteJob
from edgekit.quantize.tflite.run import run_tflite

DECIDE_SAMPLES = 64  # a named recipe's detection output is recognised on this many calibration samples


def every_output(fm: Any, outputs: dict[str, np.ndarray], job: TfliteJob) -> dict[str, Any] | None:
    """Each output's KindChoice where the float TFLite model FM has several outputs and none is a detector (a hand
    landmark model's points, presence, handedness and world points), decided on their values OUTPUTS (by tensor
    name) as validation decides them, the input's size and the kinds asked by name included; None where there is
    one output, a detector (its head is judged as one: `detection`), several inputs, or no KINDS to decide from.

    Why: the search ran the first output alone, so a candidate that moved the others (a hand model's handedness and
    world landmarks, which validation judges) could be kept; judged as validation judges them, the landmarks only
    where the model's presence passes."""
    kinds = job.kinds
    if kinds is None or len(fm.outputs) < 2 or job.feeds or len(outputs) < 2:
        return None
    from edgekit.fidelity.decide import decide_kinds
    from edgekit.fidelity.landmarks import image_size

    asked = {k: v for k, v in (kinds.asked or {}).items() if k in outputs}
    choices = decide_kinds(outputs, kinds.layout, asked, kinds.metadata, image_size(job.samples, kinds.layout))
    return None if any(c.kind == "detection" for c in choices.values()) else choices


def detection(fm: Any, ref_path: Path, y_ref: np.ndarray | None, job: TfliteJob) -> tuple[Any, Any]:
    """(the first output's KindChoice, the DecodeRegion of every output of its head where it is a detector) of the
    float TFLite model FM; (None, None) without KINDS to decide from. The search runs the first output, or every
    output of a head that has several (edgekit.quantize.tflite.search.TfliteCandidates)."""
    kinds = job.kinds
    if kinds is None:
        return None, None
    from edgekit.fidelity.decide import decide_kinds
    from edgekit.quantize.detect_decode import tflite_decode

    y = y_ref if y_ref is not None else run_tflite([ref_path], job.samples[:DECIDE_SAMPLES])[0]
    if y is None:
        return None, None
    name = fm.tensors[fm.outputs[0]].name
    asked = dict(kinds.asked or {})
    asked = {name: asked[name]} if name in asked else {name: next(iter(asked.values()))} if len(asked) == 1 and \
        len(fm.outputs) == 1 else {}  # the converter renames outputs: a one-output model's kind follows it
    outputs = {name: y}
    if len(fm.outputs) > 1 and not job.feeds:  # its siblings decide too (a box map beside a probability map is a
        outputs = {**float_outputs(ref_path, job.samples[:DECIDE_SAMPLES]), name: y}  # regression, as validation says)
    from edgekit.fidelity.landmarks import image_size

    # the input's size, as validation gives it: landmarks are points inside it, anchor presets are of one size
    choice = decide_kinds(outputs, kinds.layout, asked, kinds.metadata, image_size(job.samples, kinds.layout))[name]
    if choice.kind != "detection":
        return choice, None
    # every output of the head: each keeps its own scale (MediaPipe's logits beside regressors in pixels)
    head = set(choice.head.outputs) if choice.head is not None else set()
    return choice, tflite_decode(fm, [t for t in fm.outputs if fm.tensors[t].name in head] or [fm.outputs[0]])


def score_logits(fm: Any, head: Any) -> tuple[str, ...]:
    """The tensors of the float TFLite model FM that hold HEAD's score logits where its decode takes their sigmoid
    (a raw-anchor head: MediaPipe's classifier layers, and the reshapes and concatenation after them); () for any
    other head."""
    try:
        sigmoid = head is not None and head.format == "anchors" and head.anchor_head().sigmoid
    except (ValueError, KeyError, TypeError):
        return ()
    return _head_tensors(fm, head, 1) if sigmoid else ()


def regressor_tensors(fm: Any, head: Any) -> tuple[str, ...]:
    """The tensors of the float TFLite model FM that hold a raw-anchor HEAD's box and keypoint regressors (its
    regressor layers, and the reshapes and concatenation after them); () for any other head."""
    return _head_tensors(fm, head, 0)


def _head_tensors(fm: Any, head: Any, which: int) -> tuple[str, ...]:
    """The layers, reshapes and concatenation of FM that write a raw-anchor HEAD's output number WHICH."""
    if head is None or head.format != "anchors" or len(head.outputs) < 2:
        return ()
    from edgekit.quantize.detect_decode import tflite_decode

    outputs = [t for t in fm.outputs if fm.tensors[t].name == head.outputs[which]]
    if not outputs:
        return ()
    region = tflite_decode(fm, outputs)
    return (*region.nodes, *region.head_layers) if region.head_layers else ()


def regressor_range(path: Path, x: np.ndarray, head: Any) -> float | None:
    """The range HEAD's regressors need (edgekit.quantize.tflite.ranges.regressor_bound), measured by the float
    TFLite model at PATH on the calibration samples X."""
    from edgekit.quantize.tflite.ranges import regressor_bound

    got = float_outputs(path, x)
    regs, logits = (got.get(n) for n in head.outputs[:2])
    if regs is None or logits is None or not len(regs) or len(regs) != len(logits):
        return None
    return regressor_bound(regs, logits)


def float_outputs(path: Path, x: np.ndarray) -> dict[str, np.ndarray]:
    """Every output of the float TFLite model at PATH on X (one input), by tensor name."""
    from edgekit.runtimes.litert_io import interpreter_class

    it = interpreter_class()(model_path=str(path))
    it.allocate_tensors()
    inp = it.get_input_details()[0]
    ys: dict[str, list[np.ndarray]] = {d["name"]: [] for d in it.get_output_details()}
    step = max(1, int(inp["shape"][0]))
    for i in range(0, len(x) - step + 1, step):
        it.set_tensor(inp["index"], x[i:i + step].astype(np.float32))
        it.invoke()
        for d in it.get_output_details():
            ys[d["name"]].append(np.asarray(it.get_tensor(d["index"])).copy())
    return {k: np.concatenate(v) for k, v in ys.items() if v}


__all__ = ["DECIDE_SAMPLES", "detection", "every_output", "float_outputs", "regressor_range", "regressor_tensors",
           "score_logits"]
