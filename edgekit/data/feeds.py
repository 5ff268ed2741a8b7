"""Named inputs and what a .npz carries besides samples: the data side of multi-input and dense models.

- A multi-input model is calibrated and validated from a .npz with one array per input NAME
  (np.savez("data.npz", image=..., prompt=...)), split into calibration and held-out samples by the
  one rule of edgekit.data.calibration (`split_indices`), the same indices for every input.
- Without --calib, random inputs per input (validation of non-int8 artifacts only, as for one input).
- A .npz may carry "masks": (N, H, W) integer class maps, the labels of a dense (segmentation) output;
  the held-out ones are taken with the same indices as the samples (mIoU in the fidelity record).
- A .npz may carry "boxes": (M, 6) float rows [image_index, class, x1, y1, x2, y2], the labelled boxes of a
  detector (corners in the pixels of the samples as stored, which must be at the model's input size; image_index
  counts the .npz's samples from 0): the held-out images' boxes give mAP50 and mAP50-95 in the fidelity record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgekit.core.border import vendor_errors
from edgekit.core.errors import UsageError
from edgekit.data.calibration import (
    _fit,
    _to_float,
    calibration_indices,
    npz_arrays,
    open_npz,
    random_samples,
    split_indices,
    validation_indices,
)

MASKS_KEY = "masks"
BOXES_KEY = "boxes"


@dataclass
class Feeds:
    """Calibration and held-out samples per input name (the source's names, in its input order)."""

    calibration: dict[str, np.ndarray] | None
    held_out: dict[str, np.ndarray]
    labels: np.ndarray | None
    name: str  # where they came from, for the manifest ("npz:data.npz [held-out: 25 of 100]", "random")


def _open_npz(spec: str) -> dict[str, np.ndarray]:
    path = Path(spec).expanduser()
    if not (path.is_file() and path.suffix.lower() == ".npz"):
        raise UsageError(f"A model with several inputs is calibrated from a .npz with one array per input; "
                         f"'{spec}' is not one.", hint="np.savez('data.npz', <input name>=samples, ...)")
    with vendor_errors("numpy", error=UsageError, what=f"Cannot read {spec}",
                       hint="Save it with np.savez(path, name=array, ...) (no pickled objects)."), \
            open_npz(path, spec) as z:
        return npz_arrays(z, spec)


def split_named(spec: str | None, inputs: Sequence[tuple[str, list[int], str]], layout: str, *, calib_size: int,
                val_size: int, batch: int, mean: Sequence[float] | None = None,
                std: Sequence[float] | None = None, val_spec: str | None = None) -> Feeds:
    """Calibration and held-out feeds for INPUTS ((name, shape, dtype), batch first) from a .npz SPEC, or random;
    with VAL_SPEC (--val) the held-out feeds come from that .npz and SPEC (if any) calibrates whole."""
    shapes = {n: [batch if d <= 0 else d for d in s] for n, s, _ in inputs}
    if not spec and not val_spec:
        per = {n: random_samples(s, min(val_size, 100), seed=i).x for i, (n, s) in enumerate(shapes.items())}
        return Feeds(None, per, None, "random")
    if val_spec:
        held, n_val = _named(val_spec, shapes, layout)
        val_idx = validation_indices(n_val, val_size)
        cal_part = None
        if spec:
            cal_arrays, n_cal = _named(spec, shapes, layout)
            cal_part = _part(cal_arrays, calibration_indices(n_cal, calib_size), shapes, layout, mean, std, spec)
        return Feeds(cal_part, _part(held, val_idx, shapes, layout, mean, std, val_spec), _labels(held, val_idx, n_val),
                     f"npz:{val_spec} [held-out, given apart: {len(val_idx)} of {n_val}]")
    assert spec is not None
    arrays, n = _named(spec, shapes, layout)
    if n < 2:
        raise UsageError(f"{spec} holds {n} sample(s); calibration and held-out validation need at least 2.",
                         hint="Add samples, or give the held-out ones apart with --val.")
    cal_idx, val_idx = split_indices(n, calib_size, val_size)
    return Feeds(_part(arrays, cal_idx, shapes, layout, mean, std, spec),
                 _part(arrays, val_idx, shapes, layout, mean, std, spec), _labels(arrays, val_idx, n),
                 f"npz:{spec} [held-out: {len(val_idx)} of {n}]")


def _named(spec: str, shapes: dict[str, list[int]], layout: str) -> tuple[dict[str, np.ndarray], int]:
    """The .npz SPEC's array per input name, fitted to its input, with their common sample count (labels kept)."""
    arrays = _open_npz(spec)
    missing = [n for n in shapes if n not in arrays]
    if missing:
        raise UsageError(f"{spec} has no array for input(s) {missing}; it holds {sorted(arrays)}.",
                         hint="Save one array per input name: np.savez('data.npz', " +
                              ", ".join(f"{n}=..." for n in shapes) + ")")
    fitted = {n: _fit(arrays[n], shapes[n], layout, f"npz:{spec}[{n}]") for n in shapes}
    counts = {n: len(a) for n, a in fitted.items()}
    if len(set(counts.values())) != 1:
        raise UsageError(f"The inputs in {spec} hold different numbers of samples: {counts}.",
                         hint="Give every input the same number of samples, sample i of each belonging together.")
    n = next(iter(counts.values()))
    if n < 1:
        raise UsageError(f"{spec} holds no samples.", hint="Save at least one sample per input.")
    if arrays.get("y") is not None:
        fitted["y"] = arrays["y"]
    return fitted, n


def _part(arrays: dict[str, np.ndarray], idx: np.ndarray, shapes: dict[str, list[int]], layout: str,
          mean: Sequence[float] | None, std: Sequence[float] | None, spec: str) -> dict[str, np.ndarray]:
    return {k: _to_float(arrays[k][idx], shapes[k], layout, mean, std, f"npz:{spec}[{k}]")[0] for k in shapes}


def _labels(arrays: dict[str, np.ndarray], idx: np.ndarray, n: int) -> np.ndarray | None:
    labels = arrays.get("y")
    return labels[idx].astype(np.int64) if labels is not None and labels.ndim == 1 and len(labels) == n else None


def _npz_carrying(spec: str | None, key: str) -> dict[str, np.ndarray] | None:
    """The arrays of the .npz SPEC where it holds KEY (its labels: masks or boxes); None for any other spec."""
    if not spec or str(spec).strip().lower() == "mnist" or not str(spec).lower().endswith(".npz"):
        return None
    arrays = _open_npz(spec)
    return arrays if arrays.get(key) is not None else None


def held_out_indices(n: int, calib_size: int, val_size: int, apart: bool) -> np.ndarray:
    """The held-out indices of N samples: a set given apart (--val, APART) or the split of `split_indices`."""
    return validation_indices(n, val_size) if apart else split_indices(n, calib_size, val_size)[1]


def held_out_masks(spec: str | None, calib_size: int, val_size: int, val_spec: str | None = None) -> np.ndarray | None:
    """The held-out label masks of a .npz that carries MASKS_KEY (same split as its samples), else None: VAL_SPEC's
    (--val) where given, else SPEC's."""
    spec = val_spec or spec
    arrays = _npz_carrying(spec, MASKS_KEY)
    if arrays is None:
        return None
    masks = arrays[MASKS_KEY]
    if masks.ndim != 3 or not np.issubdtype(masks.dtype, np.integer):
        raise UsageError(f"{spec}: '{MASKS_KEY}' must be (N, H, W) integer class indices, got {masks.dtype} "
                         f"{list(masks.shape)}.", hint="Save label masks as integers, one class index per pixel.")
    return masks[held_out_indices(len(masks), calib_size, val_size, bool(val_spec))]


def held_out_boxes(spec: str | None, calib_size: int, val_size: int, val_spec: str | None = None) -> np.ndarray | None:
    """The labelled boxes of the held-out samples of a .npz carrying BOXES_KEY (VAL_SPEC's where given, else SPEC's),
    image indices renumbered to the held-out order (edgekit.data.calibration's split), else None."""
    spec = val_spec or spec
    arrays = _npz_carrying(spec, BOXES_KEY)
    if arrays is None:
        return None
    boxes = arrays[BOXES_KEY]
    samples = arrays.get("x", next((a for k, a in arrays.items() if k not in (BOXES_KEY, MASKS_KEY, "y")), None))
    if boxes.ndim != 2 or boxes.shape[1] != 6 or not np.issubdtype(boxes.dtype, np.number) or samples is None:
        raise UsageError(f"{spec}: '{BOXES_KEY}' must be (M, 6) numbers [image_index, class, x1, y1, x2, y2], got "
                         f"{boxes.dtype} {list(boxes.shape)}.",
                         hint="One row per labelled box, corners in the pixels of the samples, beside an 'x' array.")
    boxes = boxes.astype(np.float64)
    index = np.rint(boxes[:, 0]).astype(np.int64)
    if not np.isfinite(boxes).all() or (index < 0).any() or (index >= len(samples)).any():
        raise UsageError(f"{spec}: '{BOXES_KEY}' has rows that are not finite or name an image outside the "
                         f"{len(samples)} samples.", hint="image_index counts the samples from 0.")
    val_idx = held_out_indices(len(samples), calib_size, val_size, bool(val_spec))
    position = {int(v): j for j, v in enumerate(val_idx)}
    keep = np.array([int(i) in position for i in index], dtype=bool)
    out = boxes[keep].copy()
    out[:, 0] = [position[int(i)] for i in index[keep]]
    return out


def by_keys(feeds: dict[str, np.ndarray], keys: Sequence[str], what: str) -> dict[str, np.ndarray]:
    """FEEDS (source input name -> samples) keyed by a converted model's input KEYS instead: each key takes the
    source input of its name (exactly, or once both are normalised), never one by position.

    onnx2tf and Keras keep the input names as SavedModel signature keys; a TFLite representative dataset
    yielding {key: batch} is then ordered by the calibrator itself (tensor by tensor), whatever order the
    converter gave the inputs.
    """
    from edgekit.core.errors import ConversionError
    from edgekit.fidelity.matching import normalized

    out: dict[str, np.ndarray] = {}
    for key in keys:
        same = [n for n in feeds if n == key] or [n for n in feeds if normalized(n) == normalized(key)]
        if len(same) != 1:
            raise ConversionError(f"{what} takes inputs {list(keys)}; '{key}' matches none of the source's inputs "
                                  f"{list(feeds)} by name, so its calibration samples are unknown.",
                                  hint="Keep the input names when exporting the model (they key the calibration).")
        out[key] = feeds[same[0]]
    return out


__all__ = ["BOXES_KEY", "MASKS_KEY", "Feeds", "by_keys", "held_out_boxes", "held_out_masks", "split_named"]
