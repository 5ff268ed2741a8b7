"""Raw-anchor detector heads (BlazeFace, BlazePalm, BlazePose's detector, SSD before its decode): anchors and decode.

MediaPipe's detectors end in two tensors: (1, A, 4 + 2K) regressors, a box and K keypoints relative to A SSD
anchors, and (1, A, C) score logits. The anchors are not in the model: MediaPipe's graph generates them
(SsdAnchorsCalculator) and decodes the regressors against them (TensorsToDetectionsCalculator) outside it. Judged
as tensors, the regressors look like a (N, T, C) sequence and say nothing a user reads; decoded here, in numpy, as
those two calculators do, the artifact's boxes and keypoints are compared with the source's (edgekit.fidelity.
detection).

- `ssd_anchors` follows mediapipe/calculators/tflite/ssd_anchors_calculator.cc (the non-multiscale generator: layers
  of the same stride merged, `reduce_boxes_in_lowest_layer`, `interpolated_scale_aspect_ratio`, `fixed_anchor_size`);
  rows are x_center, y_center, w, h in fractions of the input, the order the community's anchor files use.
- `decode_raw` follows TensorsToDetectionsCalculator::DecodeBoxes: x = raw / x_scale * anchor_w + anchor_x (the same
  for y, keypoints), w = raw / w_scale * anchor_w, sigmoid scores with clipping; `reverse_output_order` (x before y)
  is MediaPipe's order for these models.
- PRESETS: the anchor and decode options of MediaPipe's own graphs (face_detection_short_range.pbtxt,
  face_detection_full_range.pbtxt, palm_detection_cpu.pbtxt, pose_detection_cpu.pbtxt), by short name.
- Anchors may also come from a file: a .npy or .csv of (A, 4) rows x_center, y_center, w, h, or a .json / .pbtxt
  holding SsdAnchorsCalculatorOptions fields (`num_layers: 4`, `strides: 8` ...). Files are untrusted input: size
  limited, no pickle, every value checked.

Plain numpy: importing this module imports nothing heavy.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core.errors import UsageError
from edgekit.core.registry import suggest

MAX_FILE_BYTES = 16 * 1024 * 1024  # an anchors file larger than this is not one (2,254 anchors: 36 KB as .npy)
MAX_ANCHORS = 200_000
ANCHOR_FILES = (".npy", ".csv")
OPTION_FILES = (".json", ".pbtxt", ".txt")
NMS_IOU = 0.3  # MediaPipe's NonMaxSuppressionCalculator min_suppression_threshold in all four graphs


@dataclass(frozen=True)
class SsdAnchorOptions:
    """SsdAnchorsCalculatorOptions (mediapipe/calculators/tflite/ssd_anchors_calculator.proto), its defaults."""

    num_layers: int
    min_scale: float
    max_scale: float
    input_size_height: int
    input_size_width: int
    strides: tuple[int, ...] = ()
    aspect_ratios: tuple[float, ...] = (1.0,)
    anchor_offset_x: float = 0.5
    anchor_offset_y: float = 0.5
    reduce_boxes_in_lowest_layer: bool = False
    interpolated_scale_aspect_ratio: float = 1.0
    fixed_anchor_size: bool = False
    feature_map_height: tuple[int, ...] = ()
    feature_map_width: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "anchor options") -> SsdAnchorOptions:
        """Checked: unknown keys, wrong types, sizes that do not fit are UsageError naming WHERE."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(d) - set(known))
        if unknown:
            guess = suggest(unknown[0], known)
            raise UsageError(f"The {where} have fields SsdAnchorsCalculatorOptions does not: {unknown}.",
                             hint=(f"did you mean '{guess}'? " if guess else "") + f"Fields: {', '.join(known)} "
                             "(multiscale_anchor_generation is not read).")
        values: dict[str, Any] = {}
        for name, f in known.items():
            if name not in d:
                continue
            v = d[name]
            kind = str(f.type)
            try:
                if kind.startswith("tuple"):
                    items = v if isinstance(v, (list, tuple)) else [v]
                    cast = int if "int" in kind else float
                    values[name] = tuple(cast(x) for x in items if not isinstance(x, (bool, dict, list)))
                elif kind == "bool":
                    values[name] = v if isinstance(v, bool) else str(v).lower() == "true"
                elif isinstance(v, (bool, dict, list)):
                    raise ValueError(v)
                else:
                    values[name] = int(v) if kind == "int" else float(v)
            except (TypeError, ValueError):
                raise UsageError(f"The {where}: {name} is {v!r}, not a {kind}.") from None
        missing = [n for n in ("num_layers", "min_scale", "max_scale", "input_size_height", "input_size_width")
                   if n not in values]
        if missing:
            raise UsageError(f"The {where} lack {missing}.", hint="They are required to generate anchors, as "
                             "MediaPipe's SsdAnchorsCalculator requires them.")
        opts = cls(**values)
        opts.check(where)
        return opts

    def check(self, where: str = "anchor options") -> None:
        layers = self.num_layers
        sizes = (self.input_size_height, self.input_size_width)
        if not 1 <= layers <= 16 or not all(1 <= s <= 8192 for s in sizes):
            raise UsageError(f"The {where}: num_layers {layers} and input size {list(sizes)} are out of range.")
        if self.feature_map_height:
            if len(self.feature_map_height) != layers or len(self.feature_map_width) != layers:
                raise UsageError(f"The {where}: feature_map_height/width need one value per layer ({layers}).")
        elif len(self.strides) != layers or not all(1 <= s <= 8192 for s in self.strides):
            raise UsageError(f"The {where}: strides need one positive value per layer ({layers}), got "
                             f"{list(self.strides)}.")
        if not self.aspect_ratios or not all(0 < r < 100 for r in self.aspect_ratios):
            raise UsageError(f"The {where}: aspect_ratios must be positive, got {list(self.aspect_ratios)}.")


