"""Object detector heads: decode the raw outputs into boxes, NMS, and compare two detectors' boxes.

A detector's raw output tensor is not what its user reads: a YOLOv8 head is (N, 4 + C, A), pixel
coordinates and class scores side by side, and its cosine stays at 0.998 while an int8 artifact loses
most of its boxes (issue 27). Its user reads boxes after a confidence cut and NMS; so does this module.

Head formats (`HEADS`), each a layout that exporters really write:
- yolov8   one (N, 4 + C [+ extra], A) tensor: box centre x, y, width, height in input pixels, then C
           class scores in [0, 1] (YOLOv8 / YOLO11 exported by Ultralytics; extra rows, such as a
           segmenter's mask coefficients or a pose head's keypoints, follow and are ignored);
- yolov5   one (N, A, 5 + C [+ extra]) tensor: centre x, y, width, height, objectness, C class scores;
- nms      one (N, K, 6) tensor with NMS already applied: x1, y1, x2, y2, score, class (end-to-end exports);
- ssd      two outputs, decoded boxes (N, A, 4) in corner form and scores (N, A, C);
- tflite-postprocess  TFLite_Detection_PostProcess's four outputs: boxes (N, K, 4) as ymin, xmin, ymax,
           xmax, classes (N, K), scores (N, K) and the count (N,);
- anchors  two outputs before any decode, (N, A, 4 + 2K) regressors (a box and K keypoints relative to A SSD anchors
           the model does not output) and (N, A, C) score logits: MediaPipe's BlazeFace, BlazePalm and pose detector.
           Decoded against anchors generated from MediaPipe's options or read from a file (edgekit.fidelity.anchors),
           boxes and keypoints in fractions of the input; the keypoints of matched boxes are compared too.
A box's corner order (x-first or y-first) does not change an IoU, so only centre-size vs corners matters.

Plain numpy: importing this module imports nothing heavy. mAP against labelled boxes is in
edgekit.fidelity.coco (pycocotools), imported only where labels exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from edgekit.fidelity.anchors import AnchorHead, decode_raw

HEADS: tuple[str, ...] = ("yolov8", "yolov5", "nms", "ssd", "tflite-postprocess", "anchors")
# Head formats whose detections come in several outputs: the role each output plays, in the order given
ROLES: dict[str, tuple[str, ...]] = {"ssd": ("boxes", "scores"),
                                     "tflite-postprocess": ("boxes", "classes", "scores", "count"),
                                     "anchors": ("regressors", "scores")}

CONFIDENCE = 0.25  # the confidence cut of Ultralytics' predict and of the issue's measurements
NMS_IOU = 0.7  # Ultralytics' predict default
MATCH_IOU = 0.5  # a source box is kept when the artifact has a same-class box at IoU >= 0.5 (the COCO AP50 rule)
MAX_DETECTIONS = 300  # per image, as Ultralytics
MIN_DETECTIONS = 20  # fewer source detections than this on the held-out inputs cannot show 95% recall


@dataclass
class Head:
    """How to read a detector's outputs: the format, the class count, the cuts, and (several outputs) the roles.

    OUTPUTS: the source output names in the order of ROLES[format] (one name for single-tensor heads).
    NAMES: class names where the model carries them (Ultralytics metadata), index -> name.
    KEYPOINTS: points per box the head decodes (anchors heads); ANCHORS: how an anchors head is decoded
    (edgekit.fidelity.anchors.AnchorHead.to_dict(): its anchors' preset, options or file, scales, input size).
    """

    format: str
    classes: int
    outputs: list[str] = field(default_factory=list)
    confidence: float = CONFIDENCE
    nms_iou: float = NMS_IOU
    match_iou: float = MATCH_IOU
    names: dict[int, str] | None = None
    keypoints: int = 0
    anchors: dict[str, Any] | None = None
    # (height, width) of the input where a YOLO head's boxes are fractions of it (Ultralytics' TFLite export divides
    # them by the image size); decoded into that input's pixels, as every other head's boxes are
    fractions_of: list[int] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["names"] = {str(k): v for k, v in self.names.items()} if self.names else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Head:
        """From a manifest's record (hostile input: KeyError, TypeError or ValueError where it is not a head)."""
        names = d.get("names")
        anchors = d.get("anchors")
        if str(d["format"]) == "anchors":
            anchors = AnchorHead.from_dict(anchors).to_dict()  # checked: a bad record is no head
        keypoints = int(d.get("keypoints") or 0)
        if not 0 <= keypoints <= 1000:
            raise ValueError(f"keypoints {keypoints} out of range")
        size = d.get("fractions_of")
        fractions_of = [int(v) for v in size] if isinstance(size, list) else None
        if fractions_of is not None and (len(fractions_of) != 2 or not all(0 < v <= 100_000 for v in fractions_of)):
            raise ValueError(f"fractions_of {size} is not an input's (height, width)")
        return cls(format=str(d["format"]), classes=int(d.get("classes") or 0), outputs=list(d.get("outputs") or []),
                   confidence=float(d.get("confidence", CONFIDENCE)), nms_iou=float(d.get("nms_iou", NMS_IOU)),
                   match_iou=float(d.get("match_iou", MATCH_IOU)),
                   names={int(k): str(v) for k, v in names.items()} if isinstance(names, dict) else None,
                   keypoints=keypoints, anchors=anchors if isinstance(anchors, dict) else None,
                   fractions_of=fractions_of)

    def anchor_head(self) -> AnchorHead:
        """How this anchors head decodes (ValueError where it is not one)."""
        return AnchorHead.from_dict(self.anchors)

    def pixels(self) -> tuple[float, float] | None:
        """Input pixels per unit of the decoded coordinates, (x, y): the input's width and height for an anchors head
        (fractions of the input); None where the head's coordinates are already pixels or their scale is unknown."""
        if self.format != "anchors" or not self.anchors:
            return None
        h, w = self.anchor_head().input_size
        return float(w), float(h)


@dataclass
class Detections:
    """One image's detections: (M, 4) boxes as x1, y1, x2, y2 (or y-first, consistently), scores, class indices,
    and (M, K, 2) keypoints x, y where the head has them."""

    boxes: np.ndarray
    scores: np.ndarray
    classes: np.ndarray
    keypoints: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.scores)

    @classmethod
    def empty(cls) -> Detections:
        return cls(np.zeros((0, 4)), np.zeros(0), np.zeros(0, dtype=np.int64))


