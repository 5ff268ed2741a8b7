"""profile without --runtime falls to the next runtime that loads the format when the first crashes in the isolated
first run (a wheel built with an instruction this CPU lacks), with a note; with --runtime it fails as before.

The crash is real: AbortingRuntime is onnxruntime, enrolled in RUNTIMES by its "module:Class" string and made
the ONNX format's default, that aborts the first-run child (never this process) when it runs a model.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from edgekit.core.errors import RuntimeFailure
from edgekit.core.formats import FORMATS
from edgekit.measure.profile import profile_artifact
from edgekit.measure.settings import MeasureSettings
from edgekit.runtimes import RUNTIMES
from edgekit.runtimes.onnxruntime import OnnxRuntime
from edgekit.testing.onnx_graphs import tiny_onnx

QUICK = MeasureSettings(runs=3, min_seconds=0.0, warmup=1)


class AbortingRuntime(OnnxRuntime):
    """onnxruntime that dies of SIGABRT when it runs a model in edgekit's child process."""

    name = "aborting"

    def run(self, inputs):  # type: ignore[no-untyped-def]
        if os.environ.get("EDGEKIT_ISOLATED"):
            os.abort()
        return super().run(inputs)




@pytest.fixture
def aborting_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EDGEKIT_NO_ISOLATION", raising=False)
    monkeypatch.setitem(RUNTIMES, "aborting", f"{__name__}:AbortingRuntime")
    monkeypatch.setitem(FORMATS, "onnx", replace(FORMATS["onnx"], runtime="aborting"))


def test_a_crash_falls_to_the_next_runtime_with_a_note(aborting_default: None, tmp_path: Path) -> None:
    from edgekit.runtimes import runtimes_for_format

    assert runtimes_for_format("onnx")[:2] == ["aborting", "onnxruntime"]
    result = profile_artifact(tiny_onnx(tmp_path / "m.onnx"), device="cpu", settings=QUICK)
    assert result.runtime.name == "onnxruntime" and result.runs >= 3
    [note] = [n for n in result.notes if "could not run it" in n]
    assert note.startswith("aborting could not run it on this CPU: onnxruntime crashed (SIGABRT) while loading and "
                           "running m.onnx") and note.endswith("; measured with onnxruntime")


class IsolatedAbortingRuntime(AbortingRuntime):
    """With several CPU kernel paths, as LiteRT: its first run is in a child whatever the caller asks."""

    name = "aborting-isolated"
    kernel_paths = ("default",)


def test_with_runtime_named_nothing_switches(aborting_default: None, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """--runtime: as before. No probe for a runtime without kernel paths (it runs here, in this process, where the
    test runtime does not abort), and a crash in the child of one with them fails the profile."""
    f = tiny_onnx(tmp_path / "m.onnx")
    result = profile_artifact(f, runtime="aborting", device="cpu", settings=QUICK)
    assert result.runtime.name == "aborting" and not [n for n in result.notes if "could not run" in n]
    monkeypatch.setitem(RUNTIMES, "aborting-isolated", f"{__name__}:IsolatedAbortingRuntime")
    with pytest.raises(RuntimeFailure, match=r"crashed \(SIGABRT\)"):
        profile_artifact(f, runtime="aborting-isolated", device="cpu", settings=QUICK)


def test_every_runtime_crashing_is_one_failure_naming_each(aborting_default: None, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The ONNX runtimes here reduced to two that abort: the failure lists both."""
    monkeypatch.setitem(RUNTIMES, "aborting-isolated", f"{__name__}:IsolatedAbortingRuntime")
    for name in [n for n in RUNTIMES if n not in ("aborting", "aborting-isolated")]:
        monkeypatch.delitem(RUNTIMES, name)
    for fmt in [f for f, spec in FORMATS.items() if spec.runtimes]:  # the formats' own runtimes out too
        monkeypatch.setitem(FORMATS, fmt, replace(FORMATS[fmt], runtimes={}))
    with pytest.raises(RuntimeFailure) as info:
        profile_artifact(tiny_onnx(tmp_path / "m.onnx"), device="cpu", settings=QUICK)
    message = info.value.message
    assert message.startswith("No runtime could run m.onnx on this CPU: aborting: ")
    assert "; aborting-isolated: " in message and message.count("crashed (SIGABRT)") == 2
