"""YOLOv8's training loss, compactly re-implemented: task-aligned assignment, BCE, CIoU and DFL.

Why this one: the bundled detector should be trained the way real YOLOv8 models are, so its raw
outputs (DFL bin logits, sigmoid scores) have the distributions converters and int8 calibration meet
in the wild. Follows ultralytics/utils/tal.py (TaskAlignedAssigner) and ultralytics/utils/loss.py
(v8DetectionLoss, gains box 7.5, cls 0.5, dfl 1.5), with one change: an anchor is a candidate for a
ground-truth box if its centre lies in the box *widened to at least one stride* around the box centre,
so a thin digit (a "1" only 3 px wide at 16 px) still gets positive anchors.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from models.yolo import REG_MAX, dist2bbox, make_anchors

BOX_GAIN, CLS_GAIN, DFL_GAIN = 7.5, 0.5, 1.5


def bbox_ciou(box1: torch.Tensor, box2: torch.Tensor, eps: float = 1e-7) -> torch.Tensor:
    """Complete IoU of corner boxes (..., 4) x (..., 4) -> (..., 1), as Ultralytics' bbox_iou(CIoU=True)."""
    b1_x1, b1_y1, b1_x2, b1_y2 = box1.chunk(4, -1)
    b2_x1, b2_y1, b2_x2, b2_y2 = box2.chunk(4, -1)
    w1, h1 = b1_x2 - b1_x1, (b1_y2 - b1_y1).clamp(eps)
    w2, h2 = b2_x2 - b2_x1, (b2_y2 - b2_y1).clamp(eps)
    inter = ((b1_x2.minimum(b2_x2) - b1_x1.maximum(b2_x1)).clamp(0)
             * (b1_y2.minimum(b2_y2) - b1_y1.maximum(b2_y1)).clamp(0))
    iou = inter / (w1 * h1 + w2 * h2 - inter + eps)
    cw = b1_x2.maximum(b2_x2) - b1_x1.minimum(b2_x1)
    ch = b1_y2.maximum(b2_y2) - b1_y1.minimum(b2_y1)
    c2 = cw.pow(2) + ch.pow(2) + eps
    rho2 = ((b2_x1 + b2_x2 - b1_x1 - b1_x2).pow(2) + (b2_y1 + b2_y2 - b1_y1 - b1_y2).pow(2)) / 4
    v = (4 / math.pi**2) * (torch.atan(w2 / h2) - torch.atan(w1 / h1)).pow(2)
    with torch.no_grad():
        alpha = v / (v - iou + (1 + eps))
    return iou - (rho2 / c2 + v * alpha)


