"""serve falls to the next candidate when one crashes in its probe (a runtime wheel built with an instruction
the board's CPU lacks dies of SIGILL), and says why; none that runs is a clean RuntimeFailure.

The crashes are real: the test runtimes below are onnxruntime, enrolled in RUNTIMES by their "module:Class"
string as a plugin is, that kill the probe's child process (os.abort(), or SIGILL after the report line the
child's SIGILL reporter writes on aarch64) when they run a file whose name starts with "crash". The parent
process never runs them that way: it only loads what the probe passed.
"""

from __future__ import annotations

import os
import signal
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from edgekit.core.artifact import Artifact, Manifest, SourceInfo, TensorSpec
from edgekit.core.errors import RuntimeFailure
from edgekit.core.formats import FORMATS
from edgekit.core.sigill import report_line
from edgekit.runtimes import RUNTIMES
from edgekit.runtimes.onnxruntime import OnnxRuntime
from edgekit.serve.config import ServeConfig
from edgekit.serve.models import resolve_candidates
from edgekit.serve.served import first_that_runs
from edgekit.testing.onnx_graphs import tiny_onnx

LSE_LDADD = 0xF8200020  # ldadd x0, x0, [x1]: ARMv8.1 LSE, which a Pi 4's Cortex-A72 lacks


class CrashingRuntime(OnnxRuntime):
    """onnxruntime that aborts (SIGABRT) in the probe's child on a file named crash*."""

    name = "crashing"

    def load(self, path, **kw):  # type: ignore[no-untyped-def]
        self._crash = Path(path).name.startswith("crash") and bool(os.environ.get("EDGEKIT_ISOLATED"))
        return super().load(path, **kw)

    def run(self, inputs):  # type: ignore[no-untyped-def]
        if self._crash:
            os.abort()
        return super().run(inputs)


class SigillRuntime(CrashingRuntime):
    """Dies of SIGILL as a wheel with LSE atomics does on an A72, the reporter's line written first."""

    name = "sigill"

    def run(self, inputs):  # type: ignore[no-untyped-def]
        if self._crash:
            os.write(2, f"\n{report_line(0xFFFF8A001234, LSE_LDADD)}\n".encode())
            signal.signal(signal.SIGILL, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGILL)
        return super().run(inputs)




@pytest.fixture
def enrolled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EDGEKIT_NO_ISOLATION", raising=False)
    monkeypatch.setitem(RUNTIMES, "crashing", f"{__name__}:CrashingRuntime")
    monkeypatch.setitem(RUNTIMES, "sigill", f"{__name__}:SigillRuntime")


def _folder(tmp_path: Path) -> Path:
    """A conversion folder whose best artifact on a CPU (int8 ONNX) is crash.int8.onnx, then m.fp32.onnx."""
    spec = TensorSpec("x", [1, 1, 8, 8], "float32")
    arts = []
    for name, precision in (("crash.int8.onnx", "int8"), ("m.fp32.onnx", "fp32")):
        tiny_onnx(tmp_path / name)
        arts.append(Artifact(path=name, format="onnx", precision=precision, inputs=[spec], outputs=[spec],
                             size_bytes=1, sha256=""))
    Manifest(source=SourceInfo(path="m.onnx"), artifacts=arts).write(tmp_path / "manifest.json")
    return tmp_path


def test_a_crashing_candidate_is_skipped_for_the_next_artifact(enrolled: None, tmp_path: Path) -> None:
    from edgekit.serve.metrics import Metrics
    from edgekit.serve.served import ServedModel

    folder = _folder(tmp_path)
    config = ServeConfig(paths=(folder,), device="cpu", runtime="crashing")
    cands = resolve_candidates(folder, "cpu", None, "crashing")
    assert [(c.path.name, c.runtime) for c in cands] == [("crash.int8.onnx", "crashing"), ("m.fp32.onnx", "crashing")]
    said: list[str] = []
    choice, probed = first_that_runs(cands, config, said.append)
    assert choice.path.name == "m.fp32.onnx" and probed is not None
    assert "crash.int8.onnx" in said[0] and "on crashing" in said[0] and "crashed (SIGABRT)" in said[0], said
    assert "serving m.fp32.onnx" in said[1]
    m = ServedModel(choice, config, Metrics(), None, probed)  # loads in this process what the probe passed
    try:
        m.load()
        out = m.pool.runtimes[0].run({"x": np.ones((1, 1, 8, 8), np.float32)})  # type: ignore[union-attr]
        assert next(iter(out.values())).shape == (1, 4, 8, 8)
    finally:
        m.close()


