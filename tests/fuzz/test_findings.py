"""What bench/fuzz.py found, kept as regression tests: each case here once ended in a traceback.

Each test builds the smallest input that showed the finding (from the real seed where the
finding needed one) and asserts the clean answer edgekit now gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgekit.core.errors import UsageError
from edgekit.testing.fuzz_seeds import deflate_bomb_png, header_bomb_png

SEEDS = Path(__file__).resolve().parent / "seeds"


def _manifest() -> dict:
    return json.loads((SEEDS / "manifest.json").read_text())


@pytest.mark.parametrize(("edit", "words"), [
    (lambda d: "[" * 200_000 + json.dumps(d) + "]" * 200_000, "nested too deeply"),  # RecursionError
    (lambda d: d["artifacts"][0]["inputs"][0].update(shape=["\u00ce`"]) or d, "not a valid edgekit manifest"),
    (lambda d: d.update(artifacts=[1, "x"]) or d, "not a valid edgekit manifest"),  # AttributeError
])
def test_a_damaged_manifest_is_bad_input(tmp_path: Path, edit, words: str) -> None:
    from edgekit.core.artifact import Manifest

    doc = edit(_manifest())
    path = tmp_path / "manifest.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    with pytest.raises(UsageError, match=words):
        Manifest.read(path)


def test_a_fidelity_record_without_samples_is_read_by_every_reader(tmp_path: Path) -> None:
    """Once a TypeError in Manifest.read while check accepted it: now one reader, one answer (samples 0, unknown)."""
    from edgekit.check.snapshot import from_folder
    from edgekit.core.artifact import Manifest

    doc = _manifest()
    doc["artifacts"][0]["fidelity"].pop("samples")
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    art = Manifest.read(tmp_path).artifacts[0]
    assert art.fidelity is not None and art.fidelity.samples == 0
    assert art.fidelity.top1_agreement == doc["artifacts"][0]["fidelity"]["top1_agreement"]
    facts = from_folder(tmp_path, inspect=False).snapshot.artifacts[0]
    assert facts.top1_agreement == art.fidelity.top1_agreement


def test_a_bench_report_with_a_strange_schema_version_is_bad_input() -> None:
    from edgekit.measure.bench_report import BenchReport

    doc = json.loads((SEEDS / "bench.json").read_text())
    doc["schema_version"] = {"v": 1}  # int(dict): a TypeError traceback
    with pytest.raises(UsageError, match="schema_version"):
        BenchReport.from_dict(doc)


def test_the_server_answers_an_image_bomb_with_413() -> None:
    pytest.importorskip("PIL")
    pytest.importorskip("edgekit.serve.image")
    from edgekit.core.artifact import TensorSpec
    from edgekit.serve.errors import RequestError
    from edgekit.serve.image import image_input

    spec = TensorSpec(name="x", shape=[1, 1, 28, 28], dtype="float32", layout="NCHW")
    with pytest.raises(RequestError) as exc:  # Pillow's DecompressionBombError escaped as a traceback
        image_input(header_bomb_png(), spec, None, max_pixels=24_000_000)
    assert exc.value.status == 413


def test_calibration_refuses_a_bomb_from_its_header(tmp_path: Path) -> None:
    """100 MP of zeros in 100 KB: Pillow only warns below 179 MP, and edgekit decoded it for one sample."""
    pytest.importorskip("PIL")
    from edgekit.data.calibration import load_samples

    folder = tmp_path / "imgs"
    folder.mkdir()
    (folder / "ok.png").write_bytes((SEEDS / "digit.png").read_bytes())
    (folder / "bomb.png").write_bytes(deflate_bomb_png())
    with pytest.raises(UsageError, match="decompression bomb"):
        load_samples(str(folder), [1, 1, 28, 28], "NCHW")


def test_a_tflite_whose_inputs_name_a_missing_tensor_is_refused(tmp_path: Path) -> None:
    """One flipped bit (0x80 at byte 227,074 of the bundled int8 model) makes the subgraph's input index
    point past the tensor list: inspect ended in an IndexError."""
    from edgekit.core.errors import UnsupportedModel
    from edgekit.inspect import inspect_model

    data = bytearray((SEEDS / "mnist_cnn.int8.tflite").read_bytes())
    data[227_074] ^= 0x80
    (tmp_path / "m.tflite").write_bytes(bytes(data))
    with pytest.raises(UnsupportedModel, match="does not define"):
        inspect_model(tmp_path / "m.tflite")


def test_an_image_that_does_not_fit_in_memory_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bench/fuzz.py's workers run under an address-space limit: a 95-byte PNG made Pillow's decoder
    raise MemoryError, which escaped calibration as a traceback."""
    pytest.importorskip("PIL")
    from PIL import Image

    from edgekit.data.calibration import load_samples

    def out_of_memory(*_a: object, **_k: object) -> None:
        raise MemoryError

    (tmp_path / "a.png").write_bytes((SEEDS / "digit.png").read_bytes())
    monkeypatch.setattr(Image.Image, "convert", out_of_memory)
    with pytest.raises(UsageError, match="does not fit in memory"):
        load_samples(str(tmp_path), [1, 1, 28, 28], "NCHW")


