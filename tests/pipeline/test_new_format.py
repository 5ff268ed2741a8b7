"""A new artifact format is its own files plus one format record and one target record: README "Extending edgekit".

tests/pipeline/wpk_format.py brings weightpack's `.wpk` (a library edgekit does not use: tests/pipeline/weightpack_lib,
installed for the test by putting it on the path with its dist-info) as a target, a format and a runtime. The test
registers its two records (TARGETS, FORMATS) and nothing else, then runs the product on it: convert (fp32, and int8
weights), validated; the manifest records the library's version; detect_format, profile, bench, serve's choice and
platform, check against a baseline, export (which says Triton has no backend for it); the library's own error
reaches the user named; a missing library's install line names the extra its record gives.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.formats import FORMATS
from edgekit.targets import TARGETS

REPO = Path(__file__).resolve().parents[2]
LIBRARY = Path(__file__).resolve().parent / "weightpack_lib"


@pytest.fixture()
def wpk_records(monkeypatch: pytest.MonkeyPatch) -> None:
    from wpk_format import FORMAT

    monkeypatch.setitem(TARGETS, "wpk", "wpk_format:TARGET")  # the two records
    monkeypatch.setitem(FORMATS, "wpk", FORMAT)


@pytest.fixture()
def weightpack_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The library on the path of this process and of the children edgekit starts, with its dist-info."""
    monkeypatch.syspath_prepend(str(LIBRARY))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(LIBRARY), str(LIBRARY.parent),
                                                                    os.environ.get("PYTHONPATH")])))


