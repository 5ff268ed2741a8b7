"""Which kind each source output is, and why: from what was asked, the model's metadata, names, shapes and values.

The shape alone misleads: an MTCNN O-Net's (N, 4) box regression and (N, 10) landmarks look like class
scores, P-Net's (N, 4, H, W) box map like a 4-class segmentation, and a YOLOv8 head's (N, 84, 8400) like
a sequence (issue 27). So the decision reads, in order:

1. what the user asked (`--output-kind name=kind[:head]`);
2. the model's own metadata (Ultralytics writes `task: detect` and its class `names` into every export);
3. detector heads recognisable from the shapes and the values on the held-out inputs (edgekit.fidelity.detection
   HEADS), only where that is unambiguous: pixel-range boxes beside [0, 1] scores, many more anchors than rows;
4. names that say what an output holds (box, landmark, embedding ...), and sibling heads: beside an output
   that holds probabilities, an output whose values are not a distribution is a regression;
5. a single-channel map whose values all lie in [0, 1] is a probability map, judged by its thresholded mask
   (edgekit.fidelity.mask): a text detector's, a saliency map, a one-class segmenter's;
6. the shape (edgekit.fidelity.kinds.kind_of).
Every decision carries its reason, which the manifest records (`kind_reason`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import numpy as np

from edgekit.core.errors import UsageError
from edgekit.fidelity.detection import HEADS, ROLES, Head
from edgekit.fidelity.kinds import kind_of, parse_asked
from edgekit.fidelity.mask import probability_map, single_channel_map

_REGRESSION_NAME = re.compile(r"(^|[^a-z])(box|boxes|bbox|bboxes|reg|regression|landmarks?|ldmk|lmk|kpts?|keypoints?|"
                              r"embed|embedding|embeddings|features?|coords?|offsets?|deltas?|loc)([^a-z]|$)", re.I)


@dataclass
class KindChoice:
    """How one source output is judged, and why. HEAD: for detection outputs, how to decode it."""

    kind: str
    reason: str
    head: Head | None = None


def _unit(a: np.ndarray, tol: float = 1e-3) -> bool:
    """Values all in [0, 1] (probabilities, sigmoid scores)."""
    return bool(a.size) and float(np.nanmin(a)) >= -tol and float(np.nanmax(a)) <= 1 + tol


def _distribution(a: np.ndarray, axis: int) -> bool:
    """Softmax-like along AXIS: in [0, 1] and summing to 1."""
    return _unit(a) and bool(np.allclose(a.sum(axis=axis), 1.0, atol=1e-2))


def _probabilities(a: np.ndarray, layout: str) -> bool:
    """An output that holds probabilities: a distribution over its class axis, or sigmoid scores."""
    if a.ndim < 2:
        return False
    return _distribution(a, _class_axis(a, layout)) or _unit(a)


def ultralytics_names(metadata: dict[str, str] | None) -> dict[int, str] | None:
    """Ultralytics' `names` metadata ("{0: 'person', 1: 'bicycle'}"), parsed without evaluating code."""
    raw = (metadata or {}).get("names")
    if not raw:
        return None
    try:
        names = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return None
    if isinstance(names, dict):
        return {int(k): str(v) for k, v in names.items() if str(k).lstrip("-").isdigit()}
    if isinstance(names, list):
        return dict(enumerate(str(v) for v in names))
    return None


def head_from_shape(y: np.ndarray, fmt: str | None = None, classes: int | None = None) -> Head | None:
    """The single-tensor head a (N, D1, D2) output is, from its shape and values; FMT/CLASSES where known."""
    if y.ndim != 3:
        return None
    _, d1, d2 = y.shape
    if fmt in (None, "yolov8") and d1 >= 5 and d2 >= 4 * d1:
        c = classes if classes is not None else d1 - 4
        if fmt or (_unit(y[:, 4:4 + c]) and float(np.nanmax(np.abs(y[:, :4]))) > 1.5):
            return Head("yolov8", c)
    if fmt in (None, "yolov5") and d2 >= 6 and d1 >= 4 * d2:
        c = classes if classes is not None else d2 - 5
        if fmt or (_unit(y[..., 4:5 + c]) and float(np.nanmax(np.abs(y[..., :4]))) > 1.5):
            return Head("yolov5", c)
    if fmt in (None, "nms") and d2 == 6 and d1 >= 1:
        cls = y[..., 5]
        if fmt or (_unit(y[..., 4]) and np.allclose(cls, np.rint(cls)) and float(cls.min()) >= 0):
            return Head("nms", int(classes if classes is not None else max(int(cls.max()) + 1, 1)))
    return None