@pytest.mark.parametrize("where", ["inputs", "outputs"])
def test_a_request_naming_a_tensor_by_an_object_is_a_400(where: str) -> None:
    """{"outputs": [{"name": {...}}]} made `name in names` raise TypeError (unhashable) in the server."""
    pytest.importorskip("edgekit.serve.protocol")
    from edgekit.core.artifact import TensorSpec
    from edgekit.serve.errors import RequestError
    from edgekit.serve.protocol import parse_infer
    from edgekit.serve.tensors import wire_tensors

    spec = TensorSpec(name="x", shape=[1, 4], dtype="float32")
    doc = {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [0, 1, 2, 3]}],
           "outputs": [{"name": "y"}]}
    doc[where][0]["name"] = {"a": 1}
    with pytest.raises(RequestError) as exc:
        parse_infer(json.dumps(doc).encode(), None, wire_tensors([spec]),
                    wire_tensors([TensorSpec(name="y", shape=[1, 2], dtype="float32")]))
    assert exc.value.status == 400 and exc.value.field == f"{where}[0].name"


def test_an_npz_member_that_is_not_an_array_is_bad_input(tmp_path: Path) -> None:
    """A flipped bit in a member's name ('y.npy' -> 'y.np?') makes numpy hand back raw bytes for it: the
    named-input reader (edgekit.data.feeds) died on `bytes.ndim`."""
    import io
    import zipfile

    import numpy as np

    from edgekit.data.calibration import load_samples
    from edgekit.data.feeds import split_named

    buf = io.BytesIO()
    np.save(buf, np.zeros((4, 28, 28), np.uint8))
    path = tmp_path / "data.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x.npy", buf.getvalue())
        z.writestr("y", b"not an array")
    with pytest.raises(UsageError, match="not a .npy array"):
        split_named(str(path), [("x", [1, 1, 28, 28], "float32")], "NCHW", calib_size=2, val_size=2, batch=1)
    with pytest.raises(UsageError, match="not a .npy array"):
        load_samples(str(path), [1, 1, 28, 28], "NCHW")


def test_an_npy_under_an_npz_name_is_bad_input(tmp_path: Path) -> None:
    """np.load returns an array, not an archive, for a .npy renamed .npz: `with ... as z` was an InternalError."""
    import numpy as np

    from edgekit.data.calibration import load_samples
    from edgekit.data.feeds import split_named

    path = tmp_path / "data.npz"
    with open(path, "wb") as f:
        np.save(f, np.zeros((4, 28, 28), np.uint8))
    with pytest.raises(UsageError, match="single .npy array"):
        split_named(str(path), [("x", [1, 1, 28, 28], "float32")], "NCHW", calib_size=2, val_size=2, batch=1)
    with pytest.raises(UsageError, match="single .npy array"):
        load_samples(str(path), [1, 1, 28, 28], "NCHW")


def test_an_infinite_figure_in_a_bench_report_is_bad_input() -> None:
    from edgekit.measure.bench_report import BenchReport

    doc = json.loads((SEEDS / "bench.json").read_text())
    doc["results"][0]["schema_version"] = float("inf")  # int(inf) in ProfileResult.from_dict: OverflowError
    with pytest.raises(UsageError):
        BenchReport.from_dict(doc)
