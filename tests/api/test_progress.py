"""Progress: plain lines where nobody watches (a CI log), a live bar in a terminal, nothing with quiet=True."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from edgekit.api import progress

MESSAGES = ["loading model.pt2 (torch-exported) ...", "calibration: 200 of npy:x.npy [calibration: 200 of 300]",
            "[1/3] torch_to_onnx ...", "[1/3] torch_to_onnx done in 1.3s", "[2/3] onnx_quantize ...",
            "[2/3] onnx_quantize done in 0.1s"]


def test_quiet_says_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    with progress.reporter(quiet=True) as say:
        for m in MESSAGES:
            say(m)
    assert capfd.readouterr() == ("", "")


def test_a_log_gets_the_clis_plain_lines(capsys: pytest.CaptureFixture[str]) -> None:
    with progress.reporter() as say:  # under pytest stderr is no terminal, as in CI
        for m in MESSAGES:
            say(m)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "> loading model.pt2 (torch-exported) ..."
    assert err[1].endswith("[calibration: 200 of 300]")  # brackets are text, not rich markup
    assert len(err) == len(MESSAGES)


def test_a_terminal_gets_a_live_bar_over_the_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.core.console as console

    buf = io.StringIO()
    term = Console(file=buf, force_terminal=True, width=120, color_system=None, force_jupyter=False)
    monkeypatch.setattr(console, "err", term)
    with progress.reporter(title="convert") as say:
        assert isinstance(say, progress._Live)
        bar = say.progress.tasks[0]
        say(MESSAGES[2])
        assert (bar.completed, bar.total) == (0, 3)  # step 1 started
        say(MESSAGES[3])
        assert bar.completed == 1
        say(MESSAGES[4])
        assert bar.completed == 1 and bar.description.startswith("[2/3] onnx_quantize")
        say("bench 4/7: onnx int8 on onnxruntime/cpu")  # bench's row counter moves the bar too
        assert (bar.completed, bar.total) == (3, 7)
    shown = buf.getvalue()
    assert "> [1/3] torch_to_onnx done in 1.3s" in shown  # every message stays on screen above the bar
    assert "convert" in shown and "1/3" in shown


def test_a_notebook_without_ipywidgets_gets_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.core._deps as deps

    jupyter = Console(file=io.StringIO(), force_jupyter=True)
    monkeypatch.setattr(deps, "available", lambda module: module != "ipywidgets")
    assert not progress._live_capable(jupyter)
    monkeypatch.setattr(deps, "available", lambda module: True)
    assert progress._live_capable(jupyter)