def _group_heads(outputs: dict[str, np.ndarray]) -> dict[str, Head]:
    """Multi-output detector heads from shapes and values: SSD boxes + scores, TFLite_Detection_PostProcess."""
    found: dict[str, Head] = {}
    three = {n: a for n, a in outputs.items() if a.ndim == 3}
    two = {n: a for n, a in outputs.items() if a.ndim == 2}
    one = {n: a for n, a in outputs.items() if a.ndim == 1}
    for bn, b in three.items():
        if b.shape[2] != 4 or bn in found:
            continue
        classes = [n for n, a in two.items() if a.shape[1] == b.shape[1] and np.allclose(a, np.rint(a))]
        scores = [n for n, a in two.items() if a.shape[1] == b.shape[1] and _unit(a) and n not in classes]
        if len(classes) == 1 and len(scores) == 1 and len(one) == 1:
            names = [bn, classes[0], scores[0], next(iter(one))]
            head = Head("tflite-postprocess", int(outputs[classes[0]].max()) + 1, names)
            found.update(dict.fromkeys(names, head))
            continue
        partners = [n for n, a in three.items() if n != bn and a.shape[1] == b.shape[1] and _unit(a)]
        corners = (b[..., 2] >= b[..., 0]).mean() > 0.99 and (b[..., 3] >= b[..., 1]).mean() > 0.99
        if len(partners) == 1 and b.shape[1] >= 16 and corners:
            head = Head("ssd", outputs[partners[0]].shape[2], [bn, partners[0]])
            found.update(dict.fromkeys(head.outputs, head))
    return found


def _box_deltas(name: str, y: np.ndarray, outputs: dict[str, np.ndarray]) -> str | None:
    """The partner's name where Y is an (N, A, 4) box output beside (N, A, C) scores that is not in corner form."""
    if y.ndim != 3 or y.shape[2] != 4:
        return None
    return next((n for n, a in outputs.items() if n != name and a.ndim == 3 and a.shape[1] == y.shape[1]
                 and a.shape[2] != 4), None)


def decide_kinds(outputs: dict[str, np.ndarray], layout: str, asked: dict[str, str] | None = None,
                 metadata: dict[str, str] | None = None) -> dict[str, KindChoice]:
    """A KindChoice for every source output, from the source's OUTPUTS on the held-out inputs."""
    asked = dict(asked or {})
    choices: dict[str, KindChoice] = {}
    names = ultralytics_names(metadata)
    task = (metadata or {}).get("task")
    groups = _group_heads({n: a for n, a in outputs.items() if n not in asked})

    for name, value in asked.items():
        kind, fmt = parse_asked(value)
        head = None
        if kind == "detection":
            head = _asked_head(name, fmt, outputs, names)
        if kind == "mask" and name in outputs and not single_channel_map(outputs[name], layout):
            want = "(N, H, W, 1)" if layout.upper() == "NHWC" else "(N, 1, H, W)"
            raise UsageError(f"Output '{name}' has shape {list(outputs[name].shape)}: the mask kind judges a "
                             f"single-channel map, {want} in this {layout.upper()} model, or (N, H, W).",
                             hint=f"Judge '{name}' as another kind (--output-kind {name}=dense for a per-pixel class "
                             "map, =regression otherwise), or name its probability-map output.")
        choices[name] = KindChoice(kind, "asked for (--output-kind)", head)

    for name, y in outputs.items():
        if name in choices:
            continue
        if task == "detect" and y.ndim == 3:
            head = head_from_shape(y, None, len(names) if names else None) or head_from_shape(y, "yolov8")
            if head is not None:
                head.names, head.outputs = names, [name]
                choices[name] = KindChoice("detection", f"the model's metadata says task 'detect' ({head.classes} "
                                                        f"classes); a {head.format} head", head)
                continue
        if name in groups:
            head = groups[name]
            choices[name] = KindChoice("detection", f"{head.format} detector outputs ({', '.join(head.outputs)}): "
                                                    "boxes beside [0, 1] scores of the same anchors", head)
            continue
        head = head_from_shape(y)
        if head is not None:
            head.outputs = [name]
            rows = "(N, 4 + C, A)" if head.format == "yolov8" else "(N, A, 5 + C)" if head.format == "yolov5" \
                else "(N, K, 6)"
            choices[name] = KindChoice("detection", f"a {head.format} detector head: {rows} with pixel boxes beside "
                                                    "[0, 1] scores", head)
    # names and siblings, for what is not a detector
    # siblings that hold probabilities over more than one class. A softmax one (rows summing to 1) makes every
    # differently shaped output that is not a distribution a regression, [0, 1] values or not (an O-Net's
    # landmarks are box-relative, 0.1-0.97); a sigmoid one only those whose values leave [0, 1].
    probs = [n for n, y in outputs.items() if n not in choices and _probabilities(y, layout)
             and y.shape[_class_axis(y, layout)] > 1]
    softmax = [n for n in probs if _distribution(outputs[n], _class_axis(outputs[n], layout))]
    for name, y in outputs.items():
        if name in choices:
            continue
        shape_kind = kind_of(y.shape, layout)
        partner = _box_deltas(name, y, outputs)
        if partner is not None:
            choices[name] = KindChoice("regression", f"(N, A, 4) boxes beside '{partner}' that are not corners: box "
                                                     "deltas relative to anchors the model does not output, judged as "
                                                     "a regression (give decoded boxes and --output-kind "
                                                     f"{name}=detection:ssd to judge them as boxes)")
        elif shape_kind in ("classes", "dense", "sequence") and _REGRESSION_NAME.search(name):
            choices[name] = KindChoice("regression", f"its name '{name}' says it holds coordinates or features, "
                                                     "not class scores")
        elif shape_kind in ("classes", "dense") and (sib := _sibling(name, y, outputs, probs, softmax, layout)):
            choices[name] = KindChoice("regression", f"its sibling output '{sib}' holds the class probabilities and "
                                                     "this one's values are not a distribution (box regression, "
                                                     "landmarks or embeddings)")
        elif shape_kind == "regression" and probability_map(y, layout) and not _REGRESSION_NAME.search(name):
            choices[name] = KindChoice("mask", f"shape {list(y.shape)}: one channel over {_spatial(y, layout)} pixels, "
                                               "every value in [0, 1]: a probability map its user thresholds "
                                               "(--mask-threshold, default 0.5), judged by the mask and its regions")
        elif shape_kind == "classes" and y.shape[1] >= 64 and float(np.nanmin(y)) < 0 and np.allclose(
                np.linalg.norm(y.reshape(len(y), -1), axis=1), 1.0, atol=1e-2):
            choices[name] = KindChoice("regression", "its rows are unit vectors: an embedding")
        else:
            choices[name] = KindChoice(shape_kind, _shape_words(shape_kind, y.shape))
    return {n: choices[n] for n in outputs}