def _scale(lo: float, hi: float, index: int, count: int) -> float:
    return (lo + hi) * 0.5 if count == 1 else lo + (hi - lo) * index / (count - 1.0)


def ssd_anchors(o: SsdAnchorOptions) -> np.ndarray:
    """(A, 4) anchors x_center, y_center, w, h (fractions of the input), as SsdAnchorsCalculator generates them."""
    out: list[tuple[float, float, float, float]] = []
    n = len(o.strides)
    layer = 0
    while layer < o.num_layers:
        ratios: list[float] = []
        scales: list[float] = []
        last = layer
        while last < n and o.strides[last] == o.strides[layer]:  # layers of the same stride are merged
            scale = _scale(o.min_scale, o.max_scale, last, n)
            if last == 0 and o.reduce_boxes_in_lowest_layer:
                ratios += [1.0, 2.0, 0.5]
                scales += [0.1, scale, scale]
            else:
                ratios += list(o.aspect_ratios)
                scales += [scale] * len(o.aspect_ratios)
                if o.interpolated_scale_aspect_ratio > 0.0:
                    following = 1.0 if last == n - 1 else _scale(o.min_scale, o.max_scale, last + 1, n)
                    scales.append(math.sqrt(scale * following))
                    ratios.append(o.interpolated_scale_aspect_ratio)
            last += 1
        if o.feature_map_height:
            fh, fw = o.feature_map_height[layer], o.feature_map_width[layer]
        else:
            fh = math.ceil(o.input_size_height / o.strides[layer])
            fw = math.ceil(o.input_size_width / o.strides[layer])
        sizes = [(s * math.sqrt(r), s / math.sqrt(r)) for s, r in zip(scales, ratios, strict=True)]  # (w, h)
        for y in range(fh):
            for x in range(fw):
                cx, cy = (x + o.anchor_offset_x) / fw, (y + o.anchor_offset_y) / fh
                for w, h in sizes:
                    out.append((cx, cy, 1.0, 1.0) if o.fixed_anchor_size else (cx, cy, w, h))
        layer = max(last, layer + 1)
    return np.asarray(out, dtype=np.float64).reshape(-1, 4)


