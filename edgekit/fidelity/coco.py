"""mAP50 and mAP50-95 of a detector's boxes against labelled boxes, by pycocotools.

pycocotools is the reference implementation of the COCO metric (the numbers papers and Ultralytics'
COCO results are quoted in), numpy-only and small: a user's mAP here is the number they know, not a
hand-written approximation of it. It is imported only when labelled boxes exist.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from typing import Any

from edgekit.core._deps import require
from edgekit.fidelity.detection import Detections


def mean_ap(predictions: Sequence[Detections], truth: Sequence[Detections]) -> tuple[float, float]:
    """(mAP50, mAP50-95) of PREDICTIONS against TRUTH, one entry per image, boxes as corners in pixels.

    Areas follow the boxes; an image set with no labelled box has no mAP: (nan, nan).
    """
    require("pycocotools", extra="convert", purpose="compute mAP against labelled boxes")
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    classes = sorted({int(c) for t in truth for c in t.classes} | {int(c) for p in predictions for c in p.classes})
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for i, (p, t) in enumerate(zip(predictions, truth, strict=True)):
        images.append({"id": i})
        for box, c in zip(t.boxes, t.classes, strict=True):
            w, h = float(box[2] - box[0]), float(box[3] - box[1])
            annotations.append({"id": len(annotations) + 1, "image_id": i, "category_id": int(c), "iscrowd": 0,
                                "bbox": [float(box[0]), float(box[1]), w, h], "area": max(w, 0.0) * max(h, 0.0)})
        for box, s, c in zip(p.boxes, p.scores, p.classes, strict=True):
            results.append({"image_id": i, "category_id": int(c), "score": float(s),
                            "bbox": [float(box[0]), float(box[1]), float(box[2] - box[0]), float(box[3] - box[1])]})
    if not annotations:
        return float("nan"), float("nan")
    if not results:
        return 0.0, 0.0
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints its progress and summary
        gt = COCO()
        gt.dataset = {"images": images, "annotations": annotations, "categories": [{"id": c} for c in classes]}
        gt.createIndex()
        dt = gt.loadRes(results)
        ev = COCOeval(gt, dt, "bbox")
        ev.params.maxDets = [1, 10, 300]  # the last is the one AP is read at: as many boxes as NMS keeps
        ev.evaluate()
        ev.accumulate()
    # precision[T iou thresholds, R recall points, K classes, A areas, M maxDets]; -1 marks a class with no labels.
    # Read as COCOeval.summarize reads AP (area "all"), at the last maxDets (its own stats[0] is fixed at 100).
    p = ev.eval["precision"][:, :, :, 0, -1]

    def ap(x: Any) -> float:
        x = x[x > -1]
        return float(x.mean()) if x.size else float("nan")

    return ap(p[0]), ap(p)


__all__ = ["mean_ap"]