def xywh_to_xyxy(b: np.ndarray) -> np.ndarray:
    """Centre x, y, width, height -> corners."""
    half = b[..., 2:4] / 2
    return np.concatenate([b[..., 0:2] - half, b[..., 0:2] + half], axis=-1)


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(M, 4) x (K, 4) corner boxes -> (M, K) intersection over union (0 where a union is empty)."""
    a, b = np.asarray(a, dtype=np.float64).reshape(-1, 4), np.asarray(b, dtype=np.float64).reshape(-1, 4)
    lo = np.maximum(a[:, None, :2], b[None, :, :2])
    hi = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.clip(hi - lo, 0, None).prod(-1)
    area = lambda x: np.clip(x[:, 2] - x[:, 0], 0, None) * np.clip(x[:, 3] - x[:, 1], 0, None)  # noqa: E731
    union = area(a)[:, None] + area(b)[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def nms(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, iou: float = NMS_IOU,
        max_det: int = MAX_DETECTIONS) -> np.ndarray:
    """Indices kept by class-aware greedy non-maximum suppression, highest score first."""
    order = np.argsort(-scores, kind="stable")
    keep: list[int] = []
    boxes = np.asarray(boxes, dtype=np.float64)
    suppressed = np.zeros(len(order), dtype=bool)
    for pos, i in enumerate(order):
        if suppressed[pos]:
            continue
        keep.append(int(i))
        if len(keep) >= max_det:
            break
        rest = order[pos + 1:]
        same = (classes[rest] == classes[i]) & ~suppressed[pos + 1:]
        if same.any():
            ious = box_iou(boxes[i:i + 1], boxes[rest[same]])[0]
            idx = np.nonzero(same)[0][ious > iou]
            suppressed[pos + 1 + idx] = True
    return np.asarray(keep, dtype=np.int64)


def _select(boxes: np.ndarray, conf: np.ndarray, cls: np.ndarray, head: Head, nms_done: bool = False,
            suppress: bool = True, keypoints: np.ndarray | None = None) -> Detections:
    keep = conf > head.confidence
    boxes, conf, cls = boxes[keep], conf[keep], cls[keep]
    keypoints = keypoints[keep] if keypoints is not None else None
    if suppress and not nms_done and len(conf):
        k = nms(boxes, conf, cls, head.nms_iou)
        boxes, conf, cls = boxes[k], conf[k], cls[k]
        keypoints = keypoints[k] if keypoints is not None else None
    return Detections(boxes.astype(np.float64), conf.astype(np.float64), cls.astype(np.int64),
                      keypoints.astype(np.float64) if keypoints is not None else None)


def decode(outputs: Sequence[np.ndarray], head: Head, suppress: bool = True) -> list[Detections]:
    """Every image's detections from a detector's raw OUTPUTS (in the order of ROLES[head.format]).

    SUPPRESS False: every candidate above the confidence cut, before NMS (heads that apply NMS themselves give
    their detections either way). Non-finite values are dropped: an artifact that writes NaN fails on that count
    already (edgekit.fidelity.metrics).
    """
    fmt, c = head.format, head.classes
    # one image at a time in float64: the whole batch at once was 8.6 GB of copies for 63 images of a 640x640
    # YOLOv5 (25,200 x 85 values each, source and artifact, before and after NMS) during validation
    batch = [np.asarray(o) for o in outputs]
    out: list[Detections] = []
    anchored = None  # (the anchor head, its anchors) for fmt "anchors"
    if fmt == "anchors":
        spec = head.anchor_head()
        anchored = (spec, spec.anchors())
    scale = np.ones(4)  # a YOLO head's boxes as fractions of the input: into its pixels, (x, y, w, h) per column
    if head.fractions_of and fmt in ("yolov8", "yolov5"):
        h_in, w_in = head.fractions_of
        scale = np.array([w_in, h_in, w_in, h_in], dtype=np.float64)
    for i in range(len(batch[0])):
        arrays = [np.nan_to_num(np.asarray(a[i], dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0) for a in batch]
        if fmt == "yolov8":
            y = arrays[0]  # (4 + C, A)
            scores = y[4:4 + c]
            cls = scores.argmax(0)
            out.append(_select(xywh_to_xyxy(y[:4].T * scale[None, :]), scores.max(0), cls, head, suppress=suppress))
        elif fmt == "yolov5":
            y = arrays[0]  # (A, 5 + C)
            probs = y[:, 5:5 + c] if c else y[:, 4:5]
            cls = probs.argmax(1)
            out.append(_select(xywh_to_xyxy(y[:, :4] * scale), y[:, 4] * probs.max(1), cls, head,
                               suppress=suppress))
        elif fmt == "nms":
            y = arrays[0]  # (K, 6)
            out.append(_select(y[:, :4], y[:, 4], np.rint(y[:, 5]).astype(np.int64), head, nms_done=True))
        elif fmt == "ssd":
            boxes, scores = arrays[0], arrays[1]  # (A, 4), (A, C)
            out.append(_select(boxes, scores.max(1), scores.argmax(1), head, suppress=suppress))
        elif fmt == "tflite-postprocess":
            boxes, classes, scores = arrays[0], arrays[1], arrays[2]
            n = int(np.clip(np.rint(arrays[3]), 0, len(scores))) if len(arrays) > 3 else len(scores)
            out.append(_select(boxes[:n], scores[:n], np.rint(classes[:n]).astype(np.int64), head, nms_done=True))
        elif fmt == "anchors" and anchored is not None:
            boxes, kps, conf, cls = decode_raw(arrays[0], arrays[1], anchored[1], anchored[0], head.keypoints)
            out.append(_select(boxes, conf, cls, head, suppress=suppress, keypoints=kps))
        else:
            raise ValueError(f"unknown detection head format {fmt!r}; formats: {', '.join(HEADS)}")
    return out


@dataclass
class Comparison:
    """The artifact's boxes against the source's on the same images (the source's are the reference)."""

    source_detections: int
    artifact_detections: int
    matched: int
    recall: float | None  # matched / source detections (None: the source detected nothing)
    precision: float | None  # matched / artifact detections (None: the artifact detected nothing)
    mean_iou: float | None  # of the matched pairs
    # mean |artifact score - source score| over the kept source boxes, the artifact's score read on its final (NMS
    # kept) box at that object: the score its user reads
    score_change: float | None
    # the matched pairs' keypoints (heads that have them): each point's distance, in input pixels where the caller
    # gave the scale, else in the boxes' units
    keypoint_error: float | None = None  # mean
    keypoint_error_p95: float | None = None  # 95th percentile


def compare_detections(source: Sequence[Detections], artifact: Sequence[Detections], match_iou: float = MATCH_IOU,
                       source_candidates: Sequence[Detections] | None = None,
                       artifact_candidates: Sequence[Detections] | None = None,
                       pixels: tuple[float, float] | None = None) -> Comparison:
    """How many of the source's detections the artifact keeps, and of the artifact's the source has.

    A source detection is kept when the artifact has a box of the same class at IoU >= MATCH_IOU among
    ARTIFACT_CANDIDATES (every box above the confidence cut, before NMS; its final detections where not given),
    and the other way round for precision. Matching against the candidates, not only the boxes NMS kept, makes
    the measure blind to NMS's tie-breaking: a detector whose scores are near ties (a random-weight YOLOv8n:
    0.47-0.53) keeps another of several overlapping boxes for a rounding of 1e-6, and the same detector
    compared with itself through a float converter measured 94% recall. A box that int8 pushes under the cut
    or lifts over it still counts, on its side. A kept box's score change is read on the artifact's final box at
    that object (the one NMS kept, same class, IoU >= MATCH_IOU; the best-overlapping candidate where NMS kept none
    there): the score its user reads. Read on the best-overlapping candidate, as it was, int8's small box shifts
    often pick a neighbouring anchor's lower score, which is not drift (docs/results/detectors.md measures both).
    Where both have keypoints, each kept source box's keypoints are compared with its match's: distances scaled by
    PIXELS (x, y pixels per unit of the coordinates) where given.
    """
    def same_class_iou(r: Detections, p: Detections) -> np.ndarray:
        iou = box_iou(r.boxes, p.boxes)
        iou[r.classes[:, None] != p.classes[None, :]] = 0.0
        return iou

    def kept(ref: Sequence[Detections], pool: Sequence[Detections], final: Sequence[Detections]
             ) -> tuple[int, list[float], list[float], list[np.ndarray]]:
        hits, ious, changes, moved = 0, [], [], []
        for r, p, f in zip(ref, pool, final, strict=True):
            if not len(r) or not len(p):
                continue
            iou = same_class_iou(r, p)
            best = iou.argmax(1)
            got = iou[np.arange(len(r)), best] >= match_iou
            hits += int(got.sum())
            ious.extend(iou[np.arange(len(r)), best][got].tolist())
            # the score read at that object: the final box there (the one NMS kept), else the best-overlapping one
            read = p.scores[best]
            if len(f):
                on = same_class_iou(r, f)
                there = on.max(1) >= match_iou
                read = np.where(there, f.scores[on.argmax(1)], read)
            changes.extend(np.abs(read[got] - r.scores[got]).tolist())
            if r.keypoints is not None and p.keypoints is not None and r.keypoints.size and got.any():
                step = (p.keypoints[best[got]] - r.keypoints[got]) * (np.asarray(pixels) if pixels else 1.0)
                moved.append(np.sqrt((step ** 2).sum(-1)).ravel())
        return hits, ious, changes, moved

    n_src = sum(len(d) for d in source)
    n_art = sum(len(d) for d in artifact)
    found, ious, changes, moved = kept(source, artifact_candidates or artifact, artifact)
    back, _, _, _ = kept(artifact, source_candidates or source, source)
    dist = np.concatenate(moved) if moved else np.zeros(0)
    return Comparison(source_detections=n_src, artifact_detections=n_art, matched=found,
                      recall=found / n_src if n_src else None, precision=back / n_art if n_art else None,
                      mean_iou=float(np.mean(ious)) if ious else None,
                      score_change=float(np.mean(changes)) if changes else None,
                      keypoint_error=float(dist.mean()) if dist.size else None,
                      keypoint_error_p95=float(np.percentile(dist, 95)) if dist.size else None)


def labelled_boxes(boxes: np.ndarray, images: int) -> list[Detections]:
    """The documented `boxes` label array, (M, 6) rows [image_index, class, x1, y1, x2, y2], per image."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 6)
    out = []
    for i in range(images):
        rows = boxes[np.rint(boxes[:, 0]) == i]
        out.append(Detections(rows[:, 2:6], np.ones(len(rows)), np.rint(rows[:, 1]).astype(np.int64)))
    return out


__all__ = ["CONFIDENCE", "HEADS", "MATCH_IOU", "MIN_DETECTIONS", "NMS_IOU", "ROLES", "Comparison", "Detections",
           "Head", "box_iou", "compare_detections", "decode", "labelled_boxes", "nms", "xywh_to_xyxy"]
