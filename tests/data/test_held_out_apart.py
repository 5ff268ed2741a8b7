"""--val: a held-out set given apart from --calib (edgekit.data.calibration, edgekit.data.feeds, the options).

Photos augmented into several samples, or frames of one video, are near-duplicates: a random split of one folder puts
some of each on both sides, and validation then judges the artifact on what it was calibrated on. With --val the
user names the held-out set, --calib calibrates whole, and no sample of one is in the other.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.conversion.options import ConvertOptions
from edgekit.core.errors import UsageError
from edgekit.data import calibration as cal
from edgekit.data.feeds import held_out_boxes, held_out_masks, split_named


def _npz(path: Path, first: int, n: int, **extra: np.ndarray) -> str:
    """N samples whose every pixel holds its own number (FIRST, FIRST + 1, ...), so a sample says where it came from."""
    x = np.repeat(np.arange(first, first + n, dtype=np.float32), 3 * 4 * 4).reshape(n, 3, 4, 4)
    np.savez(path, x=x, y=np.arange(n) % 3, **extra)
    return str(path)


def _ids(x: np.ndarray) -> list[int]:
    return [int(v) for v in x[:, 0, 0, 0]]


def test_val_is_held_out_whole_and_calib_calibrates_whole(tmp_path: Path) -> None:
    calib, val = _npz(tmp_path / "c.npz", 0, 40), _npz(tmp_path / "v.npz", 1000, 12)
    c, v = cal.split_for_conversion(calib, [1, 3, 4, 4], "NCHW", calib_size=100, val_size=100, val_spec=val)
    assert c is not None and sorted(_ids(c.x)) == list(range(40))  # nothing of --calib is held back
    assert _ids(v.x) == list(range(1000, 1012))  # every --val sample, in its order, with its labels
    assert v.y is not None and v.y.tolist() == (np.arange(12) % 3).tolist()
    assert "given apart: 12 of 12" in v.name and "calibration: 40 of 40" in c.name
    c, v = cal.split_for_conversion(calib, [1, 3, 4, 4], "NCHW", calib_size=8, val_size=5, val_spec=val)
    assert c is not None and len(c.x) == 8 and _ids(v.x) == list(range(1000, 1005))
    # the same 8 as the usual split's first 8 of its fixed order: one rule for which samples calibrate
    assert _ids(c.x) == sorted(np.random.default_rng(cal.SPLIT_SEED).permutation(40)[:8].tolist())


def test_without_val_the_split_is_unchanged(tmp_path: Path) -> None:
    calib = _npz(tmp_path / "c.npz", 0, 40)
    c, v = cal.split_for_conversion(calib, [1, 3, 4, 4], "NCHW", calib_size=100, val_size=100)
    cal_idx, val_idx = cal.split_indices(40, 100, 100)
    assert c is not None and _ids(c.x) == cal_idx.tolist() and _ids(v.x) == val_idx.tolist()


def test_val_alone_validates_without_calibrating(tmp_path: Path) -> None:
    c, v = cal.split_for_conversion(None, [1, 3, 4, 4], "NCHW", val_spec=_npz(tmp_path / "v.npz", 7, 3))
    assert c is None and _ids(v.x) == [7, 8, 9]
    c, v = cal.split_for_conversion("mnist", [1, 1, 28, 28], "NCHW", calib_size=10, val_size=20, val_spec="mnist")
    assert c is not None and c.name == "mnist-train" and v.name == "mnist-test" and len(v.x) == 20


def test_a_model_with_several_inputs_takes_its_held_out_feeds_from_val(tmp_path: Path) -> None:
    inputs = [("a", [1, 2], "float32"), ("b", [1, 3], "float32")]
    np.savez(tmp_path / "c.npz", a=np.zeros((10, 2), np.float32), b=np.zeros((10, 3), np.float32))
    np.savez(tmp_path / "v.npz", a=np.ones((4, 2), np.float32), b=np.ones((4, 3), np.float32), y=np.arange(4))
    feeds = split_named(str(tmp_path / "c.npz"), inputs, "NCHW", calib_size=50, val_size=50, batch=1,
                        val_spec=str(tmp_path / "v.npz"))
    assert feeds.calibration is not None and len(feeds.calibration["a"]) == 10 and not feeds.calibration["b"].any()
    assert len(feeds.held_out["b"]) == 4 and feeds.held_out["b"].all() and feeds.labels.tolist() == [0, 1, 2, 3]
    assert "given apart: 4 of 4" in feeds.name
    np.savez(tmp_path / "short.npz", a=np.ones((4, 2), np.float32))
    with pytest.raises(UsageError, match=r"no array for input\(s\) \['b'\]"):
        split_named(str(tmp_path / "c.npz"), inputs, "NCHW", calib_size=5, val_size=5, batch=1,
                    val_spec=str(tmp_path / "short.npz"))


def test_labelled_masks_and_boxes_are_read_from_val(tmp_path: Path) -> None:
    boxes = np.array([[i, 0, i, i, i + 2, i + 2] for i in range(6)], dtype=np.float32)
    masks = np.arange(6, dtype=np.int64)[:, None, None] * np.ones((1, 4, 4), np.int64)
    calib = _npz(tmp_path / "c.npz", 0, 40)
    val = _npz(tmp_path / "v.npz", 100, 6, boxes=boxes, masks=masks)
    got = held_out_boxes(calib, 20, 4, val)
    assert got is not None and got[:, 0].tolist() == [0, 1, 2, 3] and got[:, 2].tolist() == [0, 1, 2, 3]
    m = held_out_masks(calib, 20, 4, val)
    assert m is not None and m[:, 0, 0].tolist() == [0, 1, 2, 3]
    assert held_out_boxes(calib, 20, 4) is None  # --calib carries none, and is not read for them


def test_val_naming_the_calibration_data_is_refused(tmp_path: Path) -> None:
    calib = _npz(tmp_path / "c.npz", 0, 10)
    same = ConvertOptions(calib=calib, val=str(tmp_path / "." / "c.npz"))
    with pytest.raises(UsageError, match="names the calibration data itself") as err:
        same.check()
    assert "leave it out" in (err.value.hint or "")
    ConvertOptions(calib="mnist", val="mnist").check()  # the bundled digits: train calibrates, test validates
    ConvertOptions(calib=calib, val=_npz(tmp_path / "v.npz", 0, 3)).check()


def test_missing_val_data_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="No such data"):
        cal.split_for_conversion(_npz(tmp_path / "c.npz", 0, 10), [1, 3, 4, 4], "NCHW",
                                 val_spec=str(tmp_path / "nowhere"))