def test_load_models_serves_the_next_runtime_and_names_the_sigill(enrolled: None, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """One .onnx file, its format's runtime dies of SIGILL: served on the next runtime that loads ONNX, with the
    instruction and its extension in the line that says so."""
    from edgekit.serve.server import load_models

    monkeypatch.setitem(FORMATS, "onnx", replace(FORMATS["onnx"], runtime="sigill"))
    f = tiny_onnx(tmp_path / "crash.onnx")
    said: list[str] = []
    from edgekit.runtimes import get_runtime, runtimes_for_format

    # the next runtime that loads ONNX and runs here, in the table's order (onnxruntime, or OpenVINO where the
    # tables were enrolled into in another order by an earlier test)
    nxt = next(n for n in runtimes_for_format("onnx") if n not in ("sigill", "crashing")
               and get_runtime(n).available("cpu")[0])
    served, metrics = load_models(ServeConfig(paths=(f,), device="cpu"), said.append)
    try:
        assert [m.choice.runtime for m in served] == [nxt] and served[0].name == "crash"
        skipped = said[0]
        assert "crash.onnx" in skipped and "on sigill" in skipped and "crashed (SIGILL)" in skipped, said
        assert "an instruction this CPU does not have" in skipped and "LSE atomics (ARMv8.1-A)" in skipped
        assert any("serving crash.onnx" in s and f"on {nxt} instead" in s for s in said), said
    finally:
        for m in served:
            m.close()
        metrics.close()


def test_none_runs_a_runtime_failure_with_each_reason(enrolled: None, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """--runtime names one that crashes on every artifact: RuntimeFailure listing them; the CLI exits with its
    code and a message, no traceback, and nothing is left listening."""
    from edgekit.cli import main

    folder = tmp_path / "f"
    folder.mkdir()
    _folder(folder)
    (folder / "m.fp32.onnx").rename(folder / "crash.fp32.onnx")
    manifest = (folder / "manifest.json").read_text().replace("m.fp32.onnx", "crash.fp32.onnx")
    (folder / "manifest.json").write_text(manifest)
    cands = resolve_candidates(folder, "cpu", None, "crashing")
    with pytest.raises(RuntimeFailure) as info:
        first_that_runs(cands, ServeConfig(paths=(folder,), device="cpu", runtime="crashing"), lambda _s: None)
    message = info.value.message
    assert "No candidate for model m runs here" in message
    assert "crash.int8.onnx (onnx int8) on crashing: " in message and "crash.fp32.onnx (onnx fp32) on crashing: " \
        in message and message.count("crashed (SIGABRT)") == 2
    rc = main(["serve", str(folder), "--device", "cpu", "--runtime", "crashing", "--port", "0"])
    err = capsys.readouterr().err
    assert rc == RuntimeFailure.exit_code and "No candidate for model m runs here" in err and "Traceback" not in err
    # one artifact file, one candidate: its own crash, as a clean error, not a dead server
    rc = main(["serve", str(folder / "crash.fp32.onnx"), "--device", "cpu", "--runtime", "crashing", "--port", "0"])
    err = capsys.readouterr().err
    assert rc == RuntimeFailure.exit_code and "onnxruntime crashed (SIGABRT) while loading and running " \
        "crash.fp32.onnx" in err and "Traceback" not in err and "No candidate" not in err


def test_no_isolation_probes_nothing(enrolled: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """EDGEKIT_NO_ISOLATION=1: no child, the first candidate as before (here it would crash only in a child)."""
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")
    folder = _folder(tmp_path)
    cands = resolve_candidates(folder, "cpu", None, "crashing")
    said: list[str] = []
    choice, probed = first_that_runs(cands, ServeConfig(paths=(folder,), device="cpu"), said.append)
    assert (choice.path.name, probed, said) == ("crash.int8.onnx", None, [])


def test_candidates_go_on_with_the_other_runtimes_of_the_format(tmp_path: Path) -> None:
    """Without --runtime, after the artifacts on their formats' runtimes, the same files on each other runtime that
    loads the format (ONNX on OpenVINO); with --runtime, that runtime only."""
    from edgekit.runtimes import runtimes_for_format

    folder = _folder(tmp_path)
    cands = [(c.path.name, c.runtime) for c in resolve_candidates(folder, "cpu", None, None)]
    others = [n for n in runtimes_for_format("onnx") if n != "onnxruntime"]
    assert cands == [("crash.int8.onnx", "onnxruntime"), ("m.fp32.onnx", "onnxruntime"),
                     *[(f, n) for f in ("crash.int8.onnx", "m.fp32.onnx") for n in others]]
    assert [c.runtime for c in resolve_candidates(folder, "cpu", None, "onnxruntime")] == ["onnxruntime"] * 2
