"""The threat model's promises about model files (SECURITY.md), kept with hostile files made here.

A pickle whose `__reduce__` runs a command is the classic hostile model: saved as a whole `.pt`
and hidden as a value of a state_dict. edgekit must refuse both and the command must never run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_USAGE

REPO = Path(__file__).resolve().parents[1]


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return (os.system, (f"touch {self.marker}",))


@pytest.mark.slow  # imports torch and probes each file in a child (seconds)
def test_pickle_payloads_are_refused_and_never_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    marker = tmp_path / "payload-ran"
    whole, in_state = tmp_path / "whole.pt", tmp_path / "state.pt"
    torch.save(_Payload(marker), whole)
    from models.mnist_cnn import build

    state = build().state_dict()
    state["conv1.weight"] = _Payload(marker)  # type: ignore[assignment]
    torch.save(state, in_state)
    for path, extra in ((whole, []), (in_state, ["--model", "models.mnist_cnn:build"])):
        rc = main(["convert", str(path), "--input-shape", "1,1,28,28", *extra, "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert rc == EXIT_USAGE, err
        assert "Traceback" not in err and "--trust-model" in err
        assert not marker.exists(), f"the payload in {path.name} ran"
    assert not (tmp_path / "o").exists()
