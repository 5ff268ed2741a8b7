"""One output of an artifact against the same output of its source: the measures of its kind, judged.

`judge` is the one place a verdict is formed: NaN or inf always fail (some converter paths write
them silently), a shape that differs fails, then the kind's measures (edgekit.fidelity.kinds) are
compared with its thresholds. Every measure that applies is recorded, judged or not.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from edgekit.core.artifact import Fidelity
from edgekit.fidelity.detection import MIN_DETECTIONS, Head, compare_detections, decode, labelled_boxes
from edgekit.fidelity.kinds import thresholds as kind_thresholds
from edgekit.fidelity.landmarks import CUT, Landmarks, asked_landmarks, errors, is_logit, score_of


class _Common(TypedDict, total=False):
    """The Fidelity fields every judgement fills the same way, passed as **keywords."""

    samples: int
    thresholds: dict[str, float]
    inputs: str
    output: str | None
    kind: str
    head: dict[str, Any]


def _flat(a: np.ndarray, n: int) -> np.ndarray:
    return a.reshape(n, -1).astype(np.float64)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Mean over samples of the cosine similarity of the flattened outputs (1 where both are zero)."""
    n = len(a)
    fa, fb = _flat(a, n), _flat(b, n)
    na, nb = np.linalg.norm(fa, axis=1), np.linalg.norm(fb, axis=1)
    denom = na * nb
    both_zero = (na == 0) & (nb == 0)
    cos = np.where(denom > 0, (fa * fb).sum(axis=1) / np.where(denom > 0, denom, 1), np.where(both_zero, 1.0, 0.0))
    return float(cos.mean())


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """Mean over samples of ||b - a|| / ||a||: 0 for the same output, 1 for an all-zero one, large for a wrong scale."""
    n = len(a)
    fa, fb = _flat(a, n), _flat(b, n)
    na = np.linalg.norm(fa, axis=1)
    diff = np.linalg.norm(fb - fa, axis=1)
    rel = np.where(na > 0, diff / np.where(na > 0, na, 1), np.where(diff > 0, 1.0, 0.0))
    return float(rel.mean())


def argmax_agreement(a: np.ndarray, b: np.ndarray, axis: int) -> float:
    """Fraction of positions (samples x pixels / steps) where the argmax along AXIS is the same."""
    return float((a.argmax(axis=axis) == b.argmax(axis=axis)).mean())


def mean_iou(pred: np.ndarray, truth: np.ndarray, classes: int) -> float:
    """Mean over the classes present in TRUTH or PRED of |pred & truth| / |pred | truth| (labels < 0 ignored)."""
    keep = truth >= 0
    p, t = pred[keep], truth[keep]
    ious = []
    for c in range(classes):
        union = np.count_nonzero((p == c) | (t == c))
        if union:
            ious.append(np.count_nonzero((p == c) & (t == c)) / union)
    return float(np.mean(ious)) if ious else 1.0