def _spatial(y: np.ndarray, layout: str) -> str:
    h, w = (y.shape[1], y.shape[2]) if layout.upper() == "NHWC" else (y.shape[2], y.shape[3])
    return f"{h}x{w}"


def _class_axis(y: np.ndarray, layout: str) -> int:
    return -1 if y.ndim != 4 or layout.upper() == "NHWC" else 1


def _sibling(name: str, y: np.ndarray, outputs: dict[str, np.ndarray], probs: list[str], softmax: list[str],
             layout: str) -> str | None:
    """The probability sibling that makes NAME a regression, or None (see decide_kinds)."""
    if name in softmax:
        return None
    pool = softmax if name in probs else softmax + [p for p in probs if p not in softmax]  # softmax ones named first
    others = [p for p in pool if outputs[p].ndim == y.ndim and outputs[p].shape != y.shape]
    if name in probs and not others:
        return None
    return others[0] if others else None


def _asked_head(name: str, fmt: str | None, outputs: dict[str, np.ndarray], names: dict[int, str] | None) -> Head:
    y = outputs[name]
    if fmt in ROLES:
        group = _group_heads(outputs)
        if name in group and group[name].format == fmt:
            return group[name]
        raise UsageError(f"--output-kind {name}=detection:{fmt}: the {fmt} head needs its outputs "
                         f"({', '.join(ROLES[fmt])}), and they could not be told apart among {list(outputs)}.",
                         hint="The boxes must be (N, A, 4) corners and the scores (N, A, C) in [0, 1].")
    head = head_from_shape(y, fmt, len(names) if names else None) if fmt else head_from_shape(y)
    if head is None:
        raise UsageError(f"--output-kind {name}=detection: the output's shape {list(y.shape)} is not a detector "
                         "head edgekit can read without being told its format.",
                         hint=f"Name the head: --output-kind {name}=detection:yolov8 (formats: {', '.join(HEADS)}).")
    head.outputs, head.names = [name], names
    return head


def _shape_words(kind: str, shape: tuple[int, ...]) -> str:
    dims = list(shape)
    return {"classes": f"shape {dims}: (N, C) class scores",
            "dense": f"shape {dims}: a per-pixel class map",
            "sequence": f"shape {dims}: (N, T, C) per-step scores",
            }.get(kind, f"shape {dims}: not class scores")


__all__ = ["KindChoice", "decide_kinds", "head_from_shape", "ultralytics_names"]