@torch.no_grad()
def assign(pd_scores: torch.Tensor, pd_bboxes: torch.Tensor, anc_points: torch.Tensor, anc_strides: torch.Tensor,
           gt_labels: torch.Tensor, gt_bboxes: torch.Tensor, mask_gt: torch.Tensor, nc: int, topk: int = 10,
           alpha: float = 0.5, beta: float = 6.0, eps: float = 1e-9
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Task-aligned assignment (TOOD/YOLOv8): per ground truth, the TOPK candidate anchors with the highest
    score^alpha * CIoU^beta; an anchor claimed twice goes to the box it overlaps most.

    Shapes: pd_scores (b, A, nc) probabilities, pd_bboxes (b, A, 4) corners in pixels, anc_points (A, 2)
    and anc_strides (A, 1) in pixels, gt_labels (b, n, 1), gt_bboxes (b, n, 4), mask_gt (b, n, 1).
    Returns target boxes (b, A, 4), soft target scores (b, A, nc), foreground mask (b, A)."""
    bs, n_max = gt_bboxes.shape[:2]
    na = anc_points.shape[0]
    if n_max == 0:
        return torch.zeros_like(pd_bboxes), torch.zeros_like(pd_scores), torch.zeros(bs, na, dtype=torch.bool)
    centre = (gt_bboxes[..., :2] + gt_bboxes[..., 2:]) / 2  # (b, n, 2)
    half = ((gt_bboxes[..., 2:] - gt_bboxes[..., :2]) / 2)[:, :, None]  # (b, n, 1, 2)
    half = half.maximum(anc_strides.view(1, 1, na, 1) / 2)  # at least one stride wide
    mask_in_gts = ((anc_points[None, None] - centre[:, :, None]).abs() < half - eps).all(-1).float()
    mask = mask_in_gts * mask_gt  # (b, n, A)

    ind0 = torch.arange(bs).view(-1, 1).expand(-1, n_max)
    bbox_scores = pd_scores.permute(0, 2, 1)[ind0, gt_labels.squeeze(-1).long()] * mask  # (b, n, A)
    overlaps = bbox_ciou(gt_bboxes[:, :, None].expand(-1, -1, na, -1),
                         pd_bboxes[:, None].expand(-1, n_max, -1, -1)).squeeze(-1).clamp(0) * mask
    align_metric = bbox_scores.pow(alpha) * overlaps.pow(beta)

    topk_idxs = torch.topk(align_metric, min(topk, na), dim=-1).indices  # (b, n, k)
    mask_topk = torch.zeros_like(align_metric).scatter_(-1, topk_idxs, 1.0)
    mask_pos = mask_topk * mask  # (b, n, A)

    fg = mask_pos.sum(-2)  # (b, A)
    if fg.max() > 1:  # an anchor claimed by several boxes: keep the box it overlaps most
        multi = (fg[:, None] > 1).expand(-1, n_max, -1)
        is_max = torch.zeros_like(mask_pos).scatter_(1, overlaps.argmax(1, keepdim=True), 1.0)
        mask_pos = torch.where(multi, is_max, mask_pos)
        fg = mask_pos.sum(-2)
    target_gt_idx = mask_pos.argmax(-2)  # (b, A)

    flat = target_gt_idx + torch.arange(bs)[:, None] * n_max
    target_labels = gt_labels.long().flatten()[flat].clamp(0)
    target_bboxes = gt_bboxes.view(-1, 4)[flat]
    target_scores = F.one_hot(target_labels, nc).float() * (fg[..., None] > 0)

    align_metric = align_metric * mask_pos  # normalise: the best anchor of a box gets that box's best IoU
    pos_align = align_metric.amax(-1, keepdim=True)
    pos_overlaps = (overlaps * mask_pos).amax(-1, keepdim=True)
    norm = (align_metric * pos_overlaps / (pos_align + eps)).amax(-2)[..., None]
    return target_bboxes, target_scores * norm, fg > 0


def df_loss(pred_dist: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Distribution focal loss: cross-entropy to the two bins around each continuous target, weighted
    by closeness. pred_dist (k*4, REG_MAX) logits, target (k, 4) -> (k, 1)."""
    tl = target.long()
    tr = tl + 1
    wl = tr - target
    wr = 1 - wl
    left = F.cross_entropy(pred_dist, tl.view(-1), reduction="none").view(tl.shape)
    right = F.cross_entropy(pred_dist, tr.view(-1), reduction="none").view(tl.shape)
    return (left * wl + right * wr).mean(-1, keepdim=True)


def detection_loss(feats: list[torch.Tensor], gt: torch.Tensor, nc: int,
                   strides: tuple[int, ...] = (8, 16, 32)) -> tuple[torch.Tensor, torch.Tensor]:
    """YOLOv8 loss of the raw level maps FEATS for targets GT (b, n, 5) [class, x1, y1, x2, y2] in pixels,
    rows with class < 0 being padding. Returns the weighted sum (mean per image) and (box, cls, dfl)."""
    b = feats[0].shape[0]
    pred = torch.cat([f.view(b, nc + 4 * REG_MAX, -1) for f in feats], 2)
    pred_distri, pred_scores = pred.split((4 * REG_MAX, nc), 1)
    pred_scores = pred_scores.permute(0, 2, 1).contiguous()  # (b, A, nc)
    pred_distri = pred_distri.permute(0, 2, 1).contiguous()  # (b, A, 4 * REG_MAX)
    na = pred_scores.shape[1]
    anchor_points, stride_tensor = make_anchors(feats, strides, 0.5)  # grid units, (A, 1)
    proj = torch.arange(REG_MAX, dtype=pred.dtype)
    pred_bboxes = dist2bbox(pred_distri.view(b, na, 4, REG_MAX).softmax(3) @ proj, anchor_points, xywh=False)

    mask_gt = (gt[..., :1] >= 0).float()
    target_bboxes, target_scores, fg = assign(
        pred_scores.detach().sigmoid(), pred_bboxes.detach() * stride_tensor, anchor_points * stride_tensor,
        stride_tensor, gt[..., :1].clamp(0), gt[..., 1:], mask_gt, nc)
    tss = target_scores.sum().clamp(min=1.0)

    loss_cls = F.binary_cross_entropy_with_logits(pred_scores, target_scores, reduction="none").sum() / tss
    loss_box = loss_dfl = pred.new_zeros(())
    if fg.any():
        target_bboxes = target_bboxes / stride_tensor
        weight = target_scores.sum(-1)[fg][:, None]
        iou = bbox_ciou(pred_bboxes[fg], target_bboxes[fg])
        loss_box = ((1.0 - iou) * weight).sum() / tss
        x1y1, x2y2 = target_bboxes.chunk(2, -1)
        ltrb = torch.cat((anchor_points - x1y1, x2y2 - anchor_points), -1).clamp(0, REG_MAX - 1 - 0.01)
        loss_dfl = (df_loss(pred_distri[fg].view(-1, REG_MAX), ltrb[fg]) * weight).sum() / tss
    parts = torch.stack([BOX_GAIN * loss_box, CLS_GAIN * loss_cls, DFL_GAIN * loss_dfl])
    return parts.sum(), parts.detach()
