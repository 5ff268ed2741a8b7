"""edgekit.data.calibration: bundled MNIST split, image folders, .npy/.npz in both layouts, bad inputs."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from edgekit.core.errors import UsageError
from edgekit.data import calibration as cal

pytest.importorskip("mlxtend")
Image = pytest.importorskip("PIL.Image")
skdata = pytest.importorskip("skimage.data")


# ----------------------------------------------------------------------------- MNIST


def test_mnist_split_sizes_types_and_range():
    x_train, y_train, x_test, y_test = cal.mnist_split()
    assert x_train.shape == (4000, 28, 28) and x_test.shape == (1000, 28, 28)
    assert x_train.dtype == np.uint8 and x_test.dtype == np.uint8
    assert y_train.shape == (4000,) and y_test.shape == (1000,)
    assert y_train.dtype == np.int64 and y_test.dtype == np.int64
    assert x_train.max() == 255 and x_train.min() == 0
    # real digits: every class in both parts, ink on a dark background
    assert set(np.unique(y_train)) == set(range(10)) and set(np.unique(y_test)) == set(range(10))
    assert 0.05 < (x_test > 128).mean() < 0.3
    assert not x_train.flags.writeable  # the cache must not be changed by a caller


def test_mnist_split_is_disjoint_and_deterministic():
    x_train, _, x_test, y_test = cal.mnist_split()
    train_rows = {r.tobytes() for r in x_train}
    assert not any(r.tobytes() in train_rows for r in x_test)
    cal.mnist_split.cache_clear()
    again = cal.mnist_split()
    assert np.array_equal(again[2], x_test) and np.array_equal(again[3], y_test)


@pytest.mark.parametrize(
    ("shape", "layout", "expect"),
    [([1, 1, 28, 28], "NCHW", (5000, 1, 28, 28)), ([-1, 28, 28, 1], "NHWC", (5000, 28, 28, 1)),
     ([1, 784], "NCHW", (5000, 784)), ([1, 28, 28], "NCHW", (5000, 28, 28))],
)
def test_load_mnist_fits_the_input(shape, layout, expect):
    ds = cal.load_samples("mnist", shape, layout)
    assert ds.x.shape == expect and ds.x.dtype == np.float32
    assert ds.x.min() == 0.0 and ds.x.max() == 1.0
    x_train, y_train, x_test, y_test = cal.mnist_split()
    assert np.array_equal(ds.y, np.concatenate([y_train, y_test]))
    np.testing.assert_array_equal(ds.x[4000:].reshape(1000, 28, 28), x_test / np.float32(255))


def test_mnist_split_for_conversion():
    calib, val = cal.split_for_conversion("mnist", [1, 28, 28, 1], "NHWC")
    x_train, y_train, x_test, y_test = cal.mnist_split()
    assert (len(calib), len(val)) == (200, 1000)
    assert calib.name == "mnist-train" and val.name == "mnist-test"
    np.testing.assert_array_equal(calib.x[..., 0], x_train[:200] / np.float32(255))
    np.testing.assert_array_equal(val.x[..., 0], x_test / np.float32(255))
    assert np.array_equal(calib.y, y_train[:200]) and np.array_equal(val.y, y_test)
    small_c, small_v = cal.split_for_conversion("MNIST", [1, 1, 28, 28], "NCHW", calib_size=50, val_size=10)
    assert small_c.x.shape == (50, 1, 28, 28) and small_v.x.shape == (10, 1, 28, 28)
    big_c, big_v = cal.split_for_conversion("mnist", [1, 1, 28, 28], "NCHW", calib_size=10**6, val_size=10**6)
    assert (len(big_c), len(big_v)) == (4000, 1000)


def test_mean_std_per_channel_and_their_mistakes():
    raw = cal.load_samples("mnist", [1, 1, 28, 28], "NCHW").x
    ds = cal.load_samples("mnist", [1, 1, 28, 28], "NCHW", mean=[0.1307], std=[0.3081])
    np.testing.assert_allclose(ds.x, (raw - 0.1307) / 0.3081, rtol=1e-5, atol=1e-6)
    assert "mean=[0.1307]" in ds.preprocessing
    with pytest.raises(UsageError, match="2 values"):
        cal.load_samples("mnist", [1, 1, 28, 28], "NCHW", mean=[0.1, 0.2])
    with pytest.raises(UsageError, match="0-255"):
        cal.load_samples("mnist", [1, 1, 28, 28], "NCHW", mean=[33.3], std=[78.6])
    with pytest.raises(UsageError, match="positive"):
        cal.load_samples("mnist", [1, 1, 28, 28], "NCHW", std=[0.0])


def test_mnist_that_cannot_fit():
    with pytest.raises(UsageError, match=r"\[28, 28\].*\[1, 3, 224, 224\]"):
        cal.load_samples("mnist", [1, 3, 224, 224], "NCHW")


# ----------------------------------------------------------------------------- image folders


def _crops(n: int, size: int = 64) -> list[np.ndarray]:
    """N different real-photo crops (RGB uint8), half astronaut, half coffee."""
    photos = [skdata.astronaut(), skdata.coffee()]
    out = []
    for i in range(n):
        img = photos[i % 2]
        y, x = 40 * i % (img.shape[0] - size), 70 * i % (img.shape[1] - size)
        out.append(np.ascontiguousarray(img[y:y + size, x:x + size]))
    return out


def _write(path, arr, fmt="PNG"):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path, format=fmt)


def test_flat_folder_rgb_nchw_matches_pil(tmp_path):
    crops = _crops(5)
    for i, c in enumerate(crops):
        _write(tmp_path / f"img{i}.png", c)
    (tmp_path / "notes.txt").write_text("not an image")
    ds = cal.load_samples(str(tmp_path), [1, 3, 32, 24], "NCHW")
    assert ds.x.shape == (5, 3, 32, 24) and ds.x.dtype == np.float32 and ds.y is None
    assert ds.name == f"images:{tmp_path}"
    expect = np.asarray(Image.fromarray(crops[3]).resize((24, 32), Image.Resampling.BILINEAR)) / np.float32(255)
    np.testing.assert_allclose(ds.x[3], expect.transpose(2, 0, 1), atol=1e-7)
    assert ds.x.min() >= 0.0 and ds.x.max() <= 1.0 and ds.x.std() > 0.05
    again = cal.load_samples(str(tmp_path), [1, 3, 32, 24], "NCHW")
    assert np.array_equal(ds.x, again.x)


def test_folder_grayscale_nhwc_with_mean_std(tmp_path):
    for i, c in enumerate(_crops(3)):
        _write(tmp_path / f"{i}.bmp", c, "BMP")
    ds = cal.load_samples(str(tmp_path), [1, 16, 16, 1], "NHWC", mean=[0.5], std=[0.25])
    gray = np.asarray(Image.open(tmp_path / "0.bmp").convert("L").resize((16, 16), Image.Resampling.BILINEAR))
    np.testing.assert_allclose(ds.x[0, ..., 0], (gray / 255.0 - 0.5) / 0.25, rtol=1e-5, atol=1e-5)


def test_folder_rgb_per_channel_mean_std_nhwc(tmp_path):
    for i, c in enumerate(_crops(2)):
        _write(tmp_path / f"{i}.png", c)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    raw = cal.load_samples(str(tmp_path), [1, 20, 20, 3], "NHWC").x
    ds = cal.load_samples(str(tmp_path), [1, 20, 20, 3], "NHWC", mean=mean, std=std)
    np.testing.assert_allclose(ds.x, (raw - np.array(mean)) / np.array(std), rtol=1e-5, atol=1e-5)


def test_class_subfolders_give_sorted_labels(tmp_path):
    crops = _crops(7)
    layout = {"zebra": crops[:2], "apple": crops[2:5], "mango": crops[5:]}
    for cls, imgs in layout.items():
        for i, c in enumerate(imgs):
            _write(tmp_path / cls / f"{i}.png", c)
    ds = cal.load_samples(str(tmp_path), [1, 3, 8, 8], "NCHW")
    assert ds.y.tolist() == [0, 0, 0, 1, 1, 2, 2]  # apple, mango, zebra
    assert ds.y.dtype == np.int64
    calib, val = cal.split_for_conversion(str(tmp_path), [1, 3, 8, 8], "NCHW")
    assert (len(calib), len(val)) == (5, 2)  # round(7 / 4) = 2 held out
    assert sorted(calib.y.tolist() + val.y.tolist()) == ds.y.tolist()


def test_bad_folders(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match="holds no images"):
        cal.load_samples(str(empty), [1, 3, 8, 8], "NCHW")
    mixed = tmp_path / "mixed"
    _write(mixed / "a.png", _crops(1)[0])
    _write(mixed / "cls" / "b.png", _crops(1)[0])
    with pytest.raises(UsageError, match="mixes loose images"):
        cal.load_samples(str(mixed), [1, 3, 8, 8], "NCHW")
    hollow = tmp_path / "hollow"
    _write(hollow / "a" / "x.png", _crops(1)[0])
    (hollow / "b").mkdir()
    with pytest.raises(UsageError, match="Class subfolder"):
        cal.load_samples(str(hollow), [1, 3, 8, 8], "NCHW")
    broken = tmp_path / "broken"
    _write(broken / "ok.png", _crops(1)[0])
    (broken / "zz.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    with pytest.raises(UsageError, match="zz.png"):
        cal.load_samples(str(broken), [1, 3, 8, 8], "NCHW")
    with pytest.raises(UsageError, match="1 or 3 channels"):
        cal.load_samples(str(tmp_path / "mixed" / "cls"), [1, 4, 8, 8], "NCHW")
    with pytest.raises(UsageError, match="known size"):
        cal.load_samples(str(tmp_path / "mixed" / "cls"), [1, 3, -1, -1], "NCHW")


# ----------------------------------------------------------------------------- arrays


@pytest.fixture(scope="module")
def pixels() -> np.ndarray:
    """12 real RGB crops, uint8 NHWC (12, 10, 12, 3)."""
    return np.stack([np.asarray(Image.fromarray(c).resize((12, 10))) for c in _crops(12)])


def test_npy_uint8_in_the_other_layout(tmp_path, pixels):
    np.save(tmp_path / "x.npy", pixels)  # NHWC on disk
    ds = cal.load_samples(str(tmp_path / "x.npy"), [1, 3, 10, 12], "NCHW")
    assert ds.name == f"npy:{tmp_path / 'x.npy'}" and ds.y is None
    np.testing.assert_array_equal(ds.x, pixels.transpose(0, 3, 1, 2) / np.float32(255))


def test_npy_float_is_taken_as_preprocessed(tmp_path, pixels):
    x = (pixels.transpose(0, 3, 1, 2).astype(np.float32) - 100.0) / 50.0  # NCHW, already normalised
    np.save(tmp_path / "f.npy", x)
    ds = cal.load_samples(str(tmp_path / "f.npy"), [1, 10, 12, 3], "NHWC", mean=[0.5], std=[0.5])
    np.testing.assert_array_equal(ds.x, x.transpose(0, 2, 3, 1))
    assert ds.preprocessing.startswith("as given")


def test_npy_one_channel_without_channel_dim(tmp_path, pixels):
    gray = pixels[..., 0]
    np.save(tmp_path / "g.npy", gray)
    for shape, layout, axis in (([1, 1, 10, 12], "NCHW", 1), ([1, 10, 12, 1], "NHWC", 3)):
        ds = cal.load_samples(str(tmp_path / "g.npy"), shape, layout)
        np.testing.assert_array_equal(ds.x, np.expand_dims(gray, axis) / np.float32(255))


def test_npz_with_x_and_y_and_split(tmp_path, pixels):
    labels = np.arange(12) % 3
    np.savez(tmp_path / "d.npz", x=pixels, y=labels)
    ds = cal.load_samples(str(tmp_path / "d.npz"), [1, 10, 12, 3], "NHWC")
    assert np.array_equal(ds.y, labels) and ds.y.dtype == np.int64
    calib, val = cal.split_for_conversion(str(tmp_path / "d.npz"), [1, 3, 10, 12], "NCHW", calib_size=100)
    assert (len(calib), len(val)) == (9, 3)
    rows = {r.tobytes() for r in calib.x}
    assert not any(r.tobytes() in rows for r in val.x)  # disjoint
    assert "calibration: 9 of 12" in calib.name and "held-out: 3 of 12" in val.name
    again_c, again_v = cal.split_for_conversion(str(tmp_path / "d.npz"), [1, 3, 10, 12], "NCHW", calib_size=100)
    assert np.array_equal(calib.x, again_c.x) and np.array_equal(val.y, again_v.y)
    c2, v2 = cal.split_for_conversion(str(tmp_path / "d.npz"), [1, 3, 10, 12], "NCHW", calib_size=4, val_size=2)
    assert (len(c2), len(v2)) == (4, 2)


def test_npz_without_x_uses_first_array_and_int_labels(tmp_path, pixels):
    np.savez(tmp_path / "p.npz", pixels, np.arange(12))
    ds = cal.load_samples(str(tmp_path / "p.npz"), [1, 10, 12, 3], "NHWC")
    assert ds.y.tolist() == list(range(12))
    np.savez(tmp_path / "q.npz", pixels, np.ones((12, 2)))
    assert cal.load_samples(str(tmp_path / "q.npz"), [1, 10, 12, 3], "NHWC").y is None


def test_bad_arrays(tmp_path, pixels):
    np.save(tmp_path / "x.npy", pixels)
    with pytest.raises(UsageError, match=r"\[10, 12, 3\].*\[1, 3, 28, 28\]"):
        cal.load_samples(str(tmp_path / "x.npy"), [1, 3, 28, 28], "NCHW")
    np.save(tmp_path / "i.npy", pixels.astype(np.int64))
    with pytest.raises(UsageError, match="int64"):
        cal.load_samples(str(tmp_path / "i.npy"), [1, 10, 12, 3], "NHWC")
    bad = pixels.astype(np.float32)
    bad[0, 0, 0, 0] = np.nan
    np.save(tmp_path / "n.npy", bad)
    with pytest.raises(UsageError, match="NaN"):
        cal.load_samples(str(tmp_path / "n.npy"), [1, 10, 12, 3], "NHWC")
    np.savez(tmp_path / "y.npz", x=pixels, y=np.arange(5))
    with pytest.raises(UsageError, match="do not fit 12 samples"):
        cal.load_samples(str(tmp_path / "y.npz"), [1, 10, 12, 3], "NHWC")
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(UsageError, match="Cannot read"):
        cal.load_samples(str(tmp_path / "o.npy"), [1, 1], "NCHW")
    (tmp_path / "t.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(UsageError, match="Cannot read"):
        cal.load_samples(str(tmp_path / "t.npz"), [1, 1], "NCHW")
    np.save(tmp_path / "one.npy", pixels[:1])
    with pytest.raises(UsageError, match="at least 2"):
        cal.split_for_conversion(str(tmp_path / "one.npy"), [1, 10, 12, 3], "NHWC")
    two_c, two_v = cal.split_for_conversion(str(tmp_path / "x.npy"), [1, 10, 12, 3], "NHWC", calib_size=1)
    assert (len(two_c), len(two_v)) == (1, 3)


# ----------------------------------------------------------------------------- specs, random


def test_unknown_specs(tmp_path):
    with pytest.raises(UsageError) as exc:
        cal.load_samples("mnsit", [1, 1, 28, 28], "NCHW")
    assert "did you mean 'mnist'" in exc.value.hint
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(UsageError, match="not a data file"):
        cal.load_samples(str(tmp_path / "a.txt"), [1, 1, 28, 28], "NCHW")
    with pytest.raises(UsageError, match="Unknown layout"):
        cal.load_samples("mnist", [1, 1, 28, 28], "NCWH")
    with pytest.raises(UsageError, match=">= 1"):
        cal.split_for_conversion("mnist", [1, 1, 28, 28], "NCHW", calib_size=0)


def test_random_samples():
    ds = cal.random_samples([1, 3, 8, 8], 16, seed=3)
    assert ds.x.shape == (16, 3, 8, 8) and ds.x.dtype == np.float32 and ds.name == "random" and ds.y is None
    assert ds.x.min() >= 0.0 and ds.x.max() < 1.0 and abs(float(ds.x.mean()) - 0.5) < 0.05
    assert np.array_equal(ds.x, cal.random_samples([-1, 3, 8, 8], 16, seed=3).x)
    assert not np.array_equal(ds.x, cal.random_samples([1, 3, 8, 8], 16, seed=4).x)
    with pytest.raises(UsageError, match="static"):
        cal.random_samples([1, 3, -1, -1], 4)


def test_import_stays_light():
    heavy = "{'torch', 'tensorflow', 'PIL', 'mlxtend'}"
    code = f"import sys, edgekit.data.calibration; print(sorted({heavy} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
