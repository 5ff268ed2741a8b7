"""Which kind each source output is, and why: from what was asked, the model's metadata, names, shapes and values.

The shape alone misleads: an MTCNN O-Net's (N, 4) box regression and (N, 10) landmarks look like class
scores, P-Net's (N, 4, H, W) box map like a 4-class segmentation, and a YOLOv8 head's (N, 84, 8400) like
a sequence (issue 27). So the decision reads, in order:

1. what the user asked (`--output-kind name=kind[:head]`);
2. the model's own metadata (Ultralytics writes `task: detect` and its class `names` into every export);
3. detector heads recognisable from the shapes and the values on the held-out inputs (edgekit.fidelity.detection
   HEADS), only where that is unambiguous: pixel-range boxes beside [0, 1] scores, many more anchors than rows;
   raw (N, A, 4 + 2K) regressors beside (N, A, C) scores whose A and K are a MediaPipe detector's (edgekit.fidelity.
   anchors.PRESETS);
4. landmarks (edgekit.fidelity.landmarks): points whose x and y lie inside the input image and spread over a good
   part of it (a classifier's 63 or 1404 probabilities or logits do not), with the scalars beside them judged as
   scores (presence, handedness) and a same-sized twin of small values (world landmarks, metres) as a regression;
5. names that say what an output holds (box, landmark, embedding ...), and sibling heads: beside an output
   that holds probabilities, an output whose values are not a distribution is a regression;
6. a single-channel map whose values all lie in [0, 1] is a probability map, judged by its thresholded mask
   (edgekit.fidelity.mask): a text detector's, a saliency map, a one-class segmenter's;
7. the shape (edgekit.fidelity.kinds.kind_of).
Every decision carries its reason, which the manifest records (`kind_reason`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import numpy as np

from edgekit.core.errors import UsageError
from edgekit.fidelity.anchors import NMS_IOU, anchor_head, parse_source, preset_for
from edgekit.fidelity.detection import HEADS, ROLES, Head
from edgekit.fidelity.kinds import kind_of, parse_asked
from edgekit.fidelity.landmarks import Landmarks, asked_landmarks, is_logit, read_landmarks, scalar, values_per_sample
from edgekit.fidelity.mask import probability_map, single_channel_map

_REGRESSION_NAME = re.compile(r"(^|[^a-z])(box|boxes|bbox|bboxes|reg|regression|landmarks?|ldmk|lmk|kpts?|keypoints?|"
                              r"embed|embedding|embeddings|features?|coords?|offsets?|deltas?|loc)([^a-z]|$)", re.I)


@dataclass
class KindChoice:
    """How one source output is judged, and why. HEAD: for detection outputs, how to decode it; LANDMARKS: for
    landmark outputs, how to read their points."""

    kind: str
    reason: str
    head: Head | None = None
    landmarks: Landmarks | None = None
    # a presence score: the model's landmarks are judged on the samples where the source's is at least 0.5
    gates: bool = False


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


def yolo_rows(input_size: tuple[int, int] | None) -> set[int]:
    """The candidate counts a YOLO head of an input of INPUT_SIZE (height, width) has: one per cell (YOLOv8 and
    later) or three anchors per cell (YOLOv5), over the stride 8/16/32 grids (and 64 for the P6 models)."""
    if input_size is None:
        return set()
    h, w = input_size
    counts: set[int] = set()
    for strides in ((8, 16, 32), (8, 16, 32, 64)):
        for cells in (sum((h // s) * (w // s) for s in strides), sum(-(-h // s) * -(-w // s) for s in strides)):
            counts.update((cells, 3 * cells))
    return counts


def _fractions(coords: np.ndarray, rows: int, input_size: tuple[int, int] | None, asked: bool) -> list[int] | None:
    """INPUT_SIZE as [height, width] where a YOLO head's COORDS are fractions of the input (Ultralytics' TFLite export
    divides boxes by the image size): all within [-0.5, 1.5], and ROWS a YOLO grid's count of that input (or the
    format ASKED for); None where they are pixels or cannot be told apart from another output's values."""
    if input_size is None or not float(np.nanmax(np.abs(coords), initial=0.0)) <= 1.5:
        return None
    return list(input_size) if asked or rows in yolo_rows(input_size) else None


