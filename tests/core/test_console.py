"""Where output goes while a step runs (edgekit.core.console.captured_output): the converters' chatter is held, and
the step's own progress lines (`shown`) reach the terminal as they come, not after the step."""

from __future__ import annotations

import os

import pytest

from edgekit.core.console import captured_output


def test_a_shown_line_reaches_the_terminal_during_the_capture_and_the_chatter_does_not(
        capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.delenv("EDGEKIT_DEBUG", raising=False)
    cap = captured_output()
    seen: list[str] = []

    def say(message: str) -> None:  # what a progress line does: write to stderr
        sys.stderr.write(message + "\n")
        seen.append(capfd.readouterr().err)  # on the terminal already, while the capture holds fd 1 and 2

    show = cap.shown(say)
    with cap:
        print("converter chatter")
        os.write(2, b"native chatter\n")
        show("int8 recipe plain: misses (3.1 s)")
        os.write(1, b"more chatter\n")
    show("after the step")
    assert seen == ["int8 recipe plain: misses (3.1 s)\n", "after the step\n"]
    assert "converter chatter" in cap.text and "native chatter" in cap.text and "more chatter" in cap.text
    assert "int8 recipe" not in cap.text and "chatter" not in capfd.readouterr().err