@dataclass(frozen=True)
class Preset:
    """A MediaPipe detector graph's anchor options and TensorsToDetections options (x_scale ... = the input size)."""

    name: str
    graph: str  # the .tflite it decodes
    options: SsdAnchorOptions
    keypoints: int
    min_score: float
    classes: int = 1

    @property
    def count(self) -> int:
        return len(preset_anchors(self.name))

    @property
    def coords(self) -> int:
        return 4 + 2 * self.keypoints

    def words(self) -> str:
        o = self.options
        return f"{self.name} ({self.graph}, {o.input_size_width}x{o.input_size_height}, {self.count} anchors)"


def _mp(size: int, layers: int, strides: tuple[int, ...], interpolated: float = 1.0) -> SsdAnchorOptions:
    return SsdAnchorOptions(num_layers=layers, min_scale=0.1484375, max_scale=0.75, input_size_height=size,
                            input_size_width=size, strides=strides, aspect_ratios=(1.0,), fixed_anchor_size=True,
                            interpolated_scale_aspect_ratio=interpolated)


# The options of MediaPipe's graphs (mediapipe/modules/*/...pbtxt): every one has 1.0 aspect ratio, fixed-size anchors
# and min/max scale 0.1484375/0.75; they differ in input size, strides and keypoints.
PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("face", "face_detection_short_range.tflite", _mp(128, 4, (8, 16, 16, 16)), keypoints=6, min_score=0.5),
    Preset("face-full", "face_detection_full_range.tflite", _mp(192, 1, (4,), interpolated=0.0), keypoints=6,
           min_score=0.6),
    Preset("palm", "palm_detection_full.tflite / palm_detection_lite.tflite", _mp(192, 4, (8, 16, 16, 16)),
           keypoints=7, min_score=0.5),
    Preset("pose", "pose_detection.tflite", _mp(224, 5, (8, 16, 32, 32, 32)), keypoints=4, min_score=0.5),
)}


@lru_cache(maxsize=16)
def preset_anchors(name: str) -> np.ndarray:
    return ssd_anchors(PRESETS[name].options)


def preset(name: str) -> Preset:
    """The preset NAME, or UsageError listing them (with a did-you-mean)."""
    if name in PRESETS:
        return PRESETS[name]
    guess = suggest(name, PRESETS)
    raise UsageError(f"Unknown anchor preset '{name}'.",
                     hint=(f"did you mean '{guess}'? " if guess else "") + "Presets: " +
                     "; ".join(p.words() for p in PRESETS.values()) + ". Or name a file: anchors:PATH.npy|.csv "
                     "((A, 4) rows x_center, y_center, w, h) or anchors:PATH.json|.pbtxt "
                     "(SsdAnchorsCalculatorOptions).")


def preset_for(count: int, coords: int | None = None) -> Preset | None:
    """The preset with COUNT anchors (and 4 + 2K == COORDS where given); None where none has."""
    return next((p for p in PRESETS.values() if p.count == count and coords in (None, p.coords)), None)


def _read_bytes(path: Path, what: str) -> bytes:
    if not path.is_file():
        raise UsageError(f"The {what} {path} does not exist or is not a file.",
                         hint="Give the path of the anchors as a .npy or .csv of (A, 4) rows x_center, y_center, w, h, "
                         "or of their SsdAnchorsCalculatorOptions as .pbtxt or .json; or a preset: "
                         f"{', '.join(PRESETS)}.")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise UsageError(f"The {what} {path} is {size:,} bytes, larger than an anchors file can be "
                         f"({MAX_FILE_BYTES:,}).")
    return path.read_bytes()