def head_from_shape(y: np.ndarray, fmt: str | None = None, classes: int | None = None,
                    input_size: tuple[int, int] | None = None) -> Head | None:
    """The single-tensor head a (N, D1, D2) output is, from its shape and values; FMT/CLASSES where known; INPUT_SIZE
    (height, width) tells boxes given as fractions of the input (`Head.fractions_of`) from other values."""
    if y.ndim != 3:
        return None
    _, d1, d2 = y.shape
    if fmt in (None, "yolov8") and d1 >= 5 and d2 >= 4 * d1:
        c = classes if classes is not None else d1 - 4
        part = _fractions(y[:, :4], d2, input_size, bool(fmt))
        if fmt or (_unit(y[:, 4:4 + c]) and (float(np.nanmax(np.abs(y[:, :4]))) > 1.5 or part)):
            return Head("yolov8", c, fractions_of=part)
    if fmt in (None, "yolov5") and d2 >= 6 and d1 >= 4 * d2:
        c = classes if classes is not None else d2 - 5
        part = _fractions(y[..., :4], d1, input_size, bool(fmt))
        if fmt or (_unit(y[..., 4:5 + c]) and (float(np.nanmax(np.abs(y[..., :4]))) > 1.5 or part)):
            return Head("yolov5", c, fractions_of=part)
    if fmt in (None, "nms") and d2 == 6 and d1 >= 1:
        cls = y[..., 5]
        if fmt or (_unit(y[..., 4]) and np.allclose(cls, np.rint(cls)) and float(cls.min()) >= 0):
            return Head("nms", int(classes if classes is not None else max(int(cls.max()) + 1, 1)))
    return None


def _anchor_partner(name: str, outputs: dict[str, np.ndarray]) -> tuple[str, str] | None:
    """(regressors, scores) names where NAME is one of a raw-anchor pair: (N, A, 4 + 2K) beside (N, A, C), C smaller."""
    y = outputs[name]
    if y.ndim != 3:
        return None
    for other, a in outputs.items():
        if other == name or a.ndim != 3 or a.shape[1] != y.shape[1]:
            continue
        big, small = (name, other) if y.shape[2] > a.shape[2] else (other, name)
        coords = outputs[big].shape[2]
        if coords >= 4 and (coords - 4) % 2 == 0 and outputs[small].shape[2] < coords:
            return big, small
    return None


def anchors_head(regressors: str, scores: str, outputs: dict[str, np.ndarray], source: dict[str, object],
                 input_size: tuple[int, int] | None) -> Head:
    """The anchors Head of a (REGRESSORS, SCORES) pair, its anchors from SOURCE ({}: the preset of that anchor count);
    UsageError where they do not fit."""
    r, c = outputs[regressors], outputs[scores]
    spec, keypoints, cut = anchor_head(dict(source), int(r.shape[1]), int(r.shape[2]), input_size)
    return Head("anchors", int(c.shape[2]), [regressors, scores], confidence=cut, nms_iou=NMS_IOU,
                keypoints=keypoints, anchors=spec.to_dict())


