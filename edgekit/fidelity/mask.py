"""Single-channel probability maps (text detectors, saliency, one-class segmenters), judged as their user reads them.

The user of a (N, 1, H, W) sigmoid map never reads its values: they threshold it (a DBNet-style text detector at
about 0.3, a saliency or one-class segmenter at 0.5) and take the connected regions of the mask as text boxes or
objects. A map can lose a few thousandths of cosine (PP-OCRv4's detector at int8: 0.978 against the 0.98
regression bar) and give the same regions, or keep its cosine and merge two text lines. So the mask kind measures:

- `mask_agreement`: the share of pixels on the same side of the threshold in both maps;
- `mask_iou`: the IoU of the two masks' foregrounds (all samples together);
- `region_recall` / `region_precision`: the connected regions (8-connected, at least MIN_REGION_PIXELS pixels: a
  text detector drops smaller boxes too) of the source's mask matched by one of the artifact's at IoU >= MATCH_IOU,
  and the other way round, as a detector's boxes are (COCO's AP50 rule).

With fewer than MIN_REGIONS source regions on the held-out inputs the region counts cannot show a 95% bar: they are
recorded, not judged, and the record's notes say so. The regions come from scipy.ndimage.label (scipy: a dependency
of the `convert` extra's packages), imported when a mask is judged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_THRESHOLD = 0.5
MIN_REGION_PIXELS = 4
MIN_REGIONS = 20
MATCH_IOU = 0.5


@dataclass(frozen=True)
class MaskComparison:
    agreement: float
    iou: float
    region_recall: float | None
    region_precision: float | None
    regions: int  # the source's regions (of at least MIN_REGION_PIXELS pixels) on all samples


def binary(y: np.ndarray, threshold: float, channel_axis: int = 1) -> np.ndarray:
    """(N, H, W) foreground of the map Y, (N, 1, H, W) or (N, H, W, 1) (channel on CHANNEL_AXIS) or (N, H, W)."""
    a = np.asarray(y)
    if a.ndim == 4:
        a = np.take(a, 0, axis=channel_axis)
    return a >= threshold


def _regions(mask: np.ndarray) -> tuple[np.ndarray, int]:
    """8-connected labels of MASK, regions under MIN_REGION_PIXELS pixels dropped (label 0); how many are left."""
    from scipy import ndimage

    labels, n = ndimage.label(mask, structure=np.ones((3, 3), bool))
    if n == 0:
        return labels, 0
    sizes = np.bincount(labels.ravel(), minlength=n + 1)
    keep = sizes >= MIN_REGION_PIXELS
    keep[0] = False
    remap = np.zeros(n + 1, np.int64)
    remap[keep] = np.arange(1, int(keep.sum()) + 1)
    return remap[labels], int(keep.sum())


def _matched(la: np.ndarray, na: int, lb: np.ndarray, nb: int) -> tuple[int, int]:
    """(regions of LA matched by one of LB at IoU >= MATCH_IOU, regions of LB matched by one of LA)."""
    if na == 0 or nb == 0:
        return 0, 0
    pair = np.bincount(la.ravel() * (nb + 1) + lb.ravel(), minlength=(na + 1) * (nb + 1)).reshape(na + 1, nb + 1)
    area_a, area_b = pair.sum(axis=1), pair.sum(axis=0)
    inter = pair[1:, 1:].astype(np.float64)
    iou = inter / (area_a[1:, None] + area_b[None, 1:] - inter)
    hit = iou >= MATCH_IOU  # regions of one mask are disjoint: at most one partner can pass 0.5
    return int(hit.any(axis=1).sum()), int(hit.any(axis=0).sum())


def compare_masks(y_ref: np.ndarray, y: np.ndarray, threshold: float = DEFAULT_THRESHOLD,
                  channel_axis: int = 1) -> MaskComparison:
    """The artifact's map Y against the source's Y_REF, both thresholded at THRESHOLD."""
    a, b = binary(y_ref, threshold, channel_axis), binary(y, threshold, channel_axis)
    union = np.count_nonzero(a | b)
    iou = np.count_nonzero(a & b) / union if union else 1.0
    src = art = kept = found = 0
    for ma, mb in zip(a, b, strict=True):
        la, na = _regions(ma)
        lb, nb = _regions(mb)
        ka, kb = _matched(la, na, lb, nb)
        src, art, kept, found = src + na, art + nb, kept + ka, found + kb
    return MaskComparison(agreement=float((a == b).mean()), iou=float(iou),
                          region_recall=kept / src if src else None, region_precision=found / art if art else None,
                          regions=src)


def single_channel_map(y: np.ndarray, layout: str) -> bool:
    """Whether Y has a mask's shape: (N, H, W), or 4-D with one channel (axis 1, or last for NHWC)."""
    if y.ndim == 3:
        return True
    return y.ndim == 4 and y.shape[3 if layout.upper() == "NHWC" else 1] == 1


def probability_map(y: np.ndarray, layout: str) -> bool:
    """Whether Y looks like a single-channel probability map: 4-D, one channel (axis 1, or last for NHWC), at least
    8x8 pixels, every value in [0, 1] and not all one value."""
    if y.ndim != 4 or not y.size or not single_channel_map(y, layout):
        return False
    if min(y.shape[1:3] if layout.upper() == "NHWC" else y.shape[2:4]) < 8:
        return False
    lo, hi = float(np.nanmin(y)), float(np.nanmax(y))
    return lo >= -1e-3 and hi <= 1 + 1e-3 and hi > lo


__all__ = ["DEFAULT_THRESHOLD", "MATCH_IOU", "MIN_REGIONS", "MIN_REGION_PIXELS", "MaskComparison", "binary",
           "compare_masks", "probability_map", "single_channel_map"]