def test_the_records_say_how_its_library_is_installed(wpk_records: None, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from edgekit.core._deps import install_line
    from edgekit.core.border import find_vendor
    from edgekit.emulate.userland import device_extras
    from edgekit.runtimes import runtime_for_format
    from edgekit.serve.served import platform

    assert install_line("weightpack") == "pip install 'edgekit[weightpack]'  (or just: pip install 'weightpack==0.3')"
    assert find_vendor("weightpack").label == "weightpack" and platform("wpk") == "weightpack_wpk"
    assert runtime_for_format("wpk").name == "weightpack"
    assert device_extras()[-1] == "weightpack"  # the emulated Pi's userland installs it (its Vendor says arm64)
    from edgekit.testing import tiny_cnn

    assert tiny_cnn.kinds()["wpk-fp32"] == ("wpk", "fp32", "NCHW")  # its tiny CNN, named by its record
    assert tiny_cnn.build(tmp_path / "tiny", formats=["wpk"])["skipped"] == {"wpk": "weightpack is not installed"}
    from test_docs_lists import missing  # tests/test_docs_lists.py: the docs' hand-written lists against the records

    lacking = [(place.doc, place.start or place.what, names) for place, names in missing()]  # what docs must say
    assert lacking == [("README.md", "Every artifact it writes (", ["wpk"]),
                       ("README.md", "| `edgekit convert` |", ["wpk"]),
                       ("README.md", "the extras of the formats' libraries (## Install)", ["weightpack"]),
                       ("docs/index.md", "| `edgekit convert` |", ["wpk"]),
                       ("docs/convert.md", "the targets (## Targets and precisions)", ["wpk"]),
                       ("docs/profile.md", "| `--runtime` |", ["weightpack"]),
                       ("docs/profile.md", "| `format` |", ["wpk"]),
                       ("docs/serve.md", "PATH is an artifact (", ["wpk"])], lacking
    with pytest.raises(ImportError):
        import weightpack  # noqa: F401 - not installed in this test: the pipeline's check names the extra

    rc = main(["convert", str(REPO / "models" / "mnist_cnn.pt2"), "--target", "wpk", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc != 0 and "needs weightpack" in err and "edgekit[weightpack]" in err, err
    assert not (tmp_path / "o").exists()  # refused before anything is loaded or written


@pytest.mark.slow
def test_its_tiny_model_keeps_the_runtime_contract(wpk_records: None, weightpack_installed: None,
                                                   tmp_path: Path) -> None:
    """The runtimes' conformance suite runs every tiny model the records name (tests/runtimes): weightpack's, written
    by its record's writer from the tiny ONNX, keeps the same contract."""
    from edgekit.runtimes import get_runtime
    from edgekit.testing import tiny_cnn
    from edgekit.testing.runtime_contract import check_contract

    index = tiny_cnn.build(tmp_path, formats=["onnx", "wpk"])
    assert set(index["models"]) == {"onnx", "wpk-fp32"}, index["skipped"]
    rt = get_runtime("weightpack")()
    rt.load(index["models"]["wpk-fp32"])
    x = tiny_cnn.sample_inputs(8)
    check_contract(rt, "fp32", "float32", "cpu", x, tiny_cnn.forward(x))
    rt.close()


@pytest.mark.slow
def test_a_new_format_converts_quantizes_profiles_benches_serves_and_is_checked(
        wpk_records: None, weightpack_installed: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    rc = main(["convert", str(REPO / "models" / "mnist_cnn.pt2"), "--target", "wpk,onnx", "--quantize",
               "fp32,dynamic", "--calib", "mnist", "--val-size", "100", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tool_versions"]["weightpack"] == "0.3"  # its record's library, recorded with no other line
    arts = {a["path"]: a for a in manifest["artifacts"]}
    for precision in ("fp32", "dynamic"):
        art = arts[f"mnist_cnn.{precision}.wpk"]
        assert art["format"] == "wpk" and art["fidelity"]["passed"], art["fidelity"]
    assert arts["mnist_cnn.fp32.wpk"]["fidelity"]["top1_agreement"] == 1.0
    assert arts["mnist_cnn.dynamic.wpk"]["size_bytes"] < arts["mnist_cnn.fp32.wpk"]["size_bytes"] / 2  # int8 weights

    from edgekit.runtimes import detect_format

    wpk = out / "mnist_cnn.dynamic.wpk"
    assert detect_format(wpk) == "wpk"
    capsys.readouterr()
    rc = main(["profile", str(wpk), "--json", "--runs", "3", "--min-seconds", "0", "--warmup", "1"])
    result = json.loads(capsys.readouterr().out)
    assert rc == 0 and result["runtime"]["name"] == "weightpack" and result["artifact"]["sha256"] == \
        arts["mnist_cnn.dynamic.wpk"]["sha256"]

    rc = main(["bench", str(out), "--json", "--in-process", "--no-source", "--runs", "3", "--min-seconds", "0",
               "--warmup", "1"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rc == 0 and {(r["format"], r["status"]) for r in rows} >= {("wpk", "ok"), ("onnx", "ok")}

    from edgekit.core.artifact import Manifest
    from edgekit.serve.models import choose_artifact

    chosen = choose_artifact(Manifest.read(out), "cpu", None, None)  # its serve rank (1) is the best on a CPU
    assert chosen.path == "mnist_cnn.dynamic.wpk"

    base = tmp_path / "baseline.json"
    assert main(["check", str(out), "--baseline", str(base), "--update-baseline"]) == 0
    capsys.readouterr()
    assert main(["check", str(out), "--baseline", str(base), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "pass"
    assert {c["metric"] for c in report["checks"] if c["artifact"] == "wpk dynamic"} >= {"present", "fidelity"}

    assert main(["export", str(wpk), "--triton", str(tmp_path / "t")]) == 2
    assert "Triton serves" in capsys.readouterr().err

    broken = tmp_path / "broken.wpk"  # a pack whose weights are gone: the library's own error, named, no traceback
    import zipfile

    with zipfile.ZipFile(wpk) as src, zipfile.ZipFile(broken, "w") as dst:
        for name in ("pack.json", "graph.onnx"):
            dst.writestr(name, src.read(name))
    assert main(["profile", str(broken), "--runs", "1", "--min-seconds", "0", "--warmup", "0"]) != 0
    err = capsys.readouterr().err
    assert "weightpack could not load" in err and "not a readable weight pack" in err and "Traceback" not in err