def _group_heads(outputs: dict[str, np.ndarray], input_size: tuple[int, int] | None = None) -> dict[str, Head]:
    """Multi-output detector heads from shapes and values: SSD boxes + scores, TFLite_Detection_PostProcess, raw
    regressors + scores of a MediaPipe detector (its anchor count and keypoints, and its input size where known)."""
    found: dict[str, Head] = {}
    three = {n: a for n, a in outputs.items() if a.ndim == 3}
    two = {n: a for n, a in outputs.items() if a.ndim == 2}
    one = {n: a for n, a in outputs.items() if a.ndim == 1}
    for bn in three:
        pair = _anchor_partner(bn, three)
        if bn in found or pair is None or pair[0] != bn:
            continue
        p = preset_for(int(three[bn].shape[1]), int(three[bn].shape[2]))
        if p is not None and input_size in (None, (p.options.input_size_height, p.options.input_size_width)):
            head = anchors_head(pair[0], pair[1], outputs, {"preset": p.name}, input_size)
            found.update(dict.fromkeys(head.outputs, head))
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
    """The partner's name where Y is an (N, A, 4) box output beside (N, A, C) scores that is not in corner form, or
    (N, A, 4 + 2K) box and keypoint regressors (K <= 64, A >= 64) beside fewer (N, A, C) scores."""
    if y.ndim != 3 or y.shape[2] < 4:
        return None
    coords = y.shape[2]
    if coords == 4:
        return next((n for n, a in outputs.items() if n != name and a.ndim == 3 and a.shape[1] == y.shape[1]
                     and a.shape[2] != 4), None)
    if (coords - 4) % 2 or coords > 4 + 2 * 64 or y.shape[1] < 64:
        return None
    return next((n for n, a in outputs.items() if n != name and a.ndim == 3 and a.shape[1] == y.shape[1]
                 and a.shape[2] < coords), None)


def decide_kinds(outputs: dict[str, np.ndarray], layout: str, asked: dict[str, str] | None = None,
                 metadata: dict[str, str] | None = None, input_size: tuple[int, int] | None = None
                 ) -> dict[str, KindChoice]:
    """A KindChoice for every source output, from the source's OUTPUTS on the held-out inputs.

    INPUT_SIZE: (height, width) of the image input in pixels (edgekit.fidelity.landmarks.image_size), where the model
    has one: landmarks are recognised as coordinates inside it, and raw-anchor heads decode against it."""
    asked = dict(asked or {})
    choices: dict[str, KindChoice] = {}
    names = ultralytics_names(metadata)
    task = (metadata or {}).get("task")
    groups = _group_heads({n: a for n, a in outputs.items() if n not in asked}, input_size)
    asked_heads: dict[tuple[str, ...], Head] = {}  # one Head per asked multi-output head, however many outputs name it

    for name, value in asked.items():
        kind, fmt = parse_asked(value)
        head = None
        if kind == "detection" and fmt is not None and fmt.partition(":")[0] == "anchors":
            head = _asked_anchors(name, fmt, outputs, input_size)
            head = asked_heads.setdefault(tuple(head.outputs), head)
            for other in head.outputs:
                if other != name and other not in asked:  # the pair's other output is judged with it
                    choices[other] = KindChoice("detection", f"judged with '{name}' as one anchors head (asked for: "
                                                             f"--output-kind {name}={value})", head)
            choices[name] = KindChoice("detection", "asked for (--output-kind)", head)
            continue
        if kind == "landmarks" and name in outputs:
            lm = asked_landmarks(outputs[name], input_size, int(fmt) if fmt else None)
            choices[name] = KindChoice("landmarks", f"asked for (--output-kind): {_landmark_words(lm)}", landmarks=lm)
            continue
        if kind == "detection":
            head = _asked_head(name, fmt, outputs, names, input_size)
        if kind == "mask" and name in outputs and not single_channel_map(outputs[name], layout):
            want = "(N, H, W, 1)" if layout.upper() == "NHWC" else "(N, 1, H, W)"
            raise UsageError(f"Output '{name}' has shape {list(outputs[name].shape)}: the mask kind judges a "
                             f"single-channel map, {want} in this {layout.upper()} model, or (N, H, W).",
                             hint=f"Judge '{name}' as another kind (--output-kind {name}=dense for a per-pixel class "
                             "map, =regression otherwise), or name its probability-map output.")
        choices[name] = KindChoice(kind, "asked for (--output-kind)" + (
            ": the presence score; the landmarks are judged where the source's is at least 0.5"
            if kind == "score" and fmt == "presence" else ""), head, gates=kind == "score" and fmt == "presence")

    for name, y in outputs.items():
        if name in choices:
            continue
        if task == "detect" and y.ndim == 3:
            head = head_from_shape(y, None, len(names) if names else None, input_size) or \
                head_from_shape(y, "yolov8", None, input_size)
            if head is not None:
                head.names, head.outputs = names, [name]
                choices[name] = KindChoice("detection", f"the model's metadata says task 'detect' ({head.classes} "
                                                        f"classes); a {head.format} head", head)
                continue
        if name in groups:
            head = groups[name]
            choices[name] = KindChoice("detection", _group_words(head), head)
            continue
        head = head_from_shape(y, input_size=input_size)
        if head is not None:
            head.outputs = [name]
            rows = "(N, 4 + C, A)" if head.format == "yolov8" else "(N, A, 5 + C)" if head.format == "yolov5" \
                else "(N, K, 6)"
            boxes = "pixel boxes" if not head.fractions_of else \
                (f"boxes as fractions of the {head.fractions_of[1]}x{head.fractions_of[0]} input (as Ultralytics' "
                 f"TFLite export writes them; {y.shape[2] if head.format == 'yolov8' else y.shape[1]} rows, a YOLO "
                 "grid's count for that input)")
            choices[name] = KindChoice("detection", f"a {head.format} detector head: {rows} with {boxes} beside "
                                                    "[0, 1] scores", head)
    _landmark_choices(outputs, choices, input_size)
    _presence(choices, set(asked))
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
        if partner is not None and y.shape[2] > 4:
            choices[name] = KindChoice("regression", f"(N, {y.shape[1]}, {y.shape[2]}) box and keypoint regressors "
                                                     f"beside '{partner}': relative to anchors the model does not "
                                                     f"output, and no preset has {y.shape[1]} anchors, judged as a "
                                                     f"regression (--output-kind {name}=anchors:FILE, the anchors as "
                                                     ".npy/.csv or their SsdAnchorsCalculatorOptions as .pbtxt/.json, "
                                                     "judges them as boxes)")
        elif partner is not None:
            choices[name] = KindChoice("regression", f"(N, A, 4) boxes beside '{partner}' that are not corners: box "
                                                     "deltas relative to anchors the model does not output, judged as "
                                                     "a regression (give decoded boxes and --output-kind "
                                                     f"{name}=detection:ssd, or the anchors: {name}=anchors:FILE, to "
                                                     "judge them as boxes)")
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


