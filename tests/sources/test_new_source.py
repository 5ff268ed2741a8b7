"""A source kind added from one file plus one SOURCES line is detected, probed, loaded and converted.

This is the promise of README "Extending edgekit" for sources: no detector, probe, pipeline or CLI
change is needed. The source lives in tests/sources/gz_onnx_source.py (a gzip-compressed ONNX).
Its damaged and oversized files are refused cleanly (exit 2, no traceback), in the probe's child
process as well as in this one.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_USAGE, UnsupportedModel
from edgekit.core.fsutil import sha256_file
from edgekit.sources import SOURCES, family_of
from edgekit.sources.detect import detect

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def gz_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SOURCES, "onnx-gz", "gz_onnx_source:SOURCE")  # the one registry line


@pytest.fixture(scope="module")
def onnx_gz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """model.onnx.gz: the bundled CNN exported to fp32 ONNX by edgekit, then gzip-compressed."""
    from edgekit.conversion.pipeline import convert

    out = tmp_path_factory.mktemp("export")
    convert(REPO / "models" / "mnist_cnn.pt2", "onnx", "fp32", calib="mnist", val_size=100, out=out / "o")
    assert [p.name for p in (out / "o").glob("*.onnx*")] == ["mnist_cnn.fp32.onnx"]  # one file: no external data
    gz = out / "model.onnx.gz"
    with open(out / "o" / "mnist_cnn.fp32.onnx", "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return gz


@pytest.mark.slow
def test_a_new_source_is_detected_probed_loaded_and_converted(gz_source: None, onnx_gz: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    import edgekit.sources.probe as probe_mod

    assert detect(onnx_gz) == "onnx-gz" and family_of("onnx-gz") == "onnx"

    # the probe's child process finds the source by its "module:attr", and really loads the file
    monkeypatch.setenv("EDGEKIT_CACHE_DIR", str(tmp_path / "cache"))
    probed: list[str] = []
    real = probe_mod._probe_in_child
    monkeypatch.setattr(probe_mod, "_probe_in_child", lambda p, k, o: (real(p, k, o), probed.append(k)))

    out = tmp_path / "o"
    rc = main(["convert", str(onnx_gz), "--target", "onnx,tflite", "--calib", "mnist", "--val-size", "200",
               "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    assert probed == ["onnx-gz"]
    manifest = json.loads((out / "manifest.json").read_text())
    source = manifest["source"]
    assert (source["kind"], source["path"], source["sha256"]) == ("onnx-gz", str(onnx_gz), sha256_file(onnx_gz))
    assert source["layout"] == "NCHW" and source["input"]["shape"][1:] == [1, 28, 28]
    arts = {(a["format"], a["precision"]): a for a in manifest["artifacts"]}
    assert set(arts) == {("onnx", "fp32"), ("tflite", "fp32")}
    for art in arts.values():
        assert art["fidelity"]["passed"] and art["fidelity"]["top1_agreement"] >= 0.99, art
        assert (out / art["path"]).is_file()


@pytest.mark.slow
def test_the_loader_owns_its_folder(gz_source: None, onnx_gz: Path) -> None:
    import gc

    from edgekit.sources import get_source
    from edgekit.sources.base import LoadOptions

    src = get_source("onnx-gz").load(onnx_gz, LoadOptions(), "onnx-gz")
    copy = src.path
    assert (src.family, src.kind, src.origin, src.describe().path) == ("onnx", "onnx-gz", onnx_gz, str(onnx_gz))
    assert copy.is_file() and copy.name == "model.onnx" and src.predict(
        __import__("numpy").zeros((2, 1, 28, 28), "float32")).shape == (2, 10)
    del src
    gc.collect()
    assert not copy.parent.exists()  # removed with the Source that held it


def _bomb(path: Path, size: int) -> Path:
    """A gzip whose first bytes look like ONNX and that decompresses to SIZE bytes (from a few KiB)."""
    with gzip.open(path, "wb") as f:
        f.write(b"\x08\x07")
        for _ in range(size // (1 << 20)):
            f.write(bytes(1 << 20))
    return path


@pytest.mark.parametrize("isolated", [True, False], ids=["in-the-probe-child", "in-process"])
def test_damaged_gzip_files_are_refused_cleanly(gz_source: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str], isolated: bool) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EDGEKIT_CACHE_DIR", str(tmp_path / "cache"))
    if not isolated:
        monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")
    whole = gzip.compress(b"\x08\x07" + bytes(range(256)) * 4000)
    (tmp_path / "truncated.onnx.gz").write_bytes(whole[: len(whole) // 2])  # the sniff's 16 bytes still read
    (tmp_path / "header.onnx.gz").write_bytes(b"\x1f\x8b" + bytes(range(64)))  # no valid gzip header
    crc = bytearray(whole)
    crc[-8] ^= 0xFF  # the stored CRC no longer matches
    (tmp_path / "crc.onnx.gz").write_bytes(bytes(crc))
    (tmp_path / "text.gz").write_bytes(gzip.compress(b"just some notes\n"))
    cases = {"truncated.onnx.gz": "cannot be decompressed", "header.onnx.gz": "cannot be decompressed",
             "crc.onnx.gz": "cannot be decompressed", "text.gz": "not a model file edgekit recognises"}
    for name, text in cases.items():
        rc = main(["convert", name, "--target", "onnx", "--out", "o"])
        err = capsys.readouterr().err
        assert rc == EXIT_USAGE and text in err and "Traceback" not in err, (name, err)
        assert not (tmp_path / "o").exists()


def test_a_gzip_bomb_is_stopped_at_the_cap(gz_source: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import gz_onnx_source

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")  # the cap is lowered in this process only
    monkeypatch.setattr(gz_onnx_source, "MAX_BYTES", 2 << 20)
    _bomb(tmp_path / "bomb.onnx.gz", 8 << 20)
    rc = main(["convert", "bomb.onnx.gz", "--target", "onnx", "--out", "o"])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE and "decompresses to more than 2 MiB" in err and "Traceback" not in err
    with pytest.raises(UnsupportedModel, match="gzip bomb"):
        gz_onnx_source.decompress(tmp_path / "bomb.onnx.gz", tmp_path / "out.onnx", limit=1 << 20)
    assert (tmp_path / "out.onnx").stat().st_size <= 1 << 20  # stopped at the cap, not after
