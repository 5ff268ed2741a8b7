"""/detect: a picture in, boxes in the picture's own pixels out, for artifacts whose manifest records a detector head.

A detector's raw output (a YOLOv8 head's (1, 4 + C, A) tensor) is not what a camera application wants,
and decoding it on the client means shipping the head format, the NMS and the letterbox arithmetic to
every client. So the server does what Ultralytics' predict does: letterbox the picture to the input
(keep the aspect ratio, resize, pad centred with gray 114), run the model, decode the head and NMS with
edgekit.fidelity.detection (the same code that judged the artifact at conversion, plain numpy), and map
the boxes back through the letterbox into the original picture, clipped to it.

The head comes from the artifact's manifest record (`fidelity.outputs[i].fidelity.head`, written by
validation), with the artifact's own output names for its roles: a converter may rename outputs
("PartitionedCall:0" in a .tflite), and validation recorded which artifact output stands for which
source output. An artifact without that record is not served as a detector: guessing a head from
shapes on a request path would turn a classifier's tensor into nonsense boxes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from edgekit.core.artifact import Artifact
from edgekit.core.errors import EdgekitError
from edgekit.fidelity.detection import HEADS, MAX_DETECTIONS, Detections, Head, decode
from edgekit.serve.errors import RequestError, bad_request

FILL = 114  # Ultralytics' letterbox gray
NORMALIZED_MAX = 1.5  # boxes whose every coordinate is within this are read as fractions of the input


@dataclass(frozen=True)
class Detector:
    """A served model's detection head: how to decode, and which of the artifact's outputs play each role."""

    head: Head
    outputs: list[str]  # the artifact's output names, in the order of the head's roles

    @property
    def classes(self) -> int:
        return self.head.classes


def detector_of(artifact: Artifact | None, output_names: list[str]) -> Detector | None:
    """The detector ARTIFACT's manifest record describes, mapped to the runtime's OUTPUT_NAMES; None if not one.

    Roles are found through each output's fidelity record (source name -> artifact name); a single-output
    head on a single-output artifact needs no record of the name."""
    fid = artifact.fidelity if artifact is not None else None
    if fid is None:
        return None
    by_source = {o.name: o for o in fid.outputs}
    for o in fid.outputs:
        head = _head(o.fidelity.head if o.kind == "detection" and o.fidelity is not None else None)
        if head is None:
            continue
        roles = [by_source[s].artifact_name if s in by_source else None for s in head.outputs or [o.name]]
        if all(r in output_names for r in roles):
            return Detector(head, [str(r) for r in roles])
        if len(roles) == 1 and len(output_names) == 1:
            return Detector(head, list(output_names))
    head = _head(fid.head if fid.kind == "detection" else None)
    if head is not None and len(output_names) == 1:
        return Detector(head, list(output_names))
    return None


def _head(record: Any) -> Head | None:
    """A manifest's head record as a Head; None where it is missing or malformed (a manifest is hostile input:
    a bad record makes the model no detector, never a crash at load or a 500 on every request)."""
    if not isinstance(record, dict):
        return None
    try:
        head = Head.from_dict(record)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if head.format not in HEADS or not 0 <= head.classes <= 100_000 or (head.format == "yolov8" and not head.classes):
        return None
    return head


@dataclass(frozen=True)
class Letterbox:
    """How a W x H picture was fitted into the input: scaled by SCALE to RESIZED, then padded by PAD."""

    width: int
    height: int
    scale: float
    resized: tuple[int, int]  # (w, h) after the resize
    pad: tuple[int, int, int, int]  # left, top, right, bottom

    def to_dict(self) -> dict[str, Any]:
        return {"scale": round(self.scale, 6), "resized": list(self.resized), "pad": list(self.pad), "fill": FILL}

    def undo(self, boxes: np.ndarray, clip: bool = True) -> np.ndarray:
        """(M, 4) x1, y1, x2, y2 boxes in input pixels -> the original picture's pixels, clipped to it (CLIP)."""
        b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4).copy()
        sx, sy = self.width / self.resized[0], self.height / self.resized[1]
        b[:, [0, 2]] = (b[:, [0, 2]] - self.pad[0]) * sx
        b[:, [1, 3]] = (b[:, [1, 3]] - self.pad[1]) * sy
        if clip:
            b[:, [0, 2]] = b[:, [0, 2]].clip(0, self.width)
            b[:, [1, 3]] = b[:, [1, 3]].clip(0, self.height)
        return b

    def in_picture(self, boxes: np.ndarray) -> np.ndarray:
        """Which of BOXES (the picture's pixels, unclipped) are centred on the picture, not on the padding."""
        cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
        return (cx >= 0) & (cx <= self.width) & (cy >= 0) & (cy <= self.height)


def fit(width: int, height: int, in_w: int, in_h: int) -> Letterbox:
    """Ultralytics' LetterBox (centred, scale up allowed): the ratio, the rounded size, the padding split."""
    r = min(in_h / height, in_w / width)
    new_w, new_h = max(1, int(round(width * r))), max(1, int(round(height * r)))
    dw, dh = (in_w - new_w) / 2, (in_h - new_h) / 2
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    return Letterbox(width, height, r, (new_w, new_h), (left, top, right, bottom))


def letterbox(im: Any, in_w: int, in_h: int) -> tuple[np.ndarray, Letterbox]:
    """Pillow image IM -> float32 (in_h, in_w[, C]) pixel values 0..255, letterboxed; and how."""
    from edgekit.serve.image import resize

    box = fit(im.size[0], im.size[1], in_w, in_h)
    arr = resize(im, *box.resized)
    left, top = box.pad[0], box.pad[1]
    out = np.full((in_h, in_w, *arr.shape[2:]), FILL, dtype=np.float32)
    out[top:top + arr.shape[0], left:left + arr.shape[1]] = arr[: in_h - top, : in_w - left]
    return out, box