def _group_words(head: Head) -> str:
    if head.format != "anchors":
        return f"{head.format} detector outputs ({', '.join(head.outputs)}): boxes beside [0, 1] scores of the same " \
               "anchors"
    spec = head.anchors or {}
    return (f"raw-anchor detector outputs ({', '.join(head.outputs)}): {spec.get('count')} anchors and "
            f"{head.keypoints} keypoints, the anchors of MediaPipe's '{spec.get('preset')}' graph (--output-kind "
            f"{head.outputs[0]}=anchors:<preset or file> to say otherwise); decoded, then boxes and keypoints judged")


def _landmark_words(lm: Landmarks) -> str:
    where = f"an input of {lm.size[1]}x{lm.size[0]} pixels" if lm.size else "the source's coordinate extent"
    unit = "fractions of the input" if lm.normalized else "pixels"
    return f"{lm.points} points of {lm.dims} values (x, y first) in {unit}, errors as a share of {where}"


def _presence(choices: dict[str, KindChoice], asked: set[str]) -> None:
    """Where a landmark model has exactly one score of its own deciding (none asked for as the presence), that score is
    its presence (a face mesh's): its landmarks are judged where the source's is at least 0.5. With several (a hand's
    presence and handedness) which one is presence cannot be told from values: `--output-kind NAME=presence`."""
    if not any(c.kind == "landmarks" for c in choices.values()) or any(c.gates for c in choices.values()):
        return
    scores = [n for n, c in choices.items() if c.kind == "score" and n not in asked]
    if len(scores) == 1:
        c = choices[scores[0]]
        choices[scores[0]] = KindChoice(c.kind, c.reason + "; the model's only score, read as its presence: the "
                                        "landmarks are judged where the source's is at least 0.5", gates=True)


