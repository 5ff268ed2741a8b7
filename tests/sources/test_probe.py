"""A loader that crashes on a file is contained in a child process; its errors come back as themselves."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_USAGE, UsageError
from edgekit.sources.base import LoadOptions
from edgekit.sources.probe import probe

MODELS = Path(__file__).resolve().parents[2] / "models"
pytestmark = pytest.mark.slow  # each test starts a child Python that imports torch (seconds)


def test_a_crashing_loader_does_not_take_the_caller_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # The model code segfaults while the network is built from the checkpoint: a real crash, in the child.
    monkeypatch.chdir(tmp_path)
    shutil.copy(MODELS / "mnist_cnn.state_dict.pt", tmp_path / "w.pt")
    (tmp_path / "crashy.py").write_text("import ctypes\n\ndef build():\n    ctypes.string_at(0)\n")
    rc = main(["convert", "w.pt", "--model", "crashy:build", "--input-shape", "1,1,28,28", "--out", "o"])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE
    assert "crashed the torch loader (SIGSEGV)" in err and "separate process" in err
    assert not (tmp_path / "o").exists()


def test_child_errors_are_reraised_as_their_own_class(tmp_path: Path) -> None:
    shutil.copy(MODELS / "mnist_cnn.state_dict.pt", tmp_path / "w.pt")
    with pytest.raises(UsageError, match="state_dict checkpoint") as exc:
        probe(tmp_path / "w.pt", "torch-zip", LoadOptions())
    assert "--model" in (exc.value.hint or "")


def test_a_good_file_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child really loads the good file and says so; only then is the success remembered.

    A cache of its own: with the session's cache, an earlier test's mark for this file made probe()
    return before any child ran, and the test passed without checking anything.
    """
    import edgekit.sources.probe as probe_mod

    monkeypatch.setenv("EDGEKIT_CACHE_DIR", str(tmp_path / "cache"))
    answers: list[str] = []
    real = probe_mod._probe_in_child

    def spy(path: Path, kind: str, opts: LoadOptions) -> None:
        real(path, kind, opts)  # raises unless the child answered {"ok": true}
        answers.append("ok")

    monkeypatch.setattr(probe_mod, "_probe_in_child", spy)
    probe(MODELS / "mnist_cnn.pt2", "torch-exported", LoadOptions())
    assert answers == ["ok"], "no child process loaded the file"
    marks = list((tmp_path / "cache" / "probed").iterdir())
    assert len(marks) == 1 and marks[0].read_text().strip() == str(MODELS / "mnist_cnn.pt2")


def test_a_success_is_remembered_per_file_and_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.sources.probe as probe_mod

    monkeypatch.setenv("EDGEKIT_CACHE_DIR", str(tmp_path / "cache"))
    calls: list[str] = []
    real = probe_mod._probe_in_child
    monkeypatch.setattr(probe_mod, "_probe_in_child", lambda p, k, o: (calls.append(str(o.input_shape)),
                                                                       real(p, k, o)))
    for _ in range(2):
        probe(MODELS / "mnist_cnn.pt2", "torch-exported", LoadOptions())
    probe(MODELS / "mnist_cnn.pt2", "torch-exported", LoadOptions(input_shape=[1, 1, 28, 28]))
    assert calls == ["None", "[1, 1, 28, 28]"]  # the second identical load was not probed again
