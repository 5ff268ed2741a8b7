"""What kind of output a tensor is, and the thresholds each kind is judged by: one table.

A classifier's logits, a segmenter's per-pixel class scores, a recognizer's per-step scores and a
detector's box regressions fail in different ways, and a user recognises different measures for
them. The kind is decided from the model's metadata, the outputs' names, shapes and values
(edgekit.fidelity.decide; `kind_of` is its rule by shape alone), and can be set per output (`--output-kind
name=kind`, `edgekit.convert(output_kinds={...})`). Why each measure and each threshold is what it
is: docs/fidelity.md.

- classes    (N, C), C > 1: top-1 agreement with the source (+ accuracy with labels), cosine.
- dense      (N, C, H, W) or (N, H, W, C), C > 1: per-pixel argmax agreement (+ mIoU with label masks).
- sequence   (N, T, C), C > 1: per-step argmax agreement: what a CTC or greedy decoder reads.
- detection  a detector head (edgekit.fidelity.detection): decoded to boxes, NMS, and each source box matched
             to a same-class artifact box at IoU >= 0.5: recall and precision of the source's boxes (+ mAP
             with labelled boxes).
- mask       (N, 1, H, W) probability maps (text detectors, saliency, one-class segmenters): the thresholded
             mask's per-pixel agreement and its connected regions matched at IoU >= 0.5 (edgekit.fidelity.mask),
             cosine recorded; the threshold per output (--mask-threshold, default 0.5).
- landmarks  points in input pixels ((N, 3K), (N, K, 2|3), (N, 1, 1, 3K): a hand's 21, a face's 468; edgekit.fidelity.
             landmarks): each point's 2-D distance from the source's, mean and 95th percentile, as a share of the
             input's side (pixels recorded).
- score      one value per sample beside landmarks (presence, visibility, handedness; logits through a sigmoid): the
             share of samples decided the same at 0.5, and the mean change of the probability.
- regression everything else (single-channel maps not in [0, 1], boxes, world landmarks, embeddings, scalars):
             cosine and relative error ||y - y_ref|| / ||y_ref||, which also catches a wrong scale.

The "classes" row is the precisions table (edgekit.core.precisions): a classifier is judged as it always was.
Plain data: importing this module imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Sequence

from edgekit.core.errors import UsageError
from edgekit.core.precisions import thresholds as precision_thresholds
from edgekit.core.registry import suggest
from edgekit.fidelity.detection import HEADS

KINDS: tuple[str, ...] = ("classes", "dense", "sequence", "detection", "mask", "landmarks", "score", "regression")
# shorthands that --output-kind accepts for a kind with a format: anchors:palm is detection:anchors:palm
# "presence": a score that gates its model's landmarks (judged where the source's score is at least 0.5, as MediaPipe
# drops the crops whose presence is lower); the score itself is judged as any score
SHORTHANDS: dict[str, str] = {"anchors": "detection:anchors", "presence": "score:presence"}

# kind -> precision -> thresholds. Keys: top1_agreement / pixel_agreement / step_agreement (fractions, at
# least), cosine (at least), relative_error (at most), accuracy_drop / miou_drop (fraction points below the
# source's, at most), detection_recall / detection_precision (fractions of the source's / the artifact's
# boxes matched, at least), map50_drop (mAP50 points below the source's, with labelled boxes, at most),
# mask_agreement / region_recall / region_precision (fractions of pixels on the same side of the mask threshold, and
# of the source's / the artifact's regions matched at IoU 0.5, at least), landmark_error_share / landmark_p95_share
# (each point's distance from the source's, mean / 95th percentile, as a share of the input's side, at most),
# keypoint_error_share (the same for a detector's keypoints on matched boxes, mean, at most), score_agreement (samples
# decided the same at 0.5, at least), score_change (mean |probability change|, at most).
# A metric not listed for a kind is measured and recorded, not judged.
THRESHOLDS: dict[str, dict[str, dict[str, float]]] = {
    "dense": {
        "fp32": {"pixel_agreement": 0.99, "cosine": 0.9999},
        "fp16": {"pixel_agreement": 0.99, "cosine": 0.999},
        "dynamic": {"pixel_agreement": 0.97, "cosine": 0.99},
        "int8": {"pixel_agreement": 0.95, "miou_drop": 0.02},
        "w8a16": {"pixel_agreement": 0.98, "miou_drop": 0.01},
    },
    "sequence": {
        "fp32": {"step_agreement": 0.99, "cosine": 0.9999},
        "fp16": {"step_agreement": 0.99, "cosine": 0.999},
        "dynamic": {"step_agreement": 0.97, "cosine": 0.99},
        "int8": {"step_agreement": 0.95},
        "w8a16": {"step_agreement": 0.99},
    },
    # A float artifact finds the same boxes; 16-bit floats move scores across the 0.25 cut on a few; int8 keeps
    # 95% of them both ways (issue 27's bar, where a shared int8 scale for pixels and scores kept 38%), and
    # mAP50 within 3 points of the source's (Ultralytics' int8 exports report drops of 1-3 points).
    # A detector's keypoints (anchors heads: BlazePalm's 7, BlazeFace's 6) place and turn the crop a landmark model
    # reads, which finds its own points: they may move twice as far as landmarks (mean, share of the input's side).
    # int8 class scores of the kept boxes move 0.03 at most on average (issue 37's bar: a trained YOLOv8n whose int8
    # scores moved 0.07-0.08 kept 93% of the boxes at the 0.25 cut but added 30-60% more), the score read at each
    # object being the highest of the artifact's matching boxes (edgekit.fidelity.detection.compare_detections).
    "detection": {
        "fp32": {"detection_recall": 0.99, "detection_precision": 0.99, "keypoint_error_share": 0.001},
        "fp16": {"detection_recall": 0.98, "detection_precision": 0.98, "keypoint_error_share": 0.004},
        "dynamic": {"detection_recall": 0.95, "detection_precision": 0.95, "keypoint_error_share": 0.01},
        "int8": {"detection_recall": 0.95, "detection_precision": 0.95, "map50_drop": 0.03,
                 "keypoint_error_share": 0.02, "score_change": 0.03},
        "w8a16": {"detection_recall": 0.98, "detection_precision": 0.98, "map50_drop": 0.01,
                  "keypoint_error_share": 0.01},
    },
    # The user of a probability map reads its thresholded mask and the regions in it: a float artifact keeps nearly
    # every pixel's side of the threshold; int8 keeps 98% of pixels and 95% of the regions (issue 29's bar for a
    # text detector: a one-pixel band along region edges flips first), w8a16 nearly all of them. Cosine is recorded.
    "mask": {
        "fp32": {"mask_agreement": 0.999, "region_recall": 0.99, "region_precision": 0.99},
        "fp16": {"mask_agreement": 0.995, "region_recall": 0.98, "region_precision": 0.98},
        "dynamic": {"mask_agreement": 0.99, "region_recall": 0.95, "region_precision": 0.95},
        "int8": {"mask_agreement": 0.98, "region_recall": 0.95, "region_precision": 0.95},
        "w8a16": {"mask_agreement": 0.995, "region_recall": 0.98, "region_precision": 0.98},
    },
    # Landmarks, as a share of the input's longer side (pixels = share x side). The bar: int8 within 1% of the
    # side on average (2.2 px on a 224 px hand crop, 1.9 px on a 192 px face), the 95th percentile within 2.5x that
    # (a Rayleigh-distributed 2-D error has its 95th percentile at 1.95x its mean: 2.5x leaves room for a heavier tail,
    # not for a fingertip that flies off). Published int8 landmark models keep their accuracy against ground truth:
    # PIPNet-ResNet18 on WFLW, NME 4.57% (FP16) -> 4.58% (INT8 PTQ) of the inter-ocular distance (SqueezeBits/
    # owlite-examples, face-landmark/README.md); a float hand model's own error is about 1.5% of its side (MMPose's
    # ResNet-50 on FreiHAND at 224 px: EPE 3.27 px on its test set, configs/hand_2d_keypoint/topdown_heatmap/
    # freihand2d/resnet_freihand2d.md). A drift of 1% of the side, independent of the model's own error, adds in
    # quadrature: 3.27 -> 4.0 px on that hand model, the most int8 may cost; a faithful int8 costs far less, as the
    # published NME shows. Float artifacts move points by rounding only (fp32 0.05%, 0.1 px at 224; fp16's 11-bit
    # mantissa steps by 0.125 px at 128-256 px: 0.2%); the 8-bit-weight ones (dynamic, w8a16) by half int8's.
    "landmarks": {
        "fp32": {"landmark_error_share": 0.0005, "landmark_p95_share": 0.00125},
        "fp16": {"landmark_error_share": 0.002, "landmark_p95_share": 0.005},
        "dynamic": {"landmark_error_share": 0.005, "landmark_p95_share": 0.0125},
        "int8": {"landmark_error_share": 0.01, "landmark_p95_share": 0.025},
        "w8a16": {"landmark_error_share": 0.005, "landmark_p95_share": 0.0125},
    },
    # A presence or handedness score is a two-class decision at 0.5: judged as a classifier's top-1 agreement is (the
    # precisions table's bars), and its probability may move by at most 0.05 at int8 on average (a tenth of the way
    # from a confident 0 or 1 to the cut), so that inputs where every score sits far from the cut still judge it.
    "score": {
        "fp32": {"score_agreement": 0.99, "score_change": 0.001},
        "fp16": {"score_agreement": 0.99, "score_change": 0.01},
        "dynamic": {"score_agreement": 0.98, "score_change": 0.05},
        "int8": {"score_agreement": 0.97, "score_change": 0.05},
        "w8a16": {"score_agreement": 0.99, "score_change": 0.02},
    },
    "regression": {
        "fp32": {"cosine": 0.9999, "relative_error": 0.001},
        "fp16": {"cosine": 0.999, "relative_error": 0.01},
        "dynamic": {"cosine": 0.99, "relative_error": 0.1},
        "int8": {"cosine": 0.98, "relative_error": 0.2},
        "w8a16": {"cosine": 0.995, "relative_error": 0.1},
    },
}


def thresholds(kind: str, precision: str) -> dict[str, float]:
    """A fresh copy of the thresholds of an output of KIND at PRECISION (fp32's for an unknown precision)."""
    kind = kind.partition(":")[0]  # "detection:yolov8" is judged as "detection"
    if kind == "classes" or kind not in THRESHOLDS:
        return precision_thresholds(precision)
    table = THRESHOLDS[kind]
    return dict(table.get(precision) or table["fp32"])


def kind_of(shape: Sequence[int], layout: str | None = None) -> str:
    """The kind an output of SHAPE (batch first) is judged as, when nobody said otherwise.

    (N, C>1) classes; (N, T, C>1) sequence; 4-D with more than one channel (on axis 1, or on the last
    axis for a channels-last LAYOUT) dense; anything else regression.
    """
    dims = list(shape)
    if len(dims) == 2 and dims[1] > 1:
        return "classes"
    if len(dims) == 3 and dims[2] > 1 and dims[1] > 0:
        return "sequence"
    if len(dims) == 4:
        channels = dims[3] if (layout or "NCHW").upper() == "NHWC" else dims[1]
        if channels > 1:
            return "dense"
    return "regression"


def _items(items: Sequence[str] | str | None) -> list[str]:
    """A repeated option's values, each split at commas, stripped, the empty ones left out."""
    chunks = [items] if isinstance(items, str) else list(items or ())
    return [item for item in (part.strip() for chunk in chunks for part in str(chunk).split(",")) if item]


def parse_output_kinds(items: Sequence[str] | str | None) -> dict[str, str] | None:
    """["boxes=regression", "seg=dense"] (or "boxes=regression,seg=dense") -> {"boxes": "regression", ...}.

    Each kind is checked (`check_kind`) and written in full: "regressors=anchors:palm" -> {"regressors":
    "detection:anchors:palm"}."""
    out: dict[str, str] = {}
    for item in _items(items):
        name, sep, kind = item.rpartition("=")
        if not sep or not name.strip():
            raise UsageError(f"--output-kind '{item}' is not of the form name=kind.",
                             hint=f"For example: --output-kind boxes=regression, output0=detection:yolov8 or "
                                  f"regressors=anchors:palm (kinds: {', '.join(KINDS)}).")
        out[name.strip()] = check_kind(kind.strip())
    return out or None


def parse_mask_thresholds(items: Sequence[str] | str | None) -> dict[str, float] | None:
    """["0.3"] -> {"*": 0.3} (every mask output); ["maps=0.3", "sal=0.5"] -> {"maps": 0.3, "sal": 0.5}.

    A named output is judged as a mask (as --output-kind name=mask) unless --output-kind says otherwise."""
    out: dict[str, float] = {}
    for item in _items(items):
        name, sep, value = item.rpartition("=")
        key = name.strip() if sep else "*"
        try:
            cut = float(value)
        except ValueError:
            cut = float("nan")
        if (sep and not key) or not 0.0 < cut < 1.0:
            raise UsageError(f"--mask-threshold '{item}' is not a threshold between 0 and 1 (or name=threshold).",
                             hint="For example: --mask-threshold 0.3 (every mask output) or --mask-threshold maps=0.3.")
        out[key] = cut
    return out or None


def asked_with_masks(asked: dict[str, str] | None, cuts: dict[str, float] | None) -> dict[str, str]:
    """--output-kind's kinds by output name, each output --mask-threshold names judged as a mask unless --output-kind
    says otherwise (validation and the int8 searches read the same)."""
    out = dict(asked or {})
    for name in cuts or {}:
        if name != "*":
            out.setdefault(name, "mask")
    return out


LANDMARK_DIMS = ("2", "3", "4", "5")  # landmarks:N, values per point (x, y first)


def parse_asked(value: str) -> tuple[str, str | None]:
    """"detection:yolov8" -> ("detection", "yolov8"); "detection:anchors:palm" -> ("detection", "anchors:palm");
    "landmarks:3" -> ("landmarks", "3"); "regression" -> ("regression", None). UsageError for a format the kind
    does not take (an unknown head, anchor preset or file; landmarks other than 2-5 values per point)."""
    kind, _, rest = value.partition(":")
    kind, fmt = kind.strip(), rest.strip() or None
    if kind in SHORTHANDS:
        kind, _, head = SHORTHANDS[kind].partition(":")
        fmt = f"{head}:{fmt}" if fmt else head
    if fmt is None:
        return kind, None
    if kind == "score":
        if fmt != "presence":
            raise UsageError(f"--output-kind '{value}': a score takes only ':presence' (the score that says whether "
                             "the landmarks are there: they are judged where the source's is at least 0.5).",
                             hint="For example: --output-kind Identity_1=presence.")
        return kind, fmt
    if kind == "landmarks":
        if fmt not in LANDMARK_DIMS:
            raise UsageError(f"--output-kind '{value}': landmarks take the values per point, 2 to 5 (x, y first).",
                             hint="For example: --output-kind Identity=landmarks or Identity=landmarks:3.")
        return kind, fmt
    if kind != "detection":
        raise UsageError(f"--output-kind '{value}': only the detection kind takes a head format (and landmarks the "
                         "values per point).",
                         hint=f"For example: --output-kind output0=detection:yolov8 or regressors=anchors:palm "
                              f"(formats: {', '.join(HEADS)}).")
    head, _, source = fmt.partition(":")
    if head not in HEADS:
        guess = suggest(head, HEADS)
        raise UsageError(f"Unknown detection head format '{head}'.",
                         hint=(f"did you mean '{guess}'? " if guess else "") + f"Formats: {', '.join(HEADS)}.")
    if source and head != "anchors":
        raise UsageError(f"--output-kind '{value}': only the anchors head takes a source of anchors.",
                         hint="For example: --output-kind regressors=anchors:palm.")
    if head == "anchors":
        from edgekit.fidelity.anchors import parse_source

        parse_source(source)
    return kind, fmt


def check_kind(kind: str) -> str:
    """KIND in full if it is one of KINDS (detection with an optional ":<head format>", anchors:<preset or file> for
    detection:anchors:..., landmarks:<values per point>), else UsageError with a did-you-mean."""
    if kind in KINDS:
        return kind
    base = kind.partition(":")[0].strip()
    if base in ("detection", "landmarks", "score") or base in SHORTHANDS:
        name, fmt = parse_asked(kind)
        return f"{name}:{fmt}" if fmt else name
    guess = suggest(base, (*KINDS, *SHORTHANDS))
    raise UsageError(f"Unknown output kind '{kind}'.",
                     hint=(f"did you mean '{guess}'? " if guess else "") + f"Kinds: {', '.join(KINDS)}; "
                     "anchors:<preset or file> for a raw-anchor detector (detection:anchors:...).")


__all__ = ["KINDS", "LANDMARK_DIMS", "SHORTHANDS", "THRESHOLDS", "asked_with_masks", "check_kind", "kind_of",
           "parse_asked", "parse_mask_thresholds", "parse_output_kinds", "thresholds"]