def anchors_from_file(path: str | Path) -> np.ndarray:
    """(A, 4) float anchors from a .npy (no pickle) or .csv file, checked: shape, count, finite, sizes >= 0."""
    p = Path(path)
    raw = _read_bytes(p, "anchors file")
    try:
        if p.suffix.lower() == ".npy":
            import io

            a = np.load(io.BytesIO(raw), allow_pickle=False)
        else:
            text = raw.decode("utf-8")
            rows = [r for r in (line.split("#")[0].strip() for line in text.splitlines()) if r]
            a = np.asarray([[float(v) for v in re.split(r"[,\s;]+", r) if v] for r in rows], dtype=np.float64)
    except (ValueError, UnicodeDecodeError, EOFError, OSError) as exc:
        raise UsageError(f"The anchors file {p} could not be read: {exc}.",
                         hint="A .npy of an (A, 4) float array (saved without pickle), or a .csv with one anchor "
                         "per line: x_center, y_center, w, h.") from None
    if not (isinstance(a, np.ndarray) and a.dtype.kind in "fiu" and a.ndim == 2 and a.shape[1] == 4
            and 1 <= len(a) <= MAX_ANCHORS):
        shape = list(a.shape) if isinstance(a, np.ndarray) else type(a).__name__
        raise UsageError(f"The anchors file {p} holds {shape}, not (A, 4) numbers with 1 <= A <= {MAX_ANCHORS:,}.",
                         hint="One row per anchor: x_center, y_center, w, h, in fractions of the input.")
    a = a.astype(np.float64)
    if not np.isfinite(a).all() or (a[:, 2:] < 0).any() or np.abs(a).max() > 1e4:
        raise UsageError(f"The anchors file {p} has values that are not anchors (NaN, inf, negative sizes or "
                         "values beyond 1e4).")
    return a


def options_from_file(path: str | Path) -> SsdAnchorOptions:
    """SsdAnchorsCalculatorOptions from a .json object or the `key: value` lines of a .pbtxt block."""
    p = Path(path)
    try:
        text = _read_bytes(p, "anchor options file").decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"The anchor options file {p} is not UTF-8 text.") from None
    d: dict[str, Any] = {}
    if p.suffix.lower() == ".json":
        try:
            d = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"The anchor options file {p} is not JSON: {exc}.") from None
        if not isinstance(d, dict):
            raise UsageError(f"The anchor options file {p} holds a {type(d).__name__}, not an object of "
                             "SsdAnchorsCalculatorOptions fields.")
    else:  # text format: `name: value` lines; a repeated name (strides: 8 / strides: 16) is a list
        repeated = {f.name for f in fields(SsdAnchorOptions) if str(f.type).startswith("tuple")}
        for line in text.splitlines():
            m = re.match(r"^\s*([a-z_]+)\s*:\s*([-+0-9.eE]+|true|false)\s*(#.*)?$", line)
            if m:
                key, value = m.group(1), m.group(2)
                if key in repeated:
                    d.setdefault(key, []).append(value)
                else:
                    d[key] = value
        if not d:
            raise UsageError(f"The anchor options file {p} has no `name: value` lines.",
                             hint="Paste the SsdAnchorsCalculatorOptions block of the graph: num_layers: 4, "
                             "min_scale: 0.1484375, ..., strides: 8 (one line per stride).")
    return SsdAnchorOptions.from_dict(d, where=f"anchor options in {p}")