def _landmark_choices(outputs: dict[str, np.ndarray], choices: dict[str, KindChoice],
                      input_size: tuple[int, int] | None) -> None:
    """Landmark outputs among OUTPUTS not yet decided, and beside them (or beside landmarks asked for) their scalars
    (scores) and world twins."""
    found = {n: c.landmarks for n, c in choices.items() if c.kind == "landmarks" and c.landmarks is not None}
    for name, y in outputs.items():
        if name in choices or input_size is None or min(input_size) < 32:  # a 28x28 classifier's ReLU logits
            continue
        lm = read_landmarks(y, input_size)
        if lm is not None:
            found[name] = lm
            choices[name] = KindChoice("landmarks", f"shape {list(y.shape)}: coordinates inside the "
                                                    f"{input_size[1]}x{input_size[0]} input spanning a good part of "
                                                    f"it, not class scores: {_landmark_words(lm)}", landmarks=lm)
    if not found:
        return
    first = next(iter(found))
    for name, y in outputs.items():
        if name in choices:
            continue
        if scalar(y):
            words = "logits, read through a sigmoid" if is_logit(y) else "probabilities"
            choices[name] = KindChoice("score", f"one value per sample beside the landmarks '{first}' ({words}): a "
                                                "presence, visibility or handedness score, judged by its decision at "
                                                "0.5 and its probability's change")
            continue
        layout = values_per_sample(y.shape)
        twin = next((n for n, lm in found.items() if layout is not None and layout[0] in
                     (lm.points * 3, int(np.prod(outputs[n].shape[1:])))), None)
        if twin is not None:
            top = float(np.nanmax(np.abs(y))) if y.size else 0.0
            choices[name] = KindChoice("regression", f"a world-landmarks twin of '{twin}' ({found[twin].points} "
                                                     f"points, values within +-{top:.3g}: metric coordinates, not "
                                                     "input pixels), judged as a regression")


def _asked_anchors(name: str, fmt: str, outputs: dict[str, np.ndarray], input_size: tuple[int, int] | None) -> Head:
    if name not in outputs:
        raise UsageError(f"--output-kind {name}=anchors: the model has no output '{name}'; its outputs are "
                         f"{list(outputs)}.")
    pair = _anchor_partner(name, outputs)
    if pair is None:
        raise UsageError(f"--output-kind {name}=anchors: '{name}' {list(outputs[name].shape)} has no partner among "
                         f"{ {n: list(a.shape) for n, a in outputs.items()} }.",
                         hint="A raw-anchor head is two outputs over the same A anchors: (N, A, 4 + 2K) regressors "
                              "(a box and K keypoints) and (N, A, C) score logits, C smaller.")
    return anchors_head(pair[0], pair[1], outputs, parse_source(fmt.partition(":")[2]), input_size)


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


def _asked_head(name: str, fmt: str | None, outputs: dict[str, np.ndarray], names: dict[int, str] | None,
                input_size: tuple[int, int] | None = None) -> Head:
    y = outputs[name]
    if fmt in ROLES and fmt != "anchors":
        group = _group_heads(outputs)
        if name in group and group[name].format == fmt:
            return group[name]
        raise UsageError(f"--output-kind {name}=detection:{fmt}: the {fmt} head needs its outputs "
                         f"({', '.join(ROLES[fmt])}), and they could not be told apart among {list(outputs)}.",
                         hint="The boxes must be (N, A, 4) corners and the scores (N, A, C) in [0, 1].")
    head = head_from_shape(y, fmt, len(names) if names else None, input_size) if fmt else \
        head_from_shape(y, input_size=input_size)
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


__all__ = ["KindChoice", "anchors_head", "decide_kinds", "head_from_shape", "ultralytics_names", "yolo_rows"]