def judge(y_ref: np.ndarray, y: np.ndarray, *, kind: str, precision: str, channel_axis: int = 1,
          labels: np.ndarray | None = None, masks: np.ndarray | None = None,
          thresholds: dict[str, float] | None = None, inputs: str = "held-out", name: str | None = None,
          mask_threshold: float | None = None, landmarks: Landmarks | None = None) -> Fidelity:
    """Fidelity of artifact outputs Y against the source's Y_REF (same shape), judged as KIND at PRECISION.

    CHANNEL_AXIS: the class axis of a dense map (1 for NCHW, -1 for NHWC). LABELS: one class index per
    sample (classes: accuracy). MASKS: (N, H, W) class indices (dense: mIoU; < 0 is ignored). MASK_THRESHOLD:
    where a `mask` output is cut (edgekit.fidelity.mask.DEFAULT_THRESHOLD where None). LANDMARKS: how a `landmarks`
    output's points are read (edgekit.fidelity.decide decided it; read from Y_REF alone where None).
    """
    th = kind_thresholds(kind, precision)
    th.update(thresholds or {})
    n = len(y_ref)
    base: _Common = {"samples": n, "thresholds": th, "inputs": inputs, "output": name, "kind": kind}
    if y.shape != y_ref.shape:
        return Fidelity(top1_agreement=None, cosine=float("nan"), max_abs_error=float("nan"), passed=False,
                        failures=[f"output shape {list(y.shape)} differs from the source's {list(y_ref.shape)}"],
                        **base)
    finite = bool(np.isfinite(y).all())
    b = np.nan_to_num(y.astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    a = y_ref.astype(np.float64)
    fid = Fidelity(top1_agreement=None, cosine=cosine(a, b), relative_error=relative_error(a, b),
                   max_abs_error=float(np.abs(a - b).max()) if finite and a.size else float("inf") if not finite
                   else 0.0, **base)
    if kind == "classes" and a.ndim >= 2 and a.shape[1] > 1:
        fid.top1_agreement = argmax_agreement(a, b, 1)
        if labels is not None and a.ndim == 2 and len(labels) == n:
            fid.accuracy = float((b.argmax(1) == labels).mean())
            fid.reference_accuracy = float((a.argmax(1) == labels).mean())
    elif kind == "dense" and a.ndim == 4 and a.shape[channel_axis] > 1:
        fid.pixel_agreement = argmax_agreement(a, b, channel_axis)
        if masks is not None and len(masks) == n:
            truth = masks.astype(np.int64)
            pa, pb = a.argmax(axis=channel_axis), b.argmax(axis=channel_axis)
            if truth.shape == pa.shape:
                classes = a.shape[channel_axis]
                fid.miou, fid.reference_miou = mean_iou(pb, truth, classes), mean_iou(pa, truth, classes)
    elif kind == "sequence" and a.ndim == 3 and a.shape[-1] > 1:
        fid.step_agreement = argmax_agreement(a, b, -1)
    elif kind == "mask":
        th = _judge_mask(fid, a, b, th, channel_axis, mask_threshold)
    elif kind.partition(":")[0] == "landmarks":
        _judge_landmarks(fid, a, b, landmarks, kind)
    elif kind == "score":
        logits = is_logit(a)
        pa, pb = score_of(a, logits), score_of(b, logits)
        fid.score_agreement = float(((pa >= CUT) == (pb >= CUT)).mean()) if n else None
        fid.score_change = float(np.abs(pa - pb).mean()) if n else None
        if logits:
            fid.notes.append("the source's values leave [0, 1]: logits, compared as sigmoid probabilities")
    fid.failures = _failures(fid, th, finite)
    fid.passed = not fid.failures
    return fid


def judge_detection(y_ref: list[np.ndarray], y: list[np.ndarray], head: Head, *, precision: str,
                    boxes: np.ndarray | None = None, thresholds: dict[str, float] | None = None,
                    inputs: str = "held-out", name: str | None = None) -> Fidelity:
    """Fidelity of a detector's outputs Y against the source's Y_REF (each in the order of the head's roles).

    Both are decoded (confidence cut, class-aware NMS) and each source box matched to a same-class artifact
    box at IoU >= head.match_iou: recall and precision of the source's boxes are judged. BOXES: the documented
    (M, 6) label rows [image, class, x1, y1, x2, y2] of the held-out images: mAP50 / mAP50-95 of both.
    With fewer than MIN_DETECTIONS source boxes the boxes cannot show the bar: the raw tensors are judged as a
    regression instead, and the record's notes say so.
    """
    th = kind_thresholds("detection", precision)
    th.update(thresholds or {})
    n = len(y_ref[0])
    shapes_differ = [f"output shape {list(b.shape)} differs from the source's {list(a.shape)}"
                     for a, b in zip(y_ref, y, strict=True) if a.shape != b.shape]
    base: _Common = {"samples": n, "thresholds": th, "inputs": inputs, "output": name, "kind": "detection",
                     "head": head.to_dict()}
    if shapes_differ:
        return Fidelity(top1_agreement=None, cosine=float("nan"), max_abs_error=float("nan"), passed=False,
                        failures=shapes_differ, **base)
    finite = all(bool(np.isfinite(b).all()) for b in y)
    cos, rel, worst = _raw_figures(y_ref, y, n)
    src, art = decode(y_ref, head), decode(y, head)
    pixels = head.pixels()
    cmp = compare_detections(src, art, head.match_iou, decode(y_ref, head, suppress=False),
                             decode(y, head, suppress=False), pixels=pixels)
    fid = Fidelity(top1_agreement=None, cosine=cos, relative_error=rel,
                   max_abs_error=worst if finite else float("inf"), detection_recall=cmp.recall,
                   detection_precision=cmp.precision, box_iou=cmp.mean_iou, score_change=cmp.score_change,
                   detections=cmp.source_detections, **base)
    if cmp.keypoint_error is not None:
        fid.keypoint_error_px = cmp.keypoint_error
        fid.keypoint_error_share = cmp.keypoint_error / max(pixels) if pixels else None
    if boxes is not None and len(boxes):
        from edgekit.fidelity.coco import mean_ap

        truth = labelled_boxes(boxes, n)
        fid.map50, fid.map50_95 = mean_ap(art, truth)
        fid.reference_map50, fid.reference_map50_95 = mean_ap(src, truth)
    if cmp.source_detections < MIN_DETECTIONS:
        fid.notes.append(f"the source found {cmp.source_detections} boxes at confidence {head.confidence} on {n} "
                         f"held-out inputs, too few to judge boxes by (at least {MIN_DETECTIONS}): the raw outputs "
                         "are judged by the regression measures instead; pass --calib pictures with objects in them")
        reg = kind_thresholds("regression", precision)
        boxes_only = ("detection_recall", "detection_precision", "keypoint_error_share", "score_change")
        th = {**{k: v for k, v in th.items() if k not in boxes_only}, **reg}
        fid.thresholds = th
    fid.failures = _failures(fid, th, finite)
    fid.passed = not fid.failures
    return fid


RAW_CHUNK_BYTES = 256 << 20  # float64 copies of a detector's raw outputs made at once by _raw_figures


def _raw_figures(y_ref: list[np.ndarray], y: list[np.ndarray], n: int) -> tuple[float, float, float]:
    """(cosine, relative error, max abs error) of the raw outputs Y against Y_REF, each sample's outputs flattened
    together, a few samples at a time: the whole batch in float64 was 5 GB of copies for 63 images of a 640x640
    YOLOv5 (25,200 x 85 values each); every figure is a per-sample mean (or a max), so chunks give the same."""
    per = max(1, sum(int(np.prod(r.shape[1:])) for r in y_ref) * 8)
    step = max(1, RAW_CHUNK_BYTES // per)
    cos: list[float] = []
    rel: list[float] = []
    worst = 0.0
    for i in range(0, n, step):
        part = slice(i, min(i + step, n))
        k = part.stop - part.start
        a = np.concatenate([r[part].reshape(k, -1) for r in y_ref], axis=1).astype(np.float64)
        b = np.nan_to_num(np.concatenate([r[part].reshape(k, -1) for r in y], axis=1).astype(np.float64), nan=0.0,
                          posinf=0.0, neginf=0.0)
        cos.append(cosine(a, b) * k)
        rel.append(relative_error(a, b) * k)
        if a.size:
            worst = max(worst, float(np.abs(a - b).max()))
    return (sum(cos) / n, sum(rel) / n, worst) if n else (float("nan"), float("nan"), 0.0)


def _judge_landmarks(fid: Fidelity, a: np.ndarray, b: np.ndarray, lm: Landmarks | None, kind: str) -> None:
    """Fill FID's landmark measures: each point's 2-D distance, mean and 95th percentile, in pixels and as a share of
    the input's side."""
    if lm is None:
        fmt = kind.partition(":")[2]
        lm = asked_landmarks(a, None, int(fmt) if fmt.isdigit() else None)
    d, side = errors(a, b, lm)
    if not d.size:
        return
    fid.landmarks = lm.to_dict()
    fid.landmark_error_px, fid.landmark_p95_px = float(d.mean()), float(np.percentile(d, 95))
    fid.landmark_error_share, fid.landmark_p95_share = fid.landmark_error_px / side, fid.landmark_p95_px / side
    if lm.size is None:
        fid.notes.append(f"the model's input is not an image of a known size: landmark errors are shares of the "
                         f"source coordinates' extent ({side:.4g}), in the output's own units")


def _judge_mask(fid: Fidelity, a: np.ndarray, b: np.ndarray, th: dict[str, float], channel_axis: int,
                threshold: float | None) -> dict[str, float]:
    """Fill FID's mask measures (edgekit.fidelity.mask); the thresholds to judge by (the regions' dropped, and the
    record's notes saying why, where the source has too few regions to show them)."""
    from edgekit.fidelity.mask import DEFAULT_THRESHOLD, MIN_REGIONS, compare_masks

    cut = DEFAULT_THRESHOLD if threshold is None else float(threshold)
    cmp = compare_masks(a, b, cut, channel_axis)
    fid.mask_threshold, fid.mask_agreement, fid.mask_iou = cut, cmp.agreement, cmp.iou
    fid.region_recall, fid.region_precision, fid.regions = cmp.region_recall, cmp.region_precision, cmp.regions
    if cmp.regions < MIN_REGIONS:
        fid.notes.append(f"the source's mask (threshold {cut:g}) has {cmp.regions} regions on {len(a)} held-out "
                         f"inputs, too few to judge regions by (at least {MIN_REGIONS}): only the mask's pixel "
                         "agreement is judged; pass --calib inputs with more objects, or --mask-threshold")
        th = {k: v for k, v in th.items() if k not in ("region_recall", "region_precision")}
        fid.thresholds = th
    return th


def _failures(f: Fidelity, th: dict[str, float], finite: bool) -> list[str]:
    out: list[str] = []
    if not finite:
        out.append("outputs contain NaN or inf")
    for key, value, words in (("top1_agreement", f.top1_agreement, "top-1 agreement"),
                              ("pixel_agreement", f.pixel_agreement, "per-pixel argmax agreement"),
                              ("step_agreement", f.step_agreement, "per-step argmax agreement"),
                              ("mask_agreement", f.mask_agreement, f"mask agreement (at {f.mask_threshold})"),
                              ("region_recall", f.region_recall, "source mask regions kept (IoU >= 0.5)"),
                              ("region_precision", f.region_precision, "artifact mask regions that are the source's")):
        if value is not None and key in th and value < th[key]:
            out.append(f"{words} {value:.2%} < {th[key]:.2%}")
    if f.detection_recall is not None and f.detection_recall < th.get("detection_recall", 0.0):
        kept = round(f.detection_recall * (f.detections or 0))
        out.append(f"detection recall {f.detection_recall:.2%} < {th['detection_recall']:.2%}: the artifact keeps "
                   f"{kept} of the source's {f.detections} boxes (same class, IoU >= 0.5)")
    if f.detection_precision is not None and f.detection_precision < th.get("detection_precision", 0.0):
        out.append(f"detection precision {f.detection_precision:.2%} < {th['detection_precision']:.2%}: the "
                   "artifact finds boxes the source does not")
    side = (f.landmarks or {}).get("size")
    side_words = f"the {max(side)} px side" if side else "the source coordinates' extent"
    for key, value, px, words in (
            ("landmark_error_share", f.landmark_error_share, f.landmark_error_px, "landmarks moved"),
            ("landmark_p95_share", f.landmark_p95_share, f.landmark_p95_px, "95% of landmarks moved up to"),
            ("keypoint_error_share", f.keypoint_error_share, f.keypoint_error_px, "keypoints of matched boxes moved")):
        if value is not None and key in th and not value <= th[key]:
            mean = " on average" if key != "landmark_p95_share" else ""
            where = side_words if key != "keypoint_error_share" else "the input's side"
            out.append(f"{words} {px:.3g} px{mean}: {value:.2%} of {where} > {th[key]:.2%}")
    if f.score_agreement is not None and "score_agreement" in th and f.score_agreement < th["score_agreement"]:
        out.append(f"score decisions at {CUT} agree on {f.score_agreement:.2%} of samples < "
                   f"{th['score_agreement']:.2%}")
    if f.score_change is not None and "score_change" in th and not f.score_change <= th["score_change"]:
        what = "class scores of the kept boxes moved" if f.kind == "detection" else "score probability changed"
        out.append(f"{what} by {f.score_change:.3g} on average > {th['score_change']}")
    if "cosine" in th and not f.cosine >= th["cosine"]:
        out.append(f"cosine similarity {f.cosine:.5f} < {th['cosine']}")
    if "relative_error" in th and f.relative_error is not None and not f.relative_error <= th["relative_error"]:
        out.append(f"relative error {f.relative_error:.4g} > {th['relative_error']}")
    if f.accuracy is not None and f.reference_accuracy is not None and "accuracy_drop" in th \
            and f.reference_accuracy - f.accuracy > th["accuracy_drop"]:
        out.append(f"accuracy {f.accuracy:.2%} is {100 * (f.reference_accuracy - f.accuracy):.2f} points below the "
                   f"source's {f.reference_accuracy:.2%}")
    if f.miou is not None and f.reference_miou is not None and "miou_drop" in th \
            and f.reference_miou - f.miou > th["miou_drop"]:
        out.append(f"mIoU {f.miou:.3f} is {f.reference_miou - f.miou:.3f} below the source's {f.reference_miou:.3f}")
    if f.map50 is not None and f.reference_map50 is not None and "map50_drop" in th \
            and f.reference_map50 - f.map50 > th["map50_drop"]:
        out.append(f"mAP50 {f.map50:.3f} is {f.reference_map50 - f.map50:.3f} below the source's "
                   f"{f.reference_map50:.3f}")
    return out


def worst(per_output: list[Fidelity]) -> Fidelity:
    """The record that stands for the artifact: the first failing output, else the one with the lowest cosine."""
    failing = [f for f in per_output if not f.passed]
    if failing:
        return failing[0]
    return min(per_output, key=lambda f: (f.cosine if f.cosine == f.cosine else -2.0))


__all__ = ["argmax_agreement", "cosine", "judge", "judge_detection", "mean_iou", "relative_error", "worst"]