@dataclass(frozen=True)
class Cuts:
    """The thresholds of one request: confidence, NMS IoU, and how many boxes at most."""

    conf: float
    iou: float
    max_det: int

    def to_dict(self) -> dict[str, Any]:
        return {"conf": self.conf, "iou": self.iou, "max_det": self.max_det}


def _fraction(query: dict[str, str], key: str, default: float) -> float:
    raw = query.get(key)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise bad_request(f"{key} must be a number from 0 to 1, got {raw!r}.", key)
    return value


def parse_cuts(query: dict[str, str], head: Head) -> Cuts:
    """`conf`, `iou`, `max_det` from the query; the head's own cuts (as validated) where not given."""
    raw = query.get("max_det", str(MAX_DETECTIONS))
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_DETECTIONS:
        raise bad_request(f"max_det must be an integer 1..{MAX_DETECTIONS}, got {raw!r}.", "max_det")
    return Cuts(_fraction(query, "conf", head.confidence), _fraction(query, "iou", head.nms_iou), int(raw))


def _oriented(y: np.ndarray, head: Head) -> np.ndarray:
    """A single-tensor head as its format lays it out: a converter may hand back a YOLOv8 head's (1, 4 + C, A)
    as (1, A, 4 + C), or a YOLOv5 head transposed; anchors always outnumber the rows."""
    if y.ndim == 3 and ((head.format == "yolov8" and y.shape[1] > y.shape[2])
                        or (head.format == "yolov5" and y.shape[1] < y.shape[2])):
        return np.swapaxes(y, 1, 2)
    return y


def _input_pixels(boxes: np.ndarray, head: Head, in_w: int, in_h: int) -> np.ndarray:
    """Boxes as x1, y1, x2, y2 in input pixels: TFLite_Detection_PostProcess writes ymin, xmin, ymax, xmax as
    fractions; a head recorded with `fractions_of` was decoded into pixels already; other exports write pixels, or
    fractions (all within NORMALIZED_MAX), x first."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    if head.fractions_of:
        return b
    if head.format == "tflite-postprocess":
        b = b[:, [1, 0, 3, 2]]
    if len(b) and (head.format == "tflite-postprocess" or float(np.abs(b).max()) <= NORMALIZED_MAX):
        b = b * np.array([in_w, in_h, in_w, in_h], dtype=np.float64)
    return b


def class_name(index: int, head: Head, labels: list[str] | None) -> str:
    """--labels first (the operator's word), then the names the model carries, else the index."""
    if labels and 0 <= index < len(labels):
        return labels[index]
    if head.names and index in head.names:
        return head.names[index]
    return str(index)


def detections(results: dict[str, np.ndarray], det: Detector, cuts: Cuts, box: Letterbox, in_w: int, in_h: int,
               labels: list[str] | None) -> list[dict[str, Any]]:
    """The model's RESULTS decoded with CUTS, best first, as JSON: box in the original picture's pixels, class,
    label, score. A box centred on the letterbox's padding is about the gray bar, not the picture, and is dropped
    (a detector trained without bars, like the bundled digits one, sees the bar's edge as a stroke: slivers at 0.3-0.4
    after the clip); so is a box the clip leaves empty."""
    head = replace(det.head, confidence=cuts.conf, nms_iou=cuts.iou)
    arrays = [np.asarray(results[name])[:1] for name in det.outputs]
    if len(arrays) == 1:
        arrays = [_oriented(arrays[0], head)]
    try:
        found: Detections = decode(arrays, head)[0]
    except (IndexError, ValueError) as exc:  # outputs that do not fit the recorded head: the model is at fault
        shapes = [list(np.shape(a)) for a in arrays]
        raise RequestError(500, f"the model's outputs {shapes} do not fit its recorded {head.format} head "
                           f"({head.classes} classes): {exc}") from exc  # chained: the log shows where
    except EdgekitError as exc:  # an anchors head whose anchors file is gone or changed since conversion
        raise RequestError(500, f"the model's {head.format} head cannot decode here: {exc.message}"
                           + (f" {exc.hint}" if exc.hint else "")) from exc
    order = np.argsort(-found.scores, kind="stable")
    unclipped = box.undo(_input_pixels(found.boxes, head, in_w, in_h), clip=False)
    centred = box.in_picture(unclipped)
    boxes = box.undo(_input_pixels(found.boxes, head, in_w, in_h))
    out = []
    for i in order:
        x1, y1, x2, y2 = (float(v) for v in boxes[i])
        if not centred[i] or x2 <= x1 or y2 <= y1:
            continue
        c = int(found.classes[i])
        out.append({"box": [round(x1, 2), round(y1, 2), round(x2, 2), round(y2, 2)], "index": c,
                    "label": class_name(c, head, labels), "score": round(float(found.scores[i]), 6)})
        if len(out) >= cuts.max_det:
            break
    return out


def not_a_detector(name: str, has_manifest: bool) -> str:
    """The 400's words for /detect on a model without a recorded detector head."""
    why = ("its manifest records no detection head" if has_manifest else
           "no manifest beside the artifact says it is one")
    return (f"model '{name}' is not a detector ({why}): /detect needs a detector converted by `edgekit convert`, "
            "whose validation records the head. Use /classify for a classifier, or /infer for raw tensors.")


__all__ = ["FILL", "Cuts", "Detector", "Letterbox", "class_name", "detections", "detector_of", "fit", "letterbox",
           "not_a_detector", "parse_cuts"]