def parse_source(text: str) -> dict[str, Any]:
    """What follows "anchors:" in an --output-kind: a preset name, or a file; the head record's anchor source.

    "palm" -> {"preset": "palm"}; "a.npy" -> {"file": "/abs/a.npy", "sha256": ...}; "opts.pbtxt" -> {"options":
    {...}}; "" -> {} (the preset is found by the anchor count). UsageError for an unknown preset or a bad file."""
    text = text.strip()
    if not text:
        return {}
    suffix = Path(text).suffix.lower()
    if suffix in ANCHOR_FILES:
        path = Path(text).expanduser().resolve()
        anchors_from_file(path)
        return {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    if suffix in OPTION_FILES:
        return {"options": options_from_file(Path(text).expanduser()).to_dict()}
    if "/" in text or "\\" in text or suffix:
        raise UsageError(f"The anchors '{text}' are neither a preset nor a file edgekit reads.",
                         hint=f"Anchor files: {', '.join(ANCHOR_FILES)} ((A, 4) anchors) or "
                         f"{', '.join(OPTION_FILES)} (SsdAnchorsCalculatorOptions); presets: {', '.join(PRESETS)}.")
    preset(text)
    return {"preset": text}


@dataclass(frozen=True)
class AnchorHead:
    """How a raw-anchor head is decoded (a Head's `anchors` record): the anchors' source, TensorsToDetections'
    options, the input size the fractions are of."""

    source: dict[str, Any]  # {"preset": name} | {"file": path, "sha256": hex} | {"options": SsdAnchorOptions dict}
    input_size: tuple[int, int]  # (height, width) in pixels
    scale: tuple[float, float, float, float]  # x_scale, y_scale, w_scale, h_scale
    xy_first: bool = True  # reverse_output_order: x, y, w, h (MediaPipe's detectors) rather than y, x, h, w
    sigmoid: bool = True
    clip: float = 100.0  # score_clipping_thresh
    count: int = 0  # anchors

    def to_dict(self) -> dict[str, Any]:
        return {**self.source, "input_size": list(self.input_size), "scale": list(self.scale),
                "xy_first": self.xy_first, "sigmoid": self.sigmoid, "clip": self.clip, "count": self.count}

    @classmethod
    def from_dict(cls, d: Any) -> AnchorHead:
        """From a head record (a manifest is hostile input: ValueError / TypeError where it is not one)."""
        if not isinstance(d, dict):
            raise TypeError("an anchor head record is a dict")
        source = {k: d[k] for k in ("preset", "file", "sha256", "options") if k in d}
        if "preset" in source and source["preset"] not in PRESETS:
            raise ValueError(f"unknown anchor preset {source['preset']!r}")
        if "file" in source and not isinstance(source["file"], str):
            raise TypeError("an anchors file is a path")
        if "options" in source:
            if not isinstance(source["options"], dict):
                raise TypeError("anchor options are a dict")
            try:
                SsdAnchorOptions.from_dict(source["options"])
            except UsageError as exc:
                raise ValueError(exc.message) from None
        size = tuple(int(v) for v in d.get("input_size") or ())
        scale = tuple(float(v) for v in d.get("scale") or ())
        if len(size) != 2 or len(scale) != 4 or min(size) < 1 or not all(s > 0 and math.isfinite(s) for s in scale):
            raise ValueError("an anchor head record needs input_size [h, w] and scale [x, y, w, h]")
        return cls(source, (size[0], size[1]), (scale[0], scale[1], scale[2], scale[3]),
                   bool(d.get("xy_first", True)), bool(d.get("sigmoid", True)), float(d.get("clip", 100.0)),
                   int(d.get("count") or 0))

    def anchors(self) -> np.ndarray:
        """The (A, 4) anchors: the preset's, the options', or the file's (whose sha256 must still be the one
        recorded: a file changed since conversion decodes other boxes)."""
        if "preset" in self.source:
            return preset_anchors(str(self.source["preset"]))
        if "options" in self.source:
            return _options_anchors(json.dumps(self.source["options"], sort_keys=True))
        if "file" in self.source:
            return _file_anchors(str(self.source["file"]), str(self.source.get("sha256") or ""))
        raise ValueError("an anchor head record names no preset, options or file")


@lru_cache(maxsize=8)
def _options_anchors(options_json: str) -> np.ndarray:
    return ssd_anchors(SsdAnchorOptions.from_dict(json.loads(options_json)))


@lru_cache(maxsize=8)
def _file_anchors(path: str, sha256: str) -> np.ndarray:
    raw = _read_bytes(Path(path), "anchors file")
    if sha256 and hashlib.sha256(raw).hexdigest() != sha256:
        raise UsageError(f"The anchors file {path} changed since the head was recorded (sha256 differs).",
                         hint="Convert again with the anchors the model was trained with.")
    return anchors_from_file(path)


def anchor_head(source: dict[str, Any], count: int, coords: int, input_size: tuple[int, int] | None) -> tuple[
        AnchorHead, int, float]:
    """(the AnchorHead, its keypoints, its score cut) for an (A, COORDS) regressor with COUNT anchors from SOURCE
    ({} : the preset with COUNT anchors). UsageError where the anchors do not fit the output."""
    if not source:
        found = preset_for(count)
        if found is None:
            raise UsageError(f"No anchor preset has {count} anchors.",
                             hint="Presets: " + "; ".join(p.words() for p in PRESETS.values()) + ". Name the anchors "
                             "the model was trained with: --output-kind NAME=anchors:PATH.npy (or .csv, .json, "
                             ".pbtxt).")
        source = {"preset": found.name}
    if "preset" in source:
        p = preset(str(source["preset"]))
        o = p.options
        size = (o.input_size_height, o.input_size_width)
        head = AnchorHead(dict(source), size, (size[1], size[0], size[1], size[0]), count=p.count)
        keypoints, cut = p.keypoints, p.min_score
    else:
        if "options" in source:
            o = SsdAnchorOptions.from_dict(source["options"])
            size = (o.input_size_height, o.input_size_width)
        elif input_size is None:
            raise UsageError("An anchors file decodes boxes against the input's size, and this model's input is not "
                             "an image whose size edgekit knows.",
                             hint="Give the anchors as SsdAnchorsCalculatorOptions (.json / .pbtxt with "
                             "input_size_height and input_size_width).")
        else:
            size = (int(input_size[0]), int(input_size[1]))
        head = AnchorHead(dict(source), size, (size[1], size[0], size[1], size[0]))
        head = AnchorHead(head.source, head.input_size, head.scale, count=len(head.anchors()))
        keypoints, cut = max((coords - 4) // 2, 0), 0.5
    if head.count != count:
        raise UsageError(f"The anchors ({_source_words(source)}) are {head.count}, and the output has {count}.",
                         hint="Name the anchors of this model: presets " +
                         "; ".join(p.words() for p in PRESETS.values()) + ", or a file.")
    if coords < 4 + 2 * keypoints:
        raise UsageError(f"The output has {coords} values per anchor; the {_source_words(source)} head reads "
                         f"{4 + 2 * keypoints} (a box and {keypoints} keypoints).")
    return head, keypoints, cut


def _source_words(source: dict[str, Any]) -> str:
    if "preset" in source:
        return f"preset '{source['preset']}'"
    return f"file {source['file']}" if "file" in source else "options given"


def decode_raw(regressors: np.ndarray, scores: np.ndarray, anchors: np.ndarray, head: AnchorHead, keypoints: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One image's (A, D) REGRESSORS and (A, C) SCORES decoded against (A, 4) ANCHORS, as MediaPipe's
    TensorsToDetectionsCalculator does: (A, 4) corner boxes x1, y1, x2, y2 and (A, K, 2) keypoints x, y in fractions of
    the input, (A,) scores (sigmoid of the clipped logits), (A,) classes. Boxes with a negative size get score 0 (the
    calculator drops them)."""
    r = regressors.reshape(len(anchors), -1)
    ax, ay, aw, ah = anchors[:, 0], anchors[:, 1], anchors[:, 2], anchors[:, 3]
    sx, sy, sw, sh = head.scale
    i, j = (0, 1) if head.xy_first else (1, 0)  # which column holds x, which y (YXHW: y first)
    cx = r[:, i] / sx * aw + ax
    cy = r[:, j] / sy * ah + ay
    w = r[:, 2 + i] / sw * aw
    h = r[:, 2 + j] / sh * ah
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    kp = r[:, 4:4 + 2 * keypoints].reshape(len(r), keypoints, 2)
    kps = np.stack([kp[..., i] / sx * aw[:, None] + ax[:, None], kp[..., j] / sy * ah[:, None] + ay[:, None]], axis=-1)
    s = scores.reshape(len(anchors), -1)
    if head.sigmoid:
        s = 1.0 / (1.0 + np.exp(-np.clip(s, -head.clip, head.clip)))
    conf, cls = s.max(axis=1), s.argmax(axis=1)
    conf = np.where((w >= 0) & (h >= 0), conf, 0.0)
    return boxes, kps, conf, cls


__all__ = ["ANCHOR_FILES", "NMS_IOU", "OPTION_FILES", "PRESETS", "AnchorHead", "Preset", "SsdAnchorOptions",
           "anchor_head", "anchors_from_file", "decode_raw", "options_from_file", "parse_source", "preset",
           "preset_anchors", "preset_for", "ssd_anchors"]
